/** Shared by the host tests: running fixture guests, and checking that nothing was left behind. */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, vi } from "vitest";
import { runGuest } from "../../src/host/index.js";
import type { GuestCommand, RunReport } from "../../src/host/index.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

if (!existsSync(`${root}dist/index.js`)) {
  throw new Error("the fixture guests import @posoco/ears from dist/: run `npm run build:fast` before these tests");
}

/** The path of a fixture guest. */
export function fixture(name: string): string {
  return `${root}fixtures/guests/${name}`;
}

/** Runs a fixture guest with this Node, with a short kill grace so shutdown tests stay quick. */
export function runFixture(name: string, args: string[] = [], options: Omit<GuestCommand, "command"> = {}): Promise<RunReport> {
  return runGuest({ command: process.execPath, args: [fixture(name), ...args], cwd: root, killGraceMs: 500, ...options });
}

/** Asserts the child is gone: signalling it fails with ESRCH. */
export function expectGone(report: RunReport): void {
  expect(report.pid, "the report names the child's pid").toBeTypeOf("number");
  expect(() => process.kill(report.pid!, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
}

/** Collects unhandled rejections during each test of the calling file, and fails the test if any happened. */
export function failOnUnhandledRejections(): void {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  beforeEach(() => {
    seen.length = 0;
    process.on("unhandledRejection", listener);
  });
  afterEach(async () => {
    // Rejections are reported after a turn of the event loop; give them one before looking.
    await new Promise((resolve) => setImmediate(resolve));
    process.off("unhandledRejection", listener);
    expect(seen, "unhandled rejections").toEqual([]);
  });
}

/** Active timers of this process (Node's own view), to check a run leaves none behind. */
export function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
}

/**
 * Captures the process warnings a test triggers on purpose, instead of letting Node print them to the
 * test run's stderr (where they would look like a problem). Call `restore()` in a `finally`.
 */
export function captureWarnings(): { messages: string[]; restore: () => void } {
  const messages: string[] = [];
  const spy = vi.spyOn(process, "emitWarning").mockImplementation((warning: string | Error) => {
    messages.push(typeof warning === "string" ? warning : warning.message);
  });
  return { messages, restore: () => spy.mockRestore() };
}
