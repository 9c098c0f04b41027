/**
 * The guest validates frames with small hand-written checks (src/frames.ts) so it never loads zod; the
 * zod schemas (src/schemas.ts) are the schemas of record. These properties prove the two accept exactly
 * the same values and produce the same parsed frames, defaults applied, on near-valid input: valid frames
 * mutated by dropping fields, retyping them, adding fields and swapping whole values.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { validateFrame } from "../../src/protocol/frames.js";
import { Outcome } from "../../src/protocol/outcome.js";
import { frameSchema, guestFrameSchema, hostFrameSchema, outcomeSchema } from "../../src/protocol/schemas.js";
import { frame as validFrame, jsonValue, outcome as validOutcome } from "../../src/testing/arbitraries.js";

const NUM_RUNS = 3000;

const FIELD_NAMES = [
  "type",
  "protocol",
  "sdk",
  "traceparent",
  "allowed",
  "input",
  "id",
  "name",
  "arguments",
  "level",
  "content",
  "outcome",
  "status",
  "code",
  "structured",
  "extra",
  "__proto__",
  "constructor",
] as const;

/** Values JSON.parse can produce that sit on the edges of what the validators accept. -0 comes from the text "-0". */
const edgeValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, 1, 2, -1, 1.5, 0.1, 2 ** 53, 2 ** 53 - 1, -(2 ** 53 - 1), 1e21, 1e300, -1e300, 5e-324),
  fc.constantFrom("", "x", "1", "success", "failure", "hello", "invoke", "request", "log", "result", "reply", "info", "Hello", "reply "),
  fc.constantFrom([], ["read"], ["read", 1], [null], ["a", ["b"]], {}),
  fc.constantFrom(
    { status: "success" },
    { status: "failure" },
    { status: "failure", code: "X" },
    { status: "failure", code: 1 },
    { status: "success", content: 1 },
    { status: "success", content: null },
    { status: "success", structured: null },
    { status: "SUCCESS" },
    { code: "X" },
  ),
  jsonValue({ maxDepth: 2, maxChainDepth: 0 }),
);

/** A key is a field name, or (when `existing`) the n-th key the object already has, so edits hit real fields often. */
type Key = { name: string } | { existing: number };

type Edit =
  | { op: "drop"; key: Key }
  | { op: "set"; key: Key; value: unknown }
  | { op: "drop-in-outcome"; key: Key }
  | { op: "set-in-outcome"; key: Key; value: unknown };

const fieldName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 1, arbitrary: fc.string({ maxLength: 4 }) },
);
const fieldKey: fc.Arbitrary<Key> = fc.oneof(
  fieldName.map((name) => ({ name })),
  fc.nat().map((existing) => ({ existing })),
);

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ op: fc.constant("drop" as const), key: fieldKey }),
  fc.record({ op: fc.constant("set" as const), key: fieldKey, value: edgeValue }),
  fc.record({ op: fc.constant("drop-in-outcome" as const), key: fieldKey }),
  fc.record({ op: fc.constant("set-in-outcome" as const), key: fieldKey, value: edgeValue }),
);

