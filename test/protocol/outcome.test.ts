import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { jsonValue, outcome } from "../../src/testing/arbitraries.js";

describe("Outcome", () => {
  it("fromJson(toJson(o)) equals o, by deep equality and by Outcome.equal", () => {
    fc.assert(
      fc.property(outcome(), (o) => {
        const json = Outcome.toJson(o);
        const back = Outcome.fromJson(json);
        expect(back).toEqual(o);
        expect(Outcome.equal(back, o)).toBe(true);
        // toJson is the plain wire object, and survives JSON text unchanged.
        expect(Outcome.fromJson(JSON.parse(JSON.stringify(json)))).toEqual(o);
      }),
      { numRuns: 300 },
    );
  });

  // The properties of equal (different => unequal, at any depth, in both orders) are in outcome.equal.test.ts.
  it("equal tells apart outcomes that differ in status, code, content or structured", () => {
    expect(Outcome.equal(Outcome.success("x"), Outcome.failure("E", "x"))).toBe(false);
    expect(Outcome.equal(Outcome.failure("A", "x"), Outcome.failure("B", "x"))).toBe(false);
    expect(Outcome.equal(Outcome.success("x", { a: 1, b: [2] }), Outcome.success("x", { b: [2], a: 1 }))).toBe(true);
    expect(Outcome.equal(Outcome.success("x", { a: 1 }), Outcome.success("x", { a: 1, b: null }))).toBe(false);
    expect(Outcome.equal(Outcome.success("", [1]), Outcome.success("", { 0: 1 }))).toBe(false);
  });

  it("keeps structured: null distinct from absent, in both directions", () => {
    const withNull = Outcome.success("ok", null);
    const absent = Outcome.success("ok");
    expect(Outcome.toJson(withNull)).toEqual({ status: "success", content: "ok", structured: null });
    expect(Outcome.toJson(absent)).toEqual({ status: "success", content: "ok" });
    expect("structured" in Outcome.toJson(absent)).toBe(false);
    expect(Outcome.equal(withNull, absent)).toBe(false);
    expect(Outcome.fromJson({ status: "success", structured: null })).toEqual({ status: "success", content: "", structured: null });
    expect("structured" in Outcome.fromJson({ status: "failure", code: "E" })).toBe(false);
  });

  it('fromJson is lenient: missing content is "", unknown fields are ignored', () => {
    expect(Outcome.fromJson({ status: "success" })).toEqual({ status: "success", content: "" });
    expect(Outcome.fromJson({ status: "failure", code: "NotFound", extra: 1 })).toEqual({
      status: "failure",
      code: "NotFound",
      content: "",
    });
  });

  it("fromJson throws a TypeError naming the problem for invalid outcomes", () => {
    expect(() => Outcome.fromJson(null)).toThrow(/an outcome must be an object/);
    expect(() => Outcome.fromJson([])).toThrow(TypeError);
    expect(() => Outcome.fromJson({ content: "x" })).toThrow(/status must be/);
    expect(() => Outcome.fromJson({ status: "ok" })).toThrow(/status must be/);
    expect(() => Outcome.fromJson({ status: "failure", content: "x" })).toThrow(/string code/);
    expect(() => Outcome.fromJson({ status: "success", content: 3 })).toThrow(/content must be a string/);
    expect(() => Outcome.fromJson({ status: "success", structured: 10n })).toThrow(/^invalid outcome: structured is a BigInt/);
  });

  it("toJson refuses a structured value JSON would alter rather than altering it", () => {
    expect(() => Outcome.toJson(Outcome.success("", [Number.NaN] as never))).toThrow(/^Outcome\.toJson: structured\[0\] is NaN/);
    expect(() => Outcome.toJson(Outcome.success("", Number.NaN as never))).toThrow(/^Outcome\.toJson: structured is NaN/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => Outcome.toJson(Outcome.failure("E", "", cycle as never))).toThrow(/cycle/);
  });

  it("helpers make frozen outcomes with defaults, and isError narrows on status", () => {
    const f = Outcome.failure(FailureCode.GuestFailed);
    expect(f).toEqual({ status: "failure", code: "GuestFailed", content: "" });
    expect(Object.isFrozen(f)).toBe(true);
    expect(Outcome.isError(f)).toBe(true);
    expect(Outcome.isError(Outcome.success())).toBe(false);
  });

  it("toJson copies nothing it does not need: structured is the same JSON value", () => {
    fc.assert(
      fc.property(jsonValue(), (value) => {
        expect(Outcome.toJson(Outcome.success("", value)).structured).toBe(value);
      }),
    );
  });
});
