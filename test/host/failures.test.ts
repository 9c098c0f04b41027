// How runGuest turns "the output ended early" into the story the child's exit tells (the texts themselves
// are checked end to end in run-host.messages.test.ts, run-guest.test.ts and crash-line.test.ts).
import { describe, expect, it } from "vitest";
import { HostFailureCode } from "../../src/host/index.js";
import { endedEarly, outputEnded } from "../../src/host/report/failures.js";

describe("endedEarly", () => {
  const ended = outputEnded(true, undefined);

  it("a bad exit status or a signal is a crash, at the stage the guest reached", () => {
    expect(endedEarly(ended, { code: 3, signal: null }, "", true)).toEqual({
      code: HostFailureCode.GuestCrashed,
      message: "the guest crashed (exit code 3) before it sent a result; its stderr is empty",
    });
    expect(endedEarly(outputEnded(false, undefined), { code: null, signal: "SIGSEGV" }, "", false).message).toBe(
      "the guest crashed (signal SIGSEGV) before it said hello; its stderr is empty",
    );
  });

  it("a clean exit keeps the failure and adds the exit and the stderr line that matters", () => {
    const stderr = "Error: boom\n    at main (guest.mjs:1:1)\nNode.js v20.0.0\n";
    expect(endedEarly(ended, { code: 0, signal: null }, stderr, true)).toEqual({
      code: HostFailureCode.NoResult,
      message: `${ended.message}; the guest exited with exit code 0; its stderr reports: "Error: boom"`,
    });
  });
});
