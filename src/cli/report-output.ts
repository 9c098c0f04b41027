/** How `ears` shows a run: live logs, the result, notes and errors, and the exit status. */
import type { Writable } from "node:stream";
import type { LogEntry, RunReport } from "../host/index.js";
import type { RunReportFields } from "../host/types.js";
import type { Outcome } from "../outcome.js";

/** Exit statuses of `ears`. */
export const ExitStatus = {
  /** The guest's result is a success (replay: the guest did what the recording says). */
  Success: 0,
  /** The guest's result is a failure outcome (replay: the guest diverged from the recording). */
  GuestFailure: 1,
  /** The session broke: protocol error, crash, timeout, spawn failure, abort, unwritable transcript. */
  SessionError: 2,
  /** The command line was wrong (unknown option, bad --input, missing command, ...). */
  Usage: 64,
} as const;

/** Where `ears` writes, and where it runs: the real process, or buffers in tests. */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  cwd: string;
  /** Fires on SIGINT / SIGTERM: the run is stopped and the guest ended. */
  signal?: AbortSignal;
}

/** Writes each log to stderr as it arrives: `[level] content`. */
export function logPrinter(stderr: Writable): (log: LogEntry) => void {
  return (log) => {
    stderr.write(`[${log.level}] ${log.content}${log.content.endsWith("\n") ? "" : "\n"}`);
  };
}

/**
 * Passes the guest's stderr through to ours as it arrives, so a guest's own diagnostics show up live
 * (unprefixed: they are the guest's text, interleaved with the `[level]` log lines in arrival order).
 */
export function guestStderrPrinter(stderr: Writable): (chunk: string) => void {
  return (chunk) => {
    stderr.write(chunk);
  };
}

/** The result for people: its content, then its structured value as pretty JSON. */
export function printOutcome(outcome: Outcome, stdout: Writable): void {
  if (outcome.content !== "") stdout.write(outcome.content.endsWith("\n") ? outcome.content : `${outcome.content}\n`);
  if (outcome.structured !== undefined) stdout.write(`${JSON.stringify(outcome.structured, null, 2)}\n`);
}

/** The exit status a run's report calls for. */
export function exitStatusOf(report: RunReport): number {
  if (report.failure !== undefined) return ExitStatus.SessionError;
  return report.outcome?.status === "success" ? ExitStatus.Success : ExitStatus.GuestFailure;
}

/**
 * Notes on stderr after the run: the session failure (always) and the guest's failure code (unless
 * quiet). Unless quiet, the guest's stderr was streamed live ({@link guestStderrPrinter}), so it is
 * not repeated; when quiet, its tail is printed after a session failure only.
 */
export function printNotes(report: RunReportFields, stderr: Writable, quiet: boolean): void {
  if (report.failure !== undefined) {
    stderr.write(`ears: the session failed: ${report.failure.code}: ${report.failure.message}\n`);
  } else if (report.outcome?.status === "failure" && !quiet) {
    stderr.write(`ears: the guest's result is a failure (code ${report.outcome.code})\n`);
  }
  if (report.exit !== undefined && report.failure !== undefined) {
    const how = report.exit.signal !== null ? `signal ${report.exit.signal}` : `code ${report.exit.code}`;
    stderr.write(`ears: the guest exited with ${how}\n`);
  }
  const tail = report.stderr ?? "";
  if (tail !== "" && quiet && report.failure !== undefined) {
    const dropped = report.droppedStderrBytes ? ` (last ${Buffer.byteLength(tail)} bytes; ${report.droppedStderrBytes} earlier bytes dropped)` : "";
    stderr.write(`ears: the guest's stderr${dropped}:\n${tail}${tail.endsWith("\n") ? "" : "\n"}`);
  }
}
