// A guest that crashes is reported with the stderr line that says what went wrong, not with the
// "Node.js v20…" line Node prints last. Real child processes.
import { describe, expect, it } from "vitest";
import { HostFailureCode, runGuest } from "../../src/host/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

async function crash(args: string[]) {
  const report = await runGuest({ command: process.execPath, args });
  expect(report.failure?.code).toBe(HostFailureCode.GuestCrashed);
  return report.failure!.message;
}

describe("a crash before hello names the meaningful stderr line", () => {
  it("an Error thrown while loading: its 'Error: …' line", async () => {
    const message = await crash(["-e", 'throw new Error("boom while loading")']);
    expect(message).toBe('the guest crashed (exit code 1) before it said hello; its stderr reports: "Error: boom while loading"');
  });

  it("an error with a code and properties: the header, not the properties or the stack", async () => {
    const message = await crash(["--input-type=module", "-e", 'import "no-such-package-for-ears"']);
    expect(message).toMatch(/its stderr reports: "Error \[ERR_MODULE_NOT_FOUND\]: Cannot find package 'no-such-package-for-ears'/);
    expect(message).not.toContain("Node.js v");
  });

  it("a thrown non-Error: the value's line, not Node's advice or version", async () => {
    const message = await crash(["-e", 'throw "plain words"']);
    expect(message).toBe('the guest crashed (exit code 1) before it said hello; its stderr ends with: "plain words"');
  });

  it("quotes the line without colour codes (Deno colours its errors); the raw tail stays in report.stderr", async () => {
    const coloured = '\u001b[0m\u001b[1m\u001b[31merror\u001b[0m: Module not found \u001b[4m"file:///guest.ts"\u001b[24m';
    const report = await runGuest({
      command: process.execPath,
      args: ["-e", `console.error(${JSON.stringify(coloured)}); process.exit(1)`],
    });
    expect(report.failure?.message).toBe(
      'the guest crashed (exit code 1) before it said hello; its stderr ends with: "error: Module not found \\"file:///guest.ts\\""',
    );
    expect(report.stderr).toBe(`${coloured}\n`);
  });
});
