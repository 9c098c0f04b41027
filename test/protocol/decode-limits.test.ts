// Depth and range at decode (wire/PROTOCOL.md section 1): a frame nested deeper than MAX_FRAME_DEPTH or
// holding a number JSON.parse turns into ±Infinity is malformed. decodeFrame skips its walk when cheap
// text tests prove the frame cannot be wrong; the property below checks those pre-filters are exact.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrame, FrameError } from "../../src/protocol/frames.js";
import { jsonProblem, MAX_FRAME_DEPTH, MAX_VALUE_DEPTH } from "../../src/protocol/json.js";

/** Reference check, written independently of the decoder: the deepest nesting and any non-finite number. */
function fullWalk(value: unknown): { depth: number; nonFinite: boolean } {
  let depth = 0;
  let nonFinite = false;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, level] = stack.pop()!;
    if (typeof item === "number" && !Number.isFinite(item)) nonFinite = true;
    if (typeof item === "object" && item !== null) {
      depth = Math.max(depth, level + 1);
      for (const child of Object.values(item)) stack.push([child, level + 1]);
    }
  }
  return { depth, nonFinite };
}

const LIMIT_REASON = /nested more than 512 levels|beyond the range of a double/;

function decodeProblem(line: string): string | undefined {
  try {
    decodeFrame(line);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(FrameError);
    return (error as FrameError).reason;
  }
}

/** JSON number literals, from tiny to far beyond the double range: long digit runs, long exponents, zero padding. */
const numberLiteral = fc
  .record({
    minus: fc.boolean(),
    integer: fc.oneof(
      fc.constant("0"),
      fc
        .tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 420 }), fc.integer({ min: 0, max: 9 }))
        .map(([first, length, fill]) => `${first}${String(fill).repeat(length)}`),
    ),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,30}$/), { nil: undefined }),
    exponent: fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.stringMatching(/^[0-9]{1,4}$/)), {
      nil: undefined,
    }),
  })
  .map(
    ({ minus, integer, fraction, exponent }) =>
      `${minus ? "-" : ""}${integer}${fraction === undefined ? "" : `.${fraction}`}${exponent === undefined ? "" : exponent.join("")}`,
  );

/** A value as text: a chain of arrays/objects around the limit's depth, with a number (or a string that looks like one) inside. */
const valueText = fc
  .record({
    depth: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: MAX_FRAME_DEPTH - 6, max: MAX_FRAME_DEPTH + 2 })),
    kinds: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
    leaf: fc.oneof(
      numberLiteral,
      numberLiteral.map((n) => JSON.stringify(`id ${n}`)),
      fc.constantFrom("null", "true", '"[[[{{{"'),
    ),
    siblings: fc.array(numberLiteral, { maxLength: 3 }),
  })
  .map(({ depth, kinds, leaf, siblings }) => {
    let text = leaf;
    for (let level = 0; level < depth; level++) text = kinds[level % kinds.length] ? `[${[text, ...siblings].join(",")}]` : `{"d":${text}}`;
    return text;
  });

/** Whole frame lines carrying the value where a payload sits, in an ignored extra field, or both. */
const frameLine = fc
  .record({ value: valueText, pad: fc.integer({ min: 0, max: 1200 }), where: fc.constantFrom("structured", "arguments", "extra", "input") })
  .map(({ value, pad, where }) => {
    const content = JSON.stringify("x".repeat(pad));
    switch (where) {
      case "structured":
        return `{"type":"result","outcome":{"status":"success","content":${content},"structured":${value}}}`;
      case "arguments":
        return `{"type":"request","id":1,"name":${content},"arguments":${value}}`;
      case "input":
        return `{"type":"invoke","protocol":1,"allowed":[],"input":${value}}`;
      default:
        return `{"type":"log","content":${content},"extra":${value}}`;
    }
  });

