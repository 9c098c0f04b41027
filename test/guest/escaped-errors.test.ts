// escapedError: how an error that escaped the program is described in its GuestFailed result (mutation
// testing found this untested in process; test/guest/spawned.test.ts covers it end to end on dist/).
import { describe, expect, it } from "vitest";
import { escapedError } from "../../src/guest/escaped-errors.js";

describe("escapedError", () => {
  it("names the origin, keeps the error as the cause and its stack", () => {
    const thrown = new Error("in a timer");
    const uncaught = escapedError(thrown, "uncaughtException");
    expect(uncaught.message).toBe("an uncaught exception escaped the program: in a timer");
    expect(uncaught.cause).toBe(thrown);
    expect(uncaught.stack).toBe(thrown.stack);
    const rejected = escapedError(thrown, "unhandledRejection");
    expect(rejected.message).toBe("a promise rejection nobody handled escaped the program: in a timer");
  });

  it("keeps its own stack for a thrown value that is not an Error, even one with a stack property", () => {
    for (const thrown of ["text", { stack: "not a stack" }, null]) {
      const escaped = escapedError(thrown, "unhandledRejection");
      expect(escaped.stack).toMatch(/^Error: a promise rejection nobody handled escaped the program: /);
      expect(escaped.cause).toBe(thrown);
    }
  });

  it("keeps its own stack for an Error whose stack is empty", () => {
    const thrown = new Error("no stack");
    thrown.stack = "";
    expect(escapedError(thrown, "uncaughtException").stack).toMatch(/^Error: an uncaught exception escaped the program: no stack/);
  });
});
