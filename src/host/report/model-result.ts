/**
 * A report as a model should see it, and the narrowing of a report's ways to end. A run ends one of four
 * ways: its result is a success (`report.ok`); its result is a failure (the body returned one, or threw:
 * `report.outcome` is a failure and there is no `report.failure`); the host ended it (a deadline, a limit,
 * a crash, a broken protocol: `report.failure`); or it paused for approval (`report.paused`). Reading
 * `report.failure.code` when the body threw is the mistake this file exists to make unnecessary.
 */
import type { Json } from "../../protocol/json.js";
import { excerpt } from "../../protocol/text.js";
import { boundedToolLogs } from "./tool-logs.js";
import type { PausedRun } from "../approvals/approval.js";
import type { HostFailureCode } from "./codes.js";
import type { RunBroken, RunFailedOutcome, RunPaused, RunReport } from "../api/types.js";

/** What every {@link ModelResult} has. */
interface ModelResultBase {
  /**
   * What to send the model as the tool's answer: the result's content and its structured value as JSON,
   * or `CODE: message` for a failure, or what waits for approval; then the run's logs, bounded (50 lines,
   * 10,000 characters).
   */
  text: string;
  /** True for a failure of either kind: what an MCP tool result calls `isError`. */
  isError: boolean;
  /** The run's log lines as `[level] content`, bounded as in `text`. */
  logs: string[];
}

/**
 * What a model should see of a run, a union on `kind`:
 * - `"success"`: the body's result; `structured` is what it returned.
 * - `"failure"`: the body returned a failure or threw (`code` is `GuestFailed` for a throw, whose message
 *   names `code.ts:LINE:COLUMN`); the model can fix the body and try again.
 * - `"host-failure"`: the host ended the run (`RunTimeout`, `MemoryLimit`, `CompileError`, ...); `code` is
 *   the report's `failure.code`.
 * - `"paused"`: calls wait for a person's approval (runCode with `approval.tokenKey`); not an error, and
 *   not over: `paused` holds the token to resume with (`resumeCode`).
 */
export type ModelResult =
  | (ModelResultBase & { kind: "success"; isError: false; structured?: Json })
  | (ModelResultBase & { kind: "failure"; isError: true; code: string; structured?: Json })
  | (ModelResultBase & { kind: "host-failure"; isError: true; code: HostFailureCode; mayHaveExecuted?: boolean })
  | (ModelResultBase & { kind: "paused"; isError: false; paused: PausedRun });

/** Structured values up to this size are pretty-printed in `text`; larger ones compact. */
const PRETTY_CHARS = 64 * 1024;

/**
 * Turns any {@link RunReport} into what the model should see next: one `text` to send back (and the parts
 * it is made of), whichever way the run ended. Never throws.
 *
 * @example
 * const result = modelResult(await runCode({ code, capabilities }));
 * messages.push({ role: "tool", content: result.text }); // "3", or "GuestFailed: ... code.ts:2:7", or "RunTimeout: ..."
 */
export function modelResult(report: RunReport): ModelResult {
  const logs = boundedToolLogs(report.logs.map((entry) => `[${entry.level}] ${entry.content}`));
  const withLogs = (text: string) => (logs.length === 0 ? text : `${text}${text === "" ? "" : "\n\n"}Logs:\n${logs.join("\n")}`);
  if (isHostFailure(report)) {
    const { code, message, mayHaveExecuted } = report.failure;
    return {
      kind: "host-failure",
      isError: true,
      code,
      text: withLogs(`${code}: ${message}`),
      logs,
      ...(mayHaveExecuted === undefined ? {} : { mayHaveExecuted }),
    };
  }
  if (isPaused(report)) return { kind: "paused", isError: false, paused: report.paused, text: withLogs(pausedText(report.paused)), logs };
  const outcome = report.outcome;
  const structured = outcome.structured === undefined ? "" : `${outcome.content === "" ? "" : "\n"}${jsonText(outcome.structured)}`;
  const shown = outcome.structured === undefined ? {} : { structured: outcome.structured };
  if (outcome.status === "failure") {
    return {
      kind: "failure",
      isError: true,
      code: outcome.code,
      text: withLogs(`${outcome.code}: ${outcome.content}${structured}`),
      logs,
      ...shown,
    };
  }
  return { kind: "success", isError: false, text: withLogs(`${outcome.content}${structured}`), logs, ...shown };
}

/**
 * True when the host ended the run (`report.failure` is set: a deadline, a limit, a crash, a broken
 * protocol, code that did not compile). A report can hold a failure outcome too, when the guest broke the
 * protocol after its result: the host's failure is the one that counts.
 */
export function isHostFailure(report: RunReport): report is RunBroken {
  return report.failure !== undefined;
}

/** True when the run paused for approval: `report.paused.token` resumes it (`resumeCode`). */
export function isPaused(report: RunReport): report is RunPaused {
  return report.paused !== undefined;
}

/**
 * True when the guest's result is a failure and nothing else went wrong: the body returned a failure
 * outcome or threw (`GuestFailed`). `report.outcome` is then the failure; there is no `report.failure`.
 */
export function isFailureOutcome(report: RunReport): report is RunFailedOutcome & { failure?: undefined } {
  return report.failure === undefined && report.paused === undefined && report.outcome?.status === "failure";
}

function pausedText(paused: PausedRun): string {
  const count = paused.pending.length;
  const calls = paused.pending.map((call) => `  #${call.id} ${call.name} ${excerpt(JSON.stringify(call.arguments) ?? "null", 300)}`);
  return (
    `The run paused: ${count} call${count === 1 ? " waits" : "s wait"} for a person's approval, and the body stopped there:\n` +
    `${calls.join("\n")}\nThe run goes on from there once they decide; the body does not need to change.`
  );
}

function jsonText(value: Json): string {
  const compact = JSON.stringify(value);
  return compact.length > PRETTY_CHARS ? compact : JSON.stringify(value, null, 2);
}
