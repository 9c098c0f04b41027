import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import type { Frame, GuestFrame, HostFrame } from "../../src/protocol/frames.js";
import type { Outcome } from "../../src/protocol/outcome.js";
import {
  frameSchema,
  guestFrameSchema,
  hostFrameSchema,
  outcomeSchema,
  parseFrameStrict,
  wireJsonSchemas,
  type FrameValue,
  type GuestFrameValue,
  type HostFrameValue,
  type OutcomeValue,
} from "../../src/protocol/schemas.js";

const schemaFolder = fileURLToPath(new URL("../../wire/schemas/", import.meta.url));
const regenerate = "run `npm run build && node scripts/generate-schemas.mjs` and commit wire/schemas/";

describe("wire/schemas/*.schema.json", () => {
  const documents = wireJsonSchemas();

  it("holds exactly the generated files", () => {
    const committed = readdirSync(schemaFolder)
      .filter((file) => file.endsWith(".schema.json"))
      .sort();
    expect(committed, `wire/schemas/ lists other files than src/schemas.ts generates; ${regenerate}`).toEqual(
      Object.keys(documents).sort(),
    );
  });

  for (const [file, document] of Object.entries(documents)) {
    it(`${file} matches what src/schemas.ts generates`, () => {
      const committed = readFileSync(`${schemaFolder}${file}`, "utf8");
      expect(committed, `wire/schemas/${file} drifted from src/schemas.ts; ${regenerate}`).toBe(`${JSON.stringify(document, null, 2)}\n`);
    });
  }

  it("describes what readers accept: defaulted fields are optional and extra fields are allowed", () => {
    const log = documents["log.schema.json"] as { required: string[]; additionalProperties?: unknown };
    expect(log.required).toEqual(["type", "content"]);
    expect(log.additionalProperties).toBeUndefined();
    const invoke = documents["invoke.schema.json"] as { required: string[]; properties: { protocol: unknown } };
    expect(invoke.required).toEqual(["type", "protocol", "allowed"]);
    // Unbounded like Number.isInteger: an absurd version is refused as unsupported, not as malformed.
    expect(invoke.properties.protocol).toEqual({ type: "integer", description: expect.any(String) });
  });
});

describe("the zod schemas", () => {
  it("apply protocol 1's defaults", () => {
    expect(frameSchema.parse({ type: "invoke", protocol: 1, allowed: [] })).toEqual({
      type: "invoke",
      protocol: 1,
      allowed: [],
      input: null,
    });
    expect(frameSchema.parse({ type: "request", id: 3, name: "read" })).toEqual({ type: "request", id: 3, name: "read", arguments: null });
    expect(frameSchema.parse({ type: "log", content: "hi" })).toEqual({ type: "log", level: "info", content: "hi" });
    expect(outcomeSchema.parse({ status: "failure", code: "NotFound" })).toEqual({ status: "failure", code: "NotFound", content: "" });
  });

  it("keep structured: null apart from an absent structured, and drop unknown fields", () => {
    const withNull = outcomeSchema.parse({ status: "success", structured: null, extra: 1 });
    expect(withNull).toStrictEqual({ status: "success", content: "", structured: null });
    const absent = outcomeSchema.parse({ status: "success", content: "x", code: "ignored on success" });
    expect(Object.hasOwn(absent, "structured")).toBe(false);
    expect(absent).toStrictEqual({ status: "success", content: "x" });
  });

  it("forward JSON values unchanged, including a __proto__ key that z.json() would drop", () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"a":[1,{"__proto__":2}]}') as unknown;
    const parsed = frameSchema.parse({ type: "request", id: 1, name: "read", arguments: input });
    expect(parsed.type === "request" && parsed.arguments).toBe(input);
    expect(JSON.stringify(parsed)).toContain('"__proto__":{"polluted":true}');
  });

  it("refuse values JSON cannot carry, naming where", () => {
    const result = frameSchema.safeParse({ type: "reply", id: 1, outcome: { status: "success", structured: { n: Number.NaN } } });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain("$.n is NaN");
  });

  it("take ids as positive safe integers and protocols as any integer", () => {
    for (const id of [0, -1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER + 2]) {
      expect(frameSchema.safeParse({ type: "reply", id, outcome: { status: "success" } }).success, `id ${id}`).toBe(false);
    }
    expect(frameSchema.safeParse({ type: "reply", id: Number.MAX_SAFE_INTEGER, outcome: { status: "success" } }).success).toBe(true);
    expect(frameSchema.safeParse({ type: "hello", protocol: 1e300 }).success).toBe(true);
    expect(frameSchema.safeParse({ type: "hello", protocol: 1.5 }).success).toBe(false);
  });

  it("split guest frames from host frames", () => {
    expect(guestFrameSchema.safeParse({ type: "invoke", protocol: 1, allowed: [] }).success).toBe(false);
    expect(hostFrameSchema.safeParse({ type: "invoke", protocol: 1, allowed: [] }).success).toBe(true);
    expect(hostFrameSchema.safeParse({ type: "log", content: "x" }).success).toBe(false);
  });

  it("parseFrameStrict throws a ZodError that lists every problem with its path", () => {
    let caught: unknown;
    try {
      parseFrameStrict({ type: "reply", id: 0, outcome: { status: "failure", content: 5 } });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(z.ZodError);
    const paths = (caught as z.ZodError).issues.map((issue) => issue.path.join("."));
    expect(paths).toEqual(expect.arrayContaining(["id", "outcome.code", "outcome.content"]));
    expect(parseFrameStrict({ type: "hello", protocol: 1, sdk: "x" })).toEqual({ type: "hello", protocol: 1, sdk: "x" });
  });

  it("infer types that match the core's frame types", () => {
    expectTypeOf<FrameValue>().toExtend<Frame>();
    expectTypeOf<Frame>().toExtend<FrameValue>();
    expectTypeOf<GuestFrameValue>().toExtend<GuestFrame>();
    expectTypeOf<HostFrameValue>().toExtend<HostFrame>();
    expectTypeOf<OutcomeValue>().toExtend<Outcome>();
    expectTypeOf(parseFrameStrict).returns.toEqualTypeOf<Frame>();
  });
});
