/** How `ears` shows a run: live logs, the result, notes and errors, and the exit status. */
import { byteSize, excerpt } from "../protocol/text.js";
import type { Readable, Writable } from "node:stream";
import type { LogEntry, ResourceUsage, RunReport } from "../host/index.js";
import type { RunReportFields } from "../host/api/types.js";
import type { Outcome } from "../protocol/outcome.js";
import { describeError } from "../protocol/errors.js";
import { escapeJsonControls, escapeResultText, escapeTerminalText, PrefixedLines } from "./terminal-text.js";

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
  /** Read by `ears runner` (the host's stream) and the --approve prompt (the answers); default this process's stdin. */
  stdin?: Readable;
  stdout: Writable;
  stderr: Writable;
  cwd: string;
  /** Fires on SIGINT / SIGTERM: the run is stopped and the guest ended. */
  signal?: AbortSignal;
}

/** The longest log level or failure code shown; a longer one is cut with a note of its length. */
const MAX_LABEL_CHARS = 100;

/** Guest text is written in pieces of at most this many characters, so no output string grows huge. */
const PIECE_CHARS = 1024 * 1024;

/**
 * Writes each log to stderr as it arrives: `[level] content`, escaped for the terminal
 * (see `terminal-text.ts`); continuation lines are indented, so no log line can pass for an `ears:` note.
 */
export function logPrinter(stderr: Writable): (log: LogEntry) => void {
  return (log) => {
    endGuestStderrLine(stderr);
    stderr.write(`[${label(log.level)}] `);
    const lines = new PrefixedLines("  ", { startsMidLine: true });
    writeInPieces(stderr, log.content, (piece) => lines.format(piece));
    if (!lines.lineEnded) stderr.write("\n");
  };
}

/**
 * Passes the guest's stderr through to ours as it arrives, so a guest's own diagnostics show up live,
 * interleaved with the `[level]` log lines in arrival order. Every line starts with `[stderr] ` and is
 * escaped for the terminal, so the guest cannot imitate `ears:` notes or drive the terminal.
 */
export function guestStderrPrinter(stderr: Writable): (chunk: string) => void {
  const lines = new PrefixedLines(STDERR_PREFIX);
  stderrLines.set(stderr, lines);
  return (chunk) => {
    writeInPieces(stderr, chunk, (piece) => lines.format(piece));
  };
}

const STDERR_PREFIX = "[stderr] ";

/** The guest's stderr printer writing to each stream, so log lines and notes can end its open line. */
const stderrLines = new WeakMap<Writable, PrefixedLines>();

/**
 * Ends a line of the guest's stderr left open (no newline yet) before `ears` writes a line of its own,
 * so a log or note never continues the guest's line and the guest's next chunk starts a new, prefixed
 * line (otherwise it would follow our newline at column 0, unprefixed).
 */
export function endGuestStderrLine(stderr: Writable): void {
  const lines = stderrLines.get(stderr);
  if (lines === undefined || lines.lineEnded) return;
  stderr.write("\n");
  lines.startNewLine();
}

/**
 * The result for people: its content (escaped for the terminal; a line starting `ears:` has its `e`
 * escaped), then its structured value as pretty JSON (JSON escapes every control character). A value
 * too large to show as one string is named on stderr instead, with where to find it.
 */
export function printOutcome(outcome: Outcome, stdout: Writable, stderr?: Writable): void {
  if (outcome.content !== "") {
    writeInPieces(stdout, outcome.content, escapeResultText);
    if (!outcome.content.endsWith("\n")) stdout.write("\n");
  }
  if (outcome.structured === undefined) return;
  let pretty: string;
  try {
    pretty = JSON.stringify(outcome.structured, null, 2);
  } catch (error) {
    (stderr ?? stdout).write(
      `ears: the result's structured value cannot be shown (${describeError(error)}); ` +
        "--json or --record keep it only if they can write it\n",
    );
    return;
  }
  stdout.write(`${escapeJsonControls(pretty)}\n`);
}

