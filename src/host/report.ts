// Building a RunReport: the one shape of every run's report, whichever engine ends the run.
import type { HostFailure, RunReport } from "./types.js";

/**
 * The report of a run whose guest never started (aborted first, no sandbox, code that did not compile):
 * no logs, no calls, no sandbox. `sandboxFallback` says why a sandbox was not used, when one was asked for.
 */
export function notStartedReport(failure: HostFailure, durationMs: number, sandboxFallback?: string): RunReport {
  return {
    ok: false,
    failure,
    logs: [],
    droppedLogs: 0,
    calls: [],
    durationMs,
    sandbox: null,
    ...(sandboxFallback === undefined ? {} : { sandboxFallback }),
  };
}
