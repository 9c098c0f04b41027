/**
 * An option runCode or runGuest does not take is refused, not ignored: `runTimeoutMs` beside `limits` instead of
 * in it used to be dropped without a word, and the run went on with no deadline.
 */
import { describe, expect, it } from "vitest";
import { createRunPool, runCode, runGuest } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

// Each call is typed as any: TypeScript refuses these literals already; JavaScript callers and spread objects are not checked.
const loose = (options: Record<string, unknown>) => options as never;

describe("options a run does not take", () => {
  it("runCode throws for a limit given beside limits, naming where it goes, before anything runs", () => {
    expect(() => runCode(loose({ code: "for (;;) {}", runTimeoutMs: 100 }))).toThrow(
      new TypeError('runCode: unknown option "runTimeoutMs"; runTimeoutMs is a limit: give it as limits.runTimeoutMs'),
    );
  });

  it("runCode throws for a misspelt option, also with a pool (the pooled path checks the same)", async () => {
    expect(() => runCode(loose({ code: "return 1;", sandox: false }))).toThrow(new TypeError('runCode: unknown option "sandox"'));
    const pool = createRunPool({ size: 1, sandbox: false });
    try {
      expect(() => runCode(loose({ code: "return 1;", pool, inputs: 3 }))).toThrow(new TypeError('runCode: unknown option "inputs"'));
      // Every option it documents is still taken.
      const report = await runCode({ code: "return input;", pool, input: 3, allowed: [], limits: { runTimeoutMs: 30_000 } });
      expect(report.outcome?.structured).toBe(3);
    } finally {
      await pool.close();
    }
  });

  it("runGuest throws for an option it does not take", () => {
    expect(() => runGuest(loose({ command: process.execPath, args: ["-e", ""], code: "return 1;" }))).toThrow(
      new TypeError('runGuest: unknown option "code"'),
    );
    expect(() => runGuest(loose({ command: process.execPath, memoryBytes: 1 }))).toThrow(
      new TypeError('runGuest: unknown option "memoryBytes"; memoryBytes is a limit: give it as limits.memoryBytes'),
    );
  });
});