/**
 * Writes a report (or a replay's verdict) as one line of JSON. Returns false, after saying why on
 * stderr, when it cannot be written: too large for one string (V8 caps strings at about 512 MiB).
 */
export function printJson(value: unknown, stdout: Writable, stderr: Writable): boolean {
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    stderr.write(`ears: the report cannot be written as JSON (${describeError(error)}); nothing was written to stdout\n`);
    return false;
  }
  stdout.write(`${escapeJsonControls(text)}\n`);
  return true;
}

/** A guest-chosen one-line label (log level, failure code) made safe and short for the terminal. */
export function label(text: string): string {
  return oneLine(text, MAX_LABEL_CHARS);
}

/** Text that may hold guest-controlled parts, shown escaped on one line and cut to `max` characters. */
export function oneLine(text: string, max = MAX_MESSAGE_CHARS): string {
  return escapeTerminalText(excerpt(text, max), { singleLine: true });
}

/** The longest message shown in an `ears:` note (messages quote guest text, which can be huge). */
const MAX_MESSAGE_CHARS = 4000;

/**
 * Writes `text` through `format` in pieces of at most {@link PIECE_CHARS}, cut just after a newline
 * when there is one (so a line start is never split from its line) and never inside a surrogate pair.
 */
function writeInPieces(stream: Writable, text: string, format: (piece: string) => string): void {
  for (let from = 0; from < text.length;) {
    let end = Math.min(from + PIECE_CHARS, text.length);
    if (end < text.length) {
      const newline = text.lastIndexOf("\n", end - 1);
      if (newline >= from) end = newline + 1;
      else if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    }
    stream.write(format(text.slice(from, end)));
    from = end;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * What a run cost, on one line: `cpu 120 ms, memory 48 MiB peak, 3 processes, 27 threads` (each part only when it
 * was measured); undefined when nothing was (no cgroup here).
 */
export function usageLine(usage: ResourceUsage | undefined): string | undefined {
  if (usage === undefined) return undefined;
  const parts: string[] = [];
  if (usage.cpuMs !== undefined) parts.push(`cpu ${Math.round(usage.cpuMs)} ms`);
  if (usage.peakMemoryBytes !== undefined) {
    const mib = usage.peakMemoryBytes / (1024 * 1024);
    parts.push(`memory ${mib < 10 ? mib.toFixed(1) : Math.round(mib)} MiB peak`);
  }
  if (usage.peakProcesses !== undefined) parts.push(`${usage.peakProcesses} ${usage.peakProcesses === 1 ? "process" : "processes"}`);
  // Threads are what --processes bounds (the pids controller counts tasks).
  if (usage.peakThreads !== undefined) parts.push(`${usage.peakThreads} ${usage.peakThreads === 1 ? "thread" : "threads"}`);
  return parts.length === 0 ? undefined : parts.join(", ");
}

/** How each resource limit is named and set on the command line, and how its value reads. */
const LIMIT_WORDS: Record<string, { label: string; flag: string; value: (n: number) => string }> = {
  memoryBytes: { label: "memory", flag: "--memory", value: byteSize },
  processes: { label: "processes", flag: "--processes", value: String },
  cpuTimeMs: { label: "CPU time", flag: "--cpu-time", value: (ms) => `${ms / 1000} s` },
  tmpBytes: { label: "/tmp", flag: "--tmp-size", value: byteSize },
};

/** A resource limit as the report gives it (`report.limits`, or a recording's). */
interface ReportedLimit {
  name: string;
  value: number | null;
  enforcedBy: string | null;
  requested?: boolean;
  note?: string;
}

/** The report's limits as a list (names kept in the report's order). */
export function reportedLimits(limits: RunReport["limits"]): ReportedLimit[] {
  return Object.entries(limits ?? {}).map(([name, state]) => ({ name, ...state }));
}

/**
 * The limits and what enforced each, on one line: `memory 1 GiB (cgroup-v1), processes 256 (rlimit+watchdog),
 * /tmp 256 MiB (NOT ENFORCED)`; a limit without a value is left out. Undefined when there is none.
 */
export function limitsLine(limits: readonly ReportedLimit[]): string | undefined {
  const parts = limits
    .filter((limit) => limit.value !== null)
    .map((limit) => {
      const words = LIMIT_WORDS[limit.name];
      const value = words === undefined ? String(limit.value) : words.value(limit.value!);
      return `${words?.label ?? label(limit.name)} ${value} (${limit.enforcedBy === null ? "NOT ENFORCED" : label(limit.enforcedBy)})`;
    });
  return parts.length === 0 ? undefined : parts.join(", ");
}

/**
 * Warns on stderr of each limit with a value that nothing enforced (a default this machine cannot enforce:
 * `enforcedBy` null), naming it and why, whatever `--quiet` and `--json` say: a bound that did not hold is
 * never only a field of the report.
 */
export function printLimitWarnings(report: Pick<RunReport, "limits">, stderr: Writable): void {
  for (const limit of reportedLimits(report.limits)) {
    if (limit.value === null || limit.enforcedBy !== null) continue;
    const words = LIMIT_WORDS[limit.name];
    const value = words === undefined ? String(limit.value) : words.value(limit.value);
    const set = words === undefined ? "" : `${words.flag}, `;
    const why = (limit.note ?? "").replace(/^not enforced: /, "");
    endGuestStderrLine(stderr);
    stderr.write(
      `ears: warning: limits.${label(limit.name)} (${set}${limit.requested === true ? "" : "default "}${value}) is not enforced` +
        `${why === "" ? "" : `: ${oneLine(why)}`}\n`,
    );
  }
}

/** The usage line as a note on stderr after the run (unless quiet); the numbers are in the `--json` report. */
export function printUsage(report: RunReport, stderr: Writable, quiet: boolean): void {
  const line = usageLine(report.usage);
  if (quiet || line === undefined) return;
  endGuestStderrLine(stderr);
  stderr.write(`ears: ${line}\n`);
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
  endGuestStderrLine(stderr);
  if (report.failure !== undefined) {
    // The host's message can quote guest text (a stray line, the guest's sdk name): escaped, on one line.
    // A CompileError's quote of the code (its line and a caret) keeps its own lines, each escaped.
    const [first = "", ...quoted] = report.failure.code === "CompileError" ? report.failure.message.split("\n") : [report.failure.message];
    stderr.write(`ears: the session failed: ${report.failure.code}: ${oneLine(first)}\n`);
    for (const line of quoted) stderr.write(`ears: ${escapeTerminalText(excerpt(line, MAX_MESSAGE_CHARS))}\n`);
  } else if (report.outcome?.status === "failure" && !quiet) {
    stderr.write(`ears: the guest's result is a failure (code ${label(report.outcome.code)})\n`);
  }
  if (report.exit !== undefined && report.failure !== undefined) {
    const how = report.exit.signal !== null ? `signal ${report.exit.signal}` : `code ${report.exit.code}`;
    stderr.write(`ears: the guest exited with ${how}\n`);
  }
  const tail = report.stderr ?? "";
  if (tail !== "" && quiet && report.failure !== undefined) {
    const dropped = report.droppedStderrBytes
      ? ` (last ${Buffer.byteLength(tail)} bytes; ${report.droppedStderrBytes} earlier bytes dropped)`
      : "";
    stderr.write(`ears: the guest's stderr${dropped}:\n`);
    const lines = new PrefixedLines(STDERR_PREFIX);
    writeInPieces(stderr, tail, (piece) => lines.format(piece));
    if (!lines.lineEnded) stderr.write("\n");
  }
}