describe("decodeFrame: depth and range", () => {
  it("refuses a frame exactly when a full walk finds it deeper than the limit or holding a non-finite number", () => {
    fc.assert(
      fc.property(frameLine, (line) => {
        const { depth, nonFinite } = fullWalk(JSON.parse(line));
        const problem = decodeProblem(line);
        const wrong = depth > MAX_FRAME_DEPTH || nonFinite;
        expect(problem !== undefined && LIMIT_REASON.test(problem)).toBe(wrong);
        if (!wrong) expect(problem).toBeUndefined();
      }),
      { numRuns: 1500, seed: 0x5eed_0008 },
    );
  });

  const deep = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}0${close.repeat(depth)}`;
  it.each([
    [
      "a reply 513 levels deep (arrays)",
      `{"type":"reply","id":1,"outcome":{"status":"success","structured":${deep(MAX_FRAME_DEPTH - 1)}}}`,
    ],
    ["a request 100,000 levels deep", `{"type":"request","id":1,"name":"x","arguments":${deep(100_000)}}`],
    ["a log with a deep ignored field", `{"type":"log","content":"","x":${'{"a":'.repeat(600)}1${"}".repeat(600)}}`],
    ["1e400", '{"type":"request","id":1,"name":"x","arguments":1e400}'],
    ["-1E+400", '{"type":"request","id":1,"name":"x","arguments":[-1E+400]}'],
    ["a 400-digit integer", `{"type":"result","outcome":{"status":"success","structured":{"n":${"9".repeat(400)}}}}`],
    ["1.8e308", '{"type":"invoke","protocol":1,"allowed":[],"input":1.8e308}'],
  ])("refuses %s as malformed, with a reason", (_name, line) => {
    expect(decodeProblem(line)).toMatch(LIMIT_REASON);
  });

  it.each([
    ["a frame exactly 512 levels deep", `{"type":"reply","id":1,"outcome":{"status":"success","structured":${deep(MAX_FRAME_DEPTH - 2)}}}`],
    ["1.7976931348623157e308 (the largest double)", '{"type":"request","id":1,"name":"x","arguments":1.7976931348623157e308}'],
    ["1e400 inside a string", '{"type":"log","content":"1e400 and [[[[ {{{{"}'],
    ["a number that underflows to 0 (1e-400; IEEE rounding, documented)", '{"type":"request","id":1,"name":"x","arguments":1e-400}'],
  ])("accepts %s", (_name, line) => {
    expect(decodeProblem(line)).toBeUndefined();
  });
});

describe("jsonProblem: depth", () => {
  const chain = (depth: number): unknown => {
    let value: unknown = 0;
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { d: value };
    return value;
  };

  it("refuses a 100,000-deep value with a reason instead of overflowing the stack", () => {
    expect(jsonProblem(chain(100_000))).toMatch(/levels\)….* is nested more than 510 levels deep/);
  });

  it("accepts values MAX_VALUE_DEPTH deep (they fit in any frame) and refuses one level more", () => {
    expect(MAX_VALUE_DEPTH).toBe(MAX_FRAME_DEPTH - 2);
    expect(jsonProblem(chain(MAX_VALUE_DEPTH))).toBeUndefined();
    expect(jsonProblem(chain(MAX_VALUE_DEPTH + 1))).toMatch(/nested more than 510 levels/);
    expect(jsonProblem(chain(5), { maxDepth: 4 })).toMatch(/^\$\[0\]\.d\[0\]\.d is nested more than 4 levels/);
    expect(jsonProblem(1, { maxDepth: 0 })).toBeUndefined();
    expect(jsonProblem([], { maxDepth: 0 })).toMatch(/^\$ is nested more than 0 levels/);
  });

  it("a value at the limit, sent as a result, makes a frame decodeFrame accepts", () => {
    const line = JSON.stringify({ type: "result", outcome: { status: "success", content: "", structured: chain(MAX_VALUE_DEPTH) } });
    expect(decodeProblem(line)).toBeUndefined();
  });

  it("stays silent on shared non-cyclic references at any breadth, and still finds a cycle deep down", () => {
    const shared = { a: [1, 2] };
    expect(jsonProblem(Array.from({ length: 10_000 }, () => shared))).toBeUndefined();
    const root: Record<string, unknown> = {};
    let at = root;
    for (let i = 0; i < 100; i++) at = (at.next = {}) as Record<string, unknown>;
    at.back = root;
    expect(jsonProblem(root)).toMatch(/^\$(\.next){12}…\(81 levels\)…(\.next){7}\.back refers back to one of its ancestors/);
  });
});

describe("the encoding side refuses what the decoding side would refuse", () => {
  const nested = (depth: number): unknown => {
    let value: unknown = "leaf";
    for (let i = 0; i < depth; i++) value = { d: value };
    return value;
  };

  it("a program's deep return value becomes GuestFailed naming the limit; one at the limit goes through", async () => {
    const { testGuest } = await import("../../src/testing/index.js");
    const tooDeep = await testGuest(async () => nested(MAX_VALUE_DEPTH + 1) as never);
    expect(tooDeep.outcome).toMatchObject({ status: "failure", code: "GuestFailed" });
    expect(tooDeep.outcome?.content).toMatch(/nested more than 510 levels/);
    const atLimit = await testGuest(async () => nested(MAX_VALUE_DEPTH) as never);
    expect(atLimit.ok).toBe(true);
  });

  it("deep call arguments are InvalidArguments, not sent; a handler's deep answer is a CapabilityFailed reply", async () => {
    const { testGuest } = await import("../../src/testing/index.js");
    let handlerRuns = 0;
    const report = await testGuest(
      async (ears) => {
        const sent = await ears.call("echo", nested(100_000) as never);
        const answered = await ears.call("deep", null);
        return {
          sent: sent.status === "failure" ? sent.code : "sent",
          answered: answered.status === "failure" ? answered.code : "ok",
          why: answered.content,
        };
      },
      {
        allowed: ["echo", "deep"],
        capabilities: {
          echo: () => void handlerRuns++,
          deep: () => nested(MAX_VALUE_DEPTH + 1),
        },
      },
    );
    expect(handlerRuns).toBe(0);
    expect(report.outcome?.structured).toMatchObject({ sent: "InvalidArguments", answered: "CapabilityFailed" });
    expect((report.outcome?.structured as { why: string }).why).toMatch(/nested more than 510 levels/);
  });
});
