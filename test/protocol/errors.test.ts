// The error classes and describeError: what a program catches and reads (mutation testing found these
// untested in process: CONTRIBUTING.md, "Mutation testing").
import { describe, expect, it } from "vitest";
import { describeError, TimeoutError, TransportError } from "../../src/protocol/errors.js";

describe("TransportError and TimeoutError", () => {
  it("a TransportError without a cause has no cause property at all; with one, keeps it", () => {
    const bare = new TransportError("gone", { kind: "closed" });
    expect("cause" in bare).toBe(false);
    expect(bare).toMatchObject({ name: "TransportError", kind: "closed", mayHaveExecuted: false, message: "gone" });
    const root = new Error("EPIPE");
    expect(new TransportError("gone", { kind: "write-failed", mayHaveExecuted: true, cause: root })).toMatchObject({
      cause: root,
      mayHaveExecuted: true,
    });
  });

  it("a TimeoutError is named so", () => {
    expect(new TimeoutError("late").name).toBe("TimeoutError");
    expect(String(new TimeoutError("late"))).toBe("TimeoutError: late");
  });
});

describe("describeError", () => {
  it.each<[string, unknown, string]>([
    ["an Error: its message", new Error("boom"), "boom"],
    ["an Error without a message: its name", new RangeError(), "RangeError"],
    ["a string: itself", "plain", "plain"],
    ["a JSON value: its JSON", { code: 7 }, '{"code":7}'],
    ["undefined (JSON.stringify gives undefined): String()", undefined, "undefined"],
    ["a function (JSON.stringify gives undefined): String()", Object.assign(() => 1, { toString: () => "fn" }), "fn"],
    ["a BigInt (JSON.stringify throws): String()", 12n, "12"],
  ])("%s", (_what, error, text) => {
    expect(describeError(error)).toBe(text);
  });
});