/** A copy of `object` with `key` set as an own data property, as JSON.parse makes it (so `__proto__` is a plain key). */
function withKey(object: Record<string, unknown>, key: Key | string, value: unknown): Record<string, unknown> {
  const copy = { ...object };
  Object.defineProperty(copy, keyName(object, key), { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

function without(object: Record<string, unknown>, key: Key | string): Record<string, unknown> {
  const copy = { ...object };
  delete copy[keyName(object, key)];
  return copy;
}

function keyName(object: Record<string, unknown>, key: Key | string): string {
  if (typeof key === "string") return key;
  if ("name" in key) return key.name;
  const keys = Object.keys(object);
  return keys.length === 0 ? "type" : keys[key.existing % keys.length]!;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function apply(value: unknown, change: Edit): unknown {
  if (!isRecord(value)) return value;
  switch (change.op) {
    case "drop":
      return without(value, change.key);
    case "set":
      return withKey(value, change.key, change.value);
    case "drop-in-outcome":
      return isRecord(value.outcome) ? withKey(value, "outcome", without(value.outcome, change.key)) : value;
    case "set-in-outcome":
      return isRecord(value.outcome) ? withKey(value, "outcome", withKey(value.outcome, change.key, change.value)) : value;
  }
}

/** Valid frames (plain copies, so edits never touch the frozen outcomes), mutated or replaced now and then. */
const nearValidFrame: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .tuple(validFrame(), fc.array(edit, { maxLength: 3 }))
      .map(([frame, edits]) => edits.reduce(apply, structuredClone(frame) as unknown)),
  },
  { weight: 1, arbitrary: edgeValue },
  { weight: 1, arbitrary: fc.array(validFrame(), { minLength: 1, maxLength: 2 }) },
);

const GUEST_TYPES = new Set(["hello", "request", "log", "result"]);

function describeValue(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (Object.is(v, -0) ? "-0 (negative zero)" : v));
}

describe("validateFrame (src/frames.ts) and the zod frame schema", () => {
  it("accept exactly the same values and produce the same frames, defaults applied", () => {
    fc.assert(
      fc.property(nearValidFrame, (value) => {
        const hand = validateFrame(value);
        const zod = frameSchema.safeParse(value);
        const handAccepts = typeof hand !== "string";
        const handSays = handAccepts ? "yes" : hand;
        const zodSays = zod.success ? "yes" : zod.error.message;
        expect(handAccepts, `validateFrame says ${handSays}, zod says ${zodSays} for ${describeValue(value)}`).toBe(zod.success);
        if (handAccepts && zod.success) {
          // isDeepStrictEqual tells -0 from 0, absent from undefined-valued keys, and compares prototypes.
          expect(isDeepStrictEqual(hand, zod.data), `parsed differently: ${describeValue(hand)} vs ${describeValue(zod.data)}`).toBe(true);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("agree on which frames are guest frames and which are host frames", () => {
    fc.assert(
      fc.property(nearValidFrame, (value) => {
        const hand = validateFrame(value);
        const accepted = typeof hand !== "string";
        expect(guestFrameSchema.safeParse(value).success).toBe(accepted && GUEST_TYPES.has(hand.type));
        expect(hostFrameSchema.safeParse(value).success).toBe(accepted && !GUEST_TYPES.has(hand.type));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("keep mutations honest: the generator yields both accepted and rejected values of every type", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(nearValidFrame, (value) => {
        const hand = validateFrame(value);
        seen.add(typeof hand === "string" ? "rejected" : `accepted ${hand.type}`);
      }),
      { numRuns: NUM_RUNS },
    );
    expect([...seen].sort()).toEqual([
      "accepted hello",
      "accepted invoke",
      "accepted log",
      "accepted reply",
      "accepted request",
      "accepted result",
      "rejected",
    ]);
  });
});

describe("Outcome.fromJson (src/outcome.ts) and the zod outcome schema", () => {
  const nearValidOutcome: fc.Arbitrary<unknown> = fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .tuple(validOutcome(), fc.array(fc.tuple(fc.boolean(), fieldKey, edgeValue), { maxLength: 3 }))
        .map(([outcome, edits]) =>
          edits.reduce<Record<string, unknown>>(
            (value, [drop, key, replacement]) => (drop ? without(value, key) : withKey(value, key, replacement)),
            { ...outcome },
          ),
        ),
    },
    { weight: 1, arbitrary: edgeValue },
  );

  it("accept exactly the same values and produce the same outcomes", () => {
    fc.assert(
      fc.property(nearValidOutcome, (value) => {
        let hand: Outcome | string;
        try {
          hand = Outcome.fromJson(value);
        } catch (error) {
          hand = (error as Error).message;
        }
        const zod = outcomeSchema.safeParse(value);
        expect(
          typeof hand !== "string",
          `fromJson: ${typeof hand === "string" ? hand : "yes"}; zod: ${zod.success ? "yes" : zod.error.message}; ${describeValue(value)}`,
        ).toBe(zod.success);
        if (typeof hand !== "string" && zod.success) expect(isDeepStrictEqual({ ...hand }, zod.data)).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
