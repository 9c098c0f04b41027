// The one RunReport builder: which member of the union a run's facts make, and the report's key order.
import { describe, expect, expectTypeOf, it } from "vitest";
import { Outcome } from "../../src/index.js";
import { HostFailureCode, type RunReport } from "../../src/host/index.js";
import { notStartedReport, runReport } from "../../src/host/report/report.js";
import type { RunBroken } from "../../src/host/api/types.js";

const failure = { code: HostFailureCode.NoResult, message: "the guest's output ended before it sent a result" };

describe("runReport", () => {
  it("a success outcome and no failure: RunSucceeded", () => {
    const report = runReport({ outcome: Outcome.success("done"), durationMs: 5 });
    expect(report).toEqual({ ok: true, outcome: Outcome.success("done"), logs: [], droppedLogs: 0, calls: [], durationMs: 5 });
  });

  it("a failure outcome and no failure: RunFailedOutcome, without a failure key", () => {
    const report = runReport({ outcome: Outcome.failure("GuestFailed", "no"), durationMs: 1 });
    expect(report.ok).toBe(false);
    expect("failure" in report).toBe(false);
  });

  it("any failure: RunBroken, even after a success outcome, typed so", () => {
    const report = runReport({ outcome: Outcome.success("done"), failure, durationMs: 1 });
    expectTypeOf(report).toEqualTypeOf<RunBroken>();
    expect(report).toMatchObject({ ok: false, outcome: Outcome.success("done"), failure });
    expectTypeOf(runReport({ outcome: Outcome.success("done"), durationMs: 1 })).toEqualTypeOf<RunReport>();
  });

  it("leaves undefined facts out and keeps null ones (sandbox: null says unconfined)", () => {
    const report = runReport({ failure, durationMs: 2, hello: undefined, exit: undefined, sandbox: null, sandboxFallback: undefined });
    expect(Object.keys(report)).toEqual(["ok", "failure", "logs", "droppedLogs", "calls", "durationMs", "sandbox"]);
  });

  it("puts the keys in one order whatever order the facts come in: verdict, session, child process", () => {
    const report = runReport({
      sandboxFallback: "no sandbox here",
      sandbox: null,
      forcedStop: "SIGTERM",
      droppedStderrBytes: 0,
      stderr: "",
      pid: 7,
      exit: { code: 1, signal: null },
      durationMs: 3,
      droppedCallPayloads: 0,
      droppedCalls: 0,
      calls: [],
      droppedLogBytes: 0,
      droppedLogs: 0,
      logs: [],
      hello: { protocol: 1 },
      failure,
      outcome: Outcome.failure("GuestFailed", "no"),
    });
    expect(Object.keys(report)).toEqual([
      "ok",
      "outcome",
      "failure",
      "hello",
      "logs",
      "droppedLogs",
      "droppedLogBytes",
      "calls",
      "droppedCalls",
      "droppedCallPayloads",
      "durationMs",
      "exit",
      "pid",
      "stderr",
      "droppedStderrBytes",
      "forcedStop",
      "sandbox",
      "sandboxFallback",
    ]);
  });
});

describe("notStartedReport", () => {
  it("no logs, no calls, no sandbox; the fallback only when given", () => {
    expect(JSON.stringify(notStartedReport(failure, 4))).toBe(
      JSON.stringify({ ok: false, failure, logs: [], droppedLogs: 0, calls: [], durationMs: 4, sandbox: null }),
    );
    expect(notStartedReport(failure, 4, "no sandbox here").sandboxFallback).toBe("no sandbox here");
  });
});
