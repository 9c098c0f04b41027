// Building a RunReport: the one shape of every run's report, whichever engine ends the run.
import type { Outcome } from "../../protocol/outcome.js";
import type { PausedRun } from "../approvals/approval.js";
import type { HostFailure, RunBroken, RunDetails, RunReport, RunReportFields } from "../api/types.js";

/**
 * What a run knows when it ends. A run that never started knows no logs or calls (they default to none);
 * every run has an `outcome`, a `failure` or both. An undefined field is left out of the report.
 */
export interface RunFacts extends Partial<RunDetails> {
  outcome?: Outcome | undefined;
  failure?: HostFailure | undefined;
  paused?: PausedRun | undefined;
  durationMs: number;
}

/**
 * The report of a run. `ok` is computed, so the fields always form one member of the {@link RunReport}
 * union: a success outcome and no failure is a RunSucceeded, any failure a RunBroken, else a
 * RunFailedOutcome. Keys come in one order, verdict first, then the session's details, then the child
 * process's (JSON output and transcripts show them in this order).
 */
export function runReport(facts: RunFacts & { failure: HostFailure }): RunBroken;
export function runReport(facts: RunFacts): RunReport;
export function runReport(facts: RunFacts): RunReport {
  const { outcome, failure } = facts;
  const report = { ok: failure === undefined && outcome?.status === "success" } as RunReportFields;
  if (outcome !== undefined) report.outcome = outcome;
  if (failure !== undefined) report.failure = failure;
  if (facts.hello !== undefined) report.hello = facts.hello;
  report.logs = facts.logs ?? [];
  report.droppedLogs = facts.droppedLogs ?? 0;
  if (facts.droppedLogBytes !== undefined) report.droppedLogBytes = facts.droppedLogBytes;
  report.calls = facts.calls ?? [];
  if (facts.droppedCalls !== undefined) report.droppedCalls = facts.droppedCalls;
  if (facts.droppedCallPayloads !== undefined) report.droppedCallPayloads = facts.droppedCallPayloads;
  if (facts.approvals !== undefined) report.approvals = facts.approvals;
  if (facts.paused !== undefined) report.paused = facts.paused;
  report.durationMs = facts.durationMs;
  if (facts.exit !== undefined) report.exit = facts.exit;
  if (facts.pid !== undefined) report.pid = facts.pid;
  if (facts.stderr !== undefined) report.stderr = facts.stderr;
  if (facts.droppedStderrBytes !== undefined) report.droppedStderrBytes = facts.droppedStderrBytes;
  if (facts.forcedStop !== undefined) report.forcedStop = facts.forcedStop;
  if (facts.sandbox !== undefined) report.sandbox = facts.sandbox;
  if (facts.sandboxFallback !== undefined) report.sandboxFallback = facts.sandboxFallback;
  if (facts.limits !== undefined) report.limits = facts.limits;
  if (facts.usage !== undefined) report.usage = facts.usage;
  if (facts.pooled !== undefined) report.pooled = facts.pooled;
  return report as RunReport;
}

/**
 * The report of a run whose guest never started (aborted first, no sandbox, code that did not compile):
 * no logs, no calls, no sandbox. `sandboxFallback` says why a sandbox was not used, when one was asked for.
 */
export function notStartedReport(failure: HostFailure, durationMs: number, sandboxFallback?: string): RunBroken {
  return runReport({ failure, durationMs, sandbox: null, sandboxFallback });
}
