// Outcome.equal against an independent oracle: outcomes that differ anywhere (status, code, content,
// structured at any depth) compare unequal in both orders, and structurally equal ones compare equal.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/protocol/json.js";
import { Outcome } from "../../src/protocol/outcome.js";
import { failureCode, jsonValue, outcome, text } from "../../src/testing/arbitraries.js";

const SEED = 13_013;

/** The oracle: JSON text with object keys sorted, so key order does not matter and -0 reads as 0. */
function canonical(value: Json | undefined): string {
  if (value === undefined) return "absent";
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
}

function sameByOracle(a: Outcome, b: Outcome): boolean {
  return (
    a.status === b.status &&
    a.content === b.content &&
    (a.status === "success" || a.code === (b as typeof a).code) &&
    canonical(a.structured) === canonical(b.structured)
  );
}

/** A deep copy with every object's keys in reverse order: equal by content, sharing nothing. */
function reorderedCopy(value: Json): Json {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(reorderedCopy);
  // Object.fromEntries makes own data properties, so a "__proto__" key stays a plain key.
  return Object.fromEntries(
    Object.keys(value)
      .reverse()
      .map((key) => [key, reorderedCopy(value[key]!)]),
  );
}

type Path = (string | number)[];

/** Every node's path in `value`, the root (`[]`) first. */
function paths(value: Json, at: Path = []): Path[] {
  const found: Path[] = [at];
  if (typeof value === "object" && value !== null) {
    if (Array.isArray(value)) value.forEach((item, i) => found.push(...paths(item, [...at, i])));
    else for (const key of Object.keys(value)) found.push(...paths(value[key]!, [...at, key]));
  }
  return found;
}

/** `value` with the node at `path` replaced by `make(node)`; everything else is copied. */
function replaceAt(value: Json, path: Path, make: (node: Json) => Json): Json {
  if (path.length === 0) return make(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaceAt(item, rest, make) : reorderedCopy(item)));
  const object = value as { [key: string]: Json };
  return Object.fromEntries(
    Object.keys(object).map((key) => [key, key === head ? replaceAt(object[key]!, rest, make) : reorderedCopy(object[key]!)]),
  );
}

/** The ways one node can change. Each returns a node that differs from the one given. */
type Change = (node: Json, extra: Json, key: string) => Json;
const changes: Record<string, Change> = {
  // scalars and containers alike
  "to null (or from null to an object)": (node) => (node === null ? {} : null),
  "object vs array": (node) =>
    Array.isArray(node)
      ? Object.fromEntries(node.map((item, i) => [String(i), item]))
      : typeof node === "object" && node !== null
        ? Object.values(node)
        : [node],
  "scalar vs container of it": (node) => (typeof node === "object" && node !== null ? "x" : [node]),
  "another scalar": (node) =>
    node === 0
      ? 1
      : node === ""
        ? 0
        : node === true
          ? false
          : node === false
            ? true
            : typeof node === "number"
              ? -node || String(node)
              : "",
  // containers
  "one more item or key": (node, extra, key) =>
    Array.isArray(node)
      ? [...node, extra]
      : typeof node === "object" && node !== null
        ? Object.fromEntries([...Object.entries(node), [Object.hasOwn(node, key) ? `${key}'` : key, extra]])
        : [node, extra],
  "one item or key fewer": (node) =>
    Array.isArray(node)
      ? node.length > 0
        ? node.slice(0, -1)
        : [null]
      : typeof node === "object" && node !== null
        ? withoutFirstKey(node)
        : { k: node },
  "a key renamed": (node, _extra, key) => {
    if (typeof node !== "object" || node === null || Array.isArray(node)) return { [key]: node };
    const keys = Object.keys(node);
    if (keys.length === 0) return { [key]: null };
    let renamed = `${keys[0]}~`;
    while (Object.hasOwn(node, renamed)) renamed += "~";
    return Object.fromEntries([...keys.slice(1).map((k) => [k, node[k]!] as const), [renamed, node[keys[0]!]!]]);
  },
};

function withoutFirstKey(node: { [key: string]: Json }): Json {
  const keys = Object.keys(node);
  if (keys.length === 0) return { k: null };
  return Object.fromEntries(keys.slice(1).map((key) => [key, node[key]!]));
}

/** A structured value and another that differs from it in exactly one node, at any depth. */
const structuredPair = jsonValue().chain((value) => {
  const all = paths(value);
  return fc
    .record({
      path: fc.constantFrom(...all),
      change: fc.constantFrom(...Object.keys(changes)),
      extra: jsonValue({ maxDepth: 2 }),
      key: fc.constantFrom("a", "b", "0", "k", "__proto__", ""),
    })
    .map(({ path, change, extra, key }) => ({
      change,
      before: value,
      after: replaceAt(value, path, (node) => changes[change]!(node, extra, key)),
    }));
});

