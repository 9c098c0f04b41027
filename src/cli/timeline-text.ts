/** The compact text timeline `ears run --verbose` prints on stderr after the run. */
import type { Writable } from "node:stream";
import type { Timeline, TimelineMark } from "../transcripts/timeline.js";
import { endGuestStderrLine, label, limitsLine, oneLine } from "./report-output.js";

/** How each kind of mark is shown (a log by its level). */
const MARK_LABELS: Partial<Record<TimelineMark["kind"], string>> = {
  stderr: "[stderr]",
  session: "[session]",
  line: "[not a frame]",
  end: "[end]",
};

/** Rows printed at most; the rest are counted. */
const MAX_ROWS = 200;

/**
 * Writes the timeline: one line per call (start, `#id name arguments`, duration, outcome and failure
 * code) with the logs, stderr chunks and stray lines in place, then the result. Guest text is escaped
 * and cut to one line, and every line starts `ears: |`, so nothing the guest wrote can pass for a note.
 */
export function printTimeline(timeline: Timeline, stderr: Writable): void {
  endGuestStderrLine(stderr);
  const calls = timeline.calls.length + timeline.droppedCalls;
  const failed = timeline.calls.filter((call) => call.status !== "success").length;
  stderr.write(
    `ears: timeline: ${ms(timeline.durationMs)}, ${calls} call${calls === 1 ? "" : "s"}` +
      `${failed > 0 ? ` (${failed} not successful)` : ""}, ${timeline.marks.filter((mark) => mark.kind === "log").length} logs\n`,
  );
  const { report } = timeline;
  // What bounded the run, each limit with the mechanism that enforced it, and where the usage came from.
  const limits = report?.limits === undefined ? undefined : limitsLine(report.limits);
  if (limits !== undefined) stderr.write(`ears: | limits: ${limits}\n`);
  const sources = [
    ...(report?.sandbox !== undefined ? [`sandbox: ${oneLine(report.sandbox, 100)}`] : []),
    ...(typeof report?.usage?.source === "string" ? [`usage measured by ${oneLine(report.usage.source, 100)}`] : []),
  ];
  if (sources.length > 0) stderr.write(`ears: | ${sources.join("; ")}\n`);
  const rows = [
    ...timeline.calls.map((call) => {
      const outcome = call.status === "failure" ? `failure ${label(call.code ?? "")}` : call.status;
      const duration = call.endMs === undefined ? "no reply" : ms(call.endMs - call.startMs);
      return { at: call.startMs, text: `#${call.id} ${oneLine(call.name, 80)} ${oneLine(call.arguments, 80)}  ${duration}  ${outcome}` };
    }),
    // The end comes last, after the result (below): it is what the report said once the run was over.
    ...timeline.marks
      .filter((mark) => mark.kind !== "end")
      .map((mark) => ({
        at: mark.atMs,
        text: `${MARK_LABELS[mark.kind] ?? `[${label(mark.level ?? "info")}]`} ${oneLine(mark.text.replace(/\r?\n$/, ""), 120)}`,
      })),
  ].sort((a, b) => a.at - b.at);
  for (const row of rows.slice(0, MAX_ROWS)) stderr.write(`ears: | ${ms(row.at).padStart(10)}  ${row.text}\n`);
  const hidden = rows.length - MAX_ROWS + timeline.droppedCalls + timeline.droppedMarks;
  if (hidden > 0) stderr.write(`ears: | … ${hidden} more (ears timeline shows them all)\n`);
  const { result } = timeline;
  if (result !== undefined) {
    stderr.write(
      `ears: | ${ms(result.atMs).padStart(10)}  result ${result.status}${result.code !== undefined ? ` ${label(result.code)}` : ""}\n`,
    );
  }
  for (const mark of timeline.marks.filter((mark) => mark.kind === "end")) {
    stderr.write(`ears: | ${ms(mark.atMs).padStart(10)}  [end] ${oneLine(mark.text.replace(/\r?\n$/, ""), 120)}\n`);
  }
}

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}
