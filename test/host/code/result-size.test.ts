/** limits.maxResultBytes (issue 29, item 1): a result over it fails the run with a message a model can act on. */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HostFailureCode, runCode, runGuest } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

describe("limits.maxResultBytes", () => {
  it("drops a result over it (counted in UTF-8 bytes) and says what happened and what to return instead", async () => {
    // 1000 "é" are 1000 characters but 2000 bytes: the limit is in bytes.
    const report = await runCode({ code: "return 'é'.repeat(1000);", limits: { maxResultBytes: 1500 } });
    expect(report.ok).toBe(false);
    expect(report.outcome).toBeUndefined();
    expect(report.failure).toEqual({
      code: HostFailureCode.ResultTooLarge,
      message: expect.stringMatching(
        /^the result was 2 KiB \(20\d\d bytes\), over the limit of 1.5 KiB \(limits\.maxResultBytes\), so it was dropped; the body ran to its end\. Return less: a summary/,
      ),
    });
  });

  it("keeps a result up to it, and a guest under runGuest is bounded the same way", async () => {
    const report = await runCode({ code: "return 'a'.repeat(1000);", limits: { maxResultBytes: 1100 } });
    expect(report.outcome).toEqual({ status: "success", content: "", structured: "a".repeat(1000) });
    const guest = await runGuest({
      command: process.execPath,
      args: [fileURLToPath(new URL("../../../fixtures/guests/return-input.mjs", import.meta.url))],
      input: "b".repeat(5000),
      sandbox: false,
      limits: { maxResultBytes: 4096 },
    });
    expect(guest.failure?.code).toBe("ResultTooLarge");
  });

  it("is a positive whole number of bytes", () => {
    expect(() => runCode({ code: "return 1;", limits: { maxResultBytes: 0 } })).toThrow(/maxResultBytes/);
    expect(() => runCode({ code: "return 1;", limits: { maxResultBytes: 1.5 } })).toThrow(/maxResultBytes/);
  });
});