/** Rebuilds `o` with some fields replaced: a fresh outcome, so identity never decides the answer. */
function rebuild(
  o: Outcome,
  fields: { status?: "success" | "failure"; code?: string; content?: string; structured?: Json | "absent" },
): Outcome {
  const status = fields.status ?? o.status;
  const content = fields.content ?? o.content;
  const structured =
    fields.structured === "absent"
      ? undefined
      : fields.structured !== undefined
        ? fields.structured
        : o.structured === undefined
          ? undefined
          : reorderedCopy(o.structured);
  const code = fields.code ?? (o.status === "failure" ? o.code : "E");
  return status === "success" ? Outcome.success(content, structured) : Outcome.failure(code, content, structured);
}

/** A pair of outcomes that differ in one respect, named. */
const differentPair: fc.Arbitrary<{ how: string; a: Outcome; b: Outcome }> = fc.oneof(
  fc
    .tuple(outcome(), text({ maxLength: 8 }))
    .map(([o, more]) => ({ how: "content", a: o, b: rebuild(o, { content: `${o.content}${more}.` }) })),
  fc.tuple(outcome(), failureCode()).map(([o, code]) => ({
    how: "status",
    a: o,
    b: o.status === "success" ? rebuild(o, { status: "failure", code }) : rebuild(o, { status: "success" }),
  })),
  fc.tuple(outcome(), failureCode()).map(([o, code]) => {
    const failure = o.status === "failure" ? o : rebuild(o, { status: "failure", code });
    return { how: "code", a: failure, b: rebuild(failure, { code: `${failure.status === "failure" ? failure.code : ""}!` }) };
  }),
  fc.tuple(outcome(), jsonValue()).map(([o, value]) => ({
    how: "structured absent vs present",
    a: rebuild(o, { structured: "absent" }),
    b: rebuild(o, { structured: value }),
  })),
  fc.tuple(outcome(), structuredPair).map(([o, pair]) => ({
    how: `structured: ${pair.change}`,
    a: rebuild(o, { structured: pair.before }),
    b: rebuild(o, { structured: pair.after }),
  })),
);

describe("Outcome.equal", () => {
  it("outcomes that differ in status, code, content or structured (at any depth) are unequal, in both orders", () => {
    fc.assert(
      fc.property(differentPair, ({ a, b }) => {
        expect(sameByOracle(a, b)).toBe(false); // the generator really made them different
        expect(Outcome.equal(a, b)).toBe(false);
        expect(Outcome.equal(b, a)).toBe(false);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("an outcome equals a rebuilt copy of itself with keys in another order", () => {
    fc.assert(
      fc.property(outcome(), (o) => {
        const copy = rebuild(o, {});
        expect(Outcome.equal(o, copy)).toBe(true);
        expect(Outcome.equal(copy, o)).toBe(true);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it("agrees with the oracle on any two outcomes", () => {
    fc.assert(
      fc.property(outcome(), outcome(), (a, b) => {
        expect(Outcome.equal(a, b)).toBe(sameByOracle(a, b));
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it.each<[string, Json | undefined, Json | undefined]>([
    ["{a:1} vs {a:2}", { a: 1 }, { a: 2 }],
    ["[1] vs [1,2]", [1], [1, 2]],
    ["[] vs {}", [], {}],
    ["[1] vs {0:1}", [1], { 0: 1 }],
    ["null vs {}", null, {}],
    ["null vs []", null, []],
    ["null vs absent", null, undefined],
    ["{a:1} vs {a:1,b:null}", { a: 1 }, { a: 1, b: null }],
    ["{a:1} vs {b:1}", { a: 1 }, { b: 1 }],
    ["deep: {x:[{y:[1]}]} vs {x:[{y:[2]}]}", { x: [{ y: [1] }] }, { x: [{ y: [2] }] }],
    ['1 vs "1"', 1, "1"],
    ["0 vs false", 0, false],
    ['"" vs null', "", null],
  ])("structured %s is unequal, in both orders", (_name, x, y) => {
    expect(Outcome.equal(Outcome.success("c", x), Outcome.success("c", y))).toBe(false);
    expect(Outcome.equal(Outcome.success("c", y), Outcome.success("c", x))).toBe(false);
  });

  it("success and failure with the same content and structured are unequal, in both orders", () => {
    const success = Outcome.success("same", { a: 1 });
    const failure = Outcome.failure("E", "same", { a: 1 });
    expect(Outcome.equal(success, failure)).toBe(false);
    expect(Outcome.equal(failure, success)).toBe(false);
  });

  it("0 and -0 are equal (JSON sends both as 0), and key order does not matter", () => {
    expect(Outcome.equal(Outcome.success("", { n: 0, m: [1] }), Outcome.success("", { m: [1], n: -0 }))).toBe(true);
  });
});
