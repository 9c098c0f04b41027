/**
 * modelResult and the report guards: every way a run ends becomes the text a model should see, and a body
 * that throws (a failure outcome, no `report.failure`) is the common case they exist for.
 */
import { describe, expect, it } from "vitest";
import { Outcome } from "../../src/index.js";
import { isFailureOutcome, isHostFailure, isPaused, modelResult, runCode } from "../../src/host/index.js";
import { runReport } from "../../src/host/report/report.js";
import type { RunReport } from "../../src/host/api/types.js";

const token = { format: "ears-approval-token", version: 1, payload: "{}", signature: "x" } as const;

describe("modelResult", () => {
  it("a body that throws is a failure outcome with no report.failure: kind failure, GuestFailed, code.ts:LINE:COLUMN", async () => {
    const report = await runCode({ code: 'const a = 1;\nthrow new Error("no such city");', sandbox: false });
    expect(report.ok).toBe(false);
    expect(report.failure).toBeUndefined();
    expect([isHostFailure(report), isPaused(report), isFailureOutcome(report)]).toEqual([false, false, true]);
    const result = modelResult(report);
    expect(result).toMatchObject({ kind: "failure", isError: true, code: "GuestFailed" });
    expect(result.text).toMatch(/^GuestFailed: no such city \(at code\.ts:2:7\)/);
  });

  it("a success is its content and its structured value as JSON, then the logs", () => {
    const report = runReport({
      outcome: Outcome.success("done", { sum: 3 }),
      logs: [{ level: "info", content: "adding", atMs: 0 }],
      durationMs: 1,
    });
    expect(modelResult(report)).toEqual({
      kind: "success",
      isError: false,
      structured: { sum: 3 },
      text: 'done\n{\n  "sum": 3\n}\n\nLogs:\n[info] adding',
      logs: ["[info] adding"],
    });
    expect(modelResult(runReport({ outcome: Outcome.success("", 3), durationMs: 1 })).text).toBe("3");
    expect(modelResult(runReport({ outcome: Outcome.success(), durationMs: 1 })).text).toBe("");
  });

  it("the host's failure counts over a failure outcome that came before it", () => {
    const report = runReport({
      outcome: Outcome.failure("NotFound", "gone"),
      failure: { code: "ProtocolViolation", message: "a frame after the result" },
      durationMs: 1,
    });
    expect([isHostFailure(report), isFailureOutcome(report)]).toEqual([true, false]);
    expect(modelResult(report)).toEqual({
      kind: "host-failure",
      isError: true,
      code: "ProtocolViolation",
      text: "ProtocolViolation: a frame after the result",
      logs: [],
    });
    const lost = modelResult(runReport({ failure: { code: "RunnerLost", message: "gone", mayHaveExecuted: true }, durationMs: 1 }));
    expect(lost).toMatchObject({ kind: "host-failure", mayHaveExecuted: true });
  });

  it("a failure outcome keeps its code and structured value; a pause says what waits, not an error", () => {
    const failed = modelResult(runReport({ outcome: Outcome.failure("Invalid", "bad input", { field: "a" }), durationMs: 1 }));
    expect(failed).toMatchObject({
      kind: "failure",
      code: "Invalid",
      structured: { field: "a" },
      text: 'Invalid: bad input\n{\n  "field": "a"\n}',
    });
    const paused = runReport({
      paused: { token, pending: [{ id: 2, name: "send", arguments: { to: "ada" } }] },
      durationMs: 1,
    }) as RunReport;
    expect(isPaused(paused)).toBe(true);
    const result = modelResult(paused);
    expect(result).toMatchObject({ kind: "paused", isError: false });
    expect(result.text).toBe(
      "The run paused: 1 call waits for a person's approval, and the body stopped there:\n" +
        '  #2 send {"to":"ada"}\n' +
        "The run goes on from there once they decide; the body does not need to change.",
    );
  });

  it("logs are bounded as a code tool bounds them", () => {
    const logs = Array.from({ length: 80 }, (_, i) => ({ level: "info", content: `line ${i}`, atMs: i }));
    const result = modelResult(runReport({ outcome: Outcome.success("ok"), logs, durationMs: 1 }));
    expect(result.logs).toHaveLength(51);
    expect(result.logs.at(-1)).toBe("(30 more log lines not shown)");
  });
});
