/**
 * A run's timeline, from its transcript: the calls as intervals (name, an excerpt of the arguments,
 * outcome, failure code), the logs, stderr and stray lines as marks in place, the result, the report's
 * failure and usage. `ears timeline` renders it as HTML, `ears run --verbose` as text. Only excerpts are
 * kept, and at most {@link MAX_TIMELINE_ITEMS} calls and marks, so a huge run gives a bounded timeline.
 */
import { validateFrame } from "../protocol/frames.js";
import type { Json } from "../protocol/json.js";
import { excerpt } from "../protocol/text.js";
import { isNote, MAX_RECORDED_CODE_CHARS, type TranscriptEntry } from "./transcript.js";

/** Calls (and, apart, marks) a timeline keeps; later ones are counted. */
export const MAX_TIMELINE_ITEMS = 10_000;
/** Characters kept of a call's arguments, a reply's content, a log or a stderr chunk. */
const EXCERPT_CHARS = 300;
/** Characters kept of the result's content and structured value. */
const RESULT_CHARS = 4000;

/** One capability call: from its request to its reply (no reply: `endMs` undefined, status "unanswered"). */
export interface TimelineCall {
  id: number;
  name: string;
  /** The arguments as JSON, cut to an excerpt. */
  arguments: string;
  startMs: number;
  endMs?: number;
  status: "success" | "failure" | "unanswered";
  /** The failure code, for a failure reply. */
  code?: string;
  /** An excerpt of the reply's content. */
  content?: string;
}

/**
 * Something that happened at a moment: the hello or invoke, a log, a chunk of stderr, a line that was not a
 * frame, an approval decided (at its decision; `level` is the decision), the run's end when it was cut short
 * (a deadline, a limit, an abort, a forced stop, a pause), or when the host stopped the guest's process after
 * its result (`level` "normal").
 */
export interface TimelineMark {
  kind: "session" | "log" | "stderr" | "line" | "approval" | "end";
  atMs: number;
  /** The log's level; for a line, who wrote it; for an approval, the decision; "normal" for a run's normal end. */
  level?: string;
  text: string;
}

/** One resource limit of the report (`report.limits`): its value (null: none) and the mechanism that enforced it. */
export interface TimelineLimit {
  name: string;
  value: number | null;
  enforcedBy: string | null;
  note?: string;
}

/** A run laid out in time. */
export interface Timeline {
  /** Whether the transcript had times (`at`); without them, each entry's position stands for its time. */
  timed: boolean;
  /** The end of the run: the report note's time, else the last entry's. */
  durationMs: number;
  calls: TimelineCall[];
  droppedCalls: number;
  marks: TimelineMark[];
  droppedMarks: number;
  /** The guest's hello sdk, when it said one. */
  sdk?: string;
  /** The code body the run was given (a code note), and how many of its characters the recording left out. */
  code?: { text: string; droppedChars: number };
  /** What the invoke allowed, and an excerpt of its input. */
  invoke?: { allowed: string[]; input: string };
  result?: { atMs: number; status: "success" | "failure"; code?: string; content: string; structured?: string };
  /** From the report note: the session failure, the verdict, usage, exit and sandbox. */
  report?: {
    ok?: boolean;
    failure?: { code: string; message: string };
    usage?: Record<string, number | string | boolean>;
    /** Each resource limit with a value or a mechanism: what it was, and what enforced it (null: nothing did). */
    limits?: TimelineLimit[];
    exit?: string;
    sandbox?: string;
    durationMs?: number;
  };
}

/** Builds a {@link Timeline} entry by entry (from a file, or live from a running session). */
export class TimelineBuilder {
  private readonly timeline: Timeline = { timed: false, durationMs: 0, calls: [], droppedCalls: 0, marks: [], droppedMarks: 0 };
  private readonly open = new Map<number, TimelineCall>();
  private position = 0;

  /** Adds the next entry; `at` (its own, else this argument) is its time. */
  add(entry: TranscriptEntry, at = entry.at): void {
    const t = this.timeline;
    // An entry without a time sits at the end so far in a timed timeline, at its position in an untimed one.
    const atMs = at ?? (t.timed ? t.durationMs : this.position);
    this.position++;
    if (at !== undefined) t.timed = true;
    t.durationMs = Math.max(t.durationMs, atMs);
    if (isNote(entry)) {
      if ("stderr" in entry) this.mark({ kind: "stderr", atMs, text: excerpt(entry.stderr, EXCERPT_CHARS) });
      else if ("code" in entry) this.takeCode(entry.code, entry.droppedChars ?? 0, atMs);
      else this.takeReport(entry.report, atMs, at !== undefined);
      return;
    }
    if (!("frame" in entry)) {
      this.mark({ kind: "line", atMs, level: entry.from, text: excerpt(entry.text, EXCERPT_CHARS) });
      return;
    }
    const frame = validateFrame(entry.frame);
    if (typeof frame === "string") {
      this.mark({ kind: "line", atMs, level: entry.from, text: excerpt(JSON.stringify(entry.frame), EXCERPT_CHARS) });
      return;
    }
    switch (frame.type) {
      case "hello":
        if (frame.sdk !== undefined) t.sdk = excerpt(frame.sdk, 100);
        this.mark({ kind: "session", atMs, text: `hello: the guest is ready (protocol ${frame.protocol})` });
        return;
      case "invoke":
        t.invoke = { allowed: frame.allowed.map((name) => excerpt(name, 100)), input: jsonExcerpt(frame.input, EXCERPT_CHARS) };
        this.mark({
          kind: "session",
          atMs,
          text: `invoke: allowed ${excerpt(t.invoke.allowed.join(", "), 200) || "nothing"}; input ${t.invoke.input}`,
        });
        return;
      case "request": {
        if (t.calls.length >= MAX_TIMELINE_ITEMS) {
          t.droppedCalls++;
          return;
        }
        const call: TimelineCall = {
          id: frame.id,
          name: excerpt(frame.name, 200),
          arguments: jsonExcerpt(frame.arguments, EXCERPT_CHARS),
          startMs: atMs,
          status: "unanswered",
        };
        t.calls.push(call);
        this.open.set(frame.id, call);
        return;
      }
      case "reply": {
        const call = this.open.get(frame.id);
        if (call === undefined) return;
        this.open.delete(frame.id);
        call.endMs = atMs;
        call.status = frame.outcome.status;
        if (frame.outcome.status === "failure") call.code = excerpt(frame.outcome.code, 200);
        call.content = excerpt(frame.outcome.content, EXCERPT_CHARS);
        return;
      }
      case "log":
        this.mark({ kind: "log", atMs, level: excerpt(frame.level, 100), text: excerpt(frame.content, EXCERPT_CHARS) });
        return;
      case "result": {
        const { outcome } = frame;
        t.result = {
          atMs,
          status: outcome.status,
          content: excerpt(outcome.content, RESULT_CHARS),
          ...(outcome.status === "failure" ? { code: excerpt(outcome.code, 200) } : {}),
          ...(outcome.structured === undefined ? {} : { structured: jsonExcerpt(outcome.structured, RESULT_CHARS) }),
        };
        return;
      }
    }
  }

  /** The timeline so far. */
  build(): Timeline {
    return this.timeline;
  }

  private mark(mark: TimelineMark): void {
    if (this.timeline.marks.length >= MAX_TIMELINE_ITEMS) this.timeline.droppedMarks++;
    else this.timeline.marks.push(mark);
  }

  private takeCode(code: string, droppedChars: number, atMs: number): void {
    const text = code.slice(0, MAX_RECORDED_CODE_CHARS);
    const dropped = droppedChars + code.length - text.length;
    this.timeline.code = { text, droppedChars: dropped };
    const lines = code.split("\n").length;
    const cut = dropped > 0 ? `, ${dropped} more characters not recorded` : "";
    this.mark({ kind: "session", atMs, text: `code: the body, ${lines} line${lines === 1 ? "" : "s"}${cut}` });
  }

  /**
   * The report note. Its times (`durationMs`, an approval's `atMs`) count from the run's start on the host's
   * clock, which is not the recording's: a run pool's runner said hello before the run began, and a recorder
   * may start before or after the run. So the note is placed at its own time (`atMs`, written after every
   * frame of the run), and the report's times are mapped onto the recording's clock by aligning the report's
   * end with the note.
   */
  private takeReport(value: Json, atMs: number, timed: boolean): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return;
    const report: NonNullable<Timeline["report"]> = {};
    if (typeof value.ok === "boolean") report.ok = value.ok;
    const failure = value.failure;
    if (typeof failure === "object" && failure !== null && !Array.isArray(failure)) {
      report.failure = { code: excerpt(String(failure.code), 200), message: excerpt(String(failure.message), RESULT_CHARS) };
    }
    const usage = value.usage;
    if (typeof usage === "object" && usage !== null && !Array.isArray(usage)) {
      report.usage = {};
      for (const [key, figure] of Object.entries(usage)) {
        if (typeof figure === "number" || typeof figure === "string" || typeof figure === "boolean") report.usage[key] = figure;
      }
    }
    const limits = value.limits;
    if (typeof limits === "object" && limits !== null && !Array.isArray(limits)) report.limits = limitsOf(limits);
    const exit = value.exit;
    if (typeof exit === "object" && exit !== null && !Array.isArray(exit)) {
      report.exit = exit.signal !== null && exit.signal !== undefined ? `signal ${String(exit.signal)}` : `code ${String(exit.code)}`;
    }
    if (value.sandbox !== undefined) {
      const sandbox = value.sandbox;
      report.sandbox =
        typeof sandbox === "object" && sandbox !== null && !Array.isArray(sandbox) ? String(sandbox.mechanism) : "none (unconfined)";
    }
    if (typeof value.durationMs === "number") report.durationMs = value.durationMs;
    this.timeline.report = report;
    // Untimed, positions stand for times: the report's milliseconds would mean nothing beside them.
    const offset = timed && report.durationMs !== undefined ? atMs - report.durationMs : undefined;
    if (Array.isArray(value.approvals)) for (const approval of value.approvals) this.approvalMark(approval, offset);
    this.endMark(value, report, atMs);
  }

  /** An approval from the report note, marked when it was decided. */
  private approvalMark(value: Json, offset: number | undefined): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return;
    const { id, name, decision, by, reason, atMs, durationMs } = value;
    if (typeof atMs !== "number" || typeof durationMs !== "number") return;
    const who = typeof by === "string" ? ` by ${excerpt(by, 100)}` : "";
    const why = typeof reason === "string" ? `: ${excerpt(reason, EXCERPT_CHARS)}` : "";
    this.mark({
      kind: "approval",
      atMs: Math.max(0, (offset ?? 0) + atMs + durationMs),
      level: excerpt(String(decision), 20),
      text: `#${String(id)} ${excerpt(String(name), 200)} ${String(decision)}${who}${why} (decided in ${Math.round(durationMs)} ms)`,
    });
  }

  /**
   * How the run ended: cut short (a deadline or limit, an abort, a forced stop, a kill, a pause), or, when
   * the guest's result arrived and nothing failed, normally after its result, however its process ended
   * then (runCode's runner is SIGKILLed by the host at its result: nothing in it has anything to clean up).
   */
  private endMark(value: { [key: string]: Json }, report: NonNullable<Timeline["report"]>, atMs: number): void {
    const parts: string[] = [];
    const code = report.failure?.code;
    const cut = ["RunTimeout", "HelloTimeout", "CpuLimit", "MemoryLimit", "ProcessLimit", "Aborted"];
    if (code !== undefined && cut.includes(code)) {
      parts.push(`${code}: ${excerpt(report.failure!.message, EXCERPT_CHARS)}`);
    }
    if (typeof value.forcedStop === "string") parts.push(`the host had to send ${excerpt(value.forcedStop, 20)}`);
    // Through bubblewrap a kill is an exit status, 128 + SIGKILL's 9.
    const sandboxed = report.sandbox !== undefined && report.sandbox !== "none (unconfined)";
    const signalled = report.exit?.startsWith("signal ") === true || (report.exit === "code 137" && sandboxed);
    const kill = report.exit === "code 137" ? "SIGKILL, exit code 137 through the sandbox" : report.exit;
    // A result and no failure after it: whatever ended the process came after the run was over.
    const afterResult = this.timeline.result !== undefined && report.failure === undefined && value.forcedStop === undefined;
    if (afterResult && value.paused === undefined) {
      const how = signalled
        ? `; the host then stopped the guest's process (${kill})`
        : report.exit === undefined
          ? ""
          : `; the guest exited (${report.exit})`;
      this.mark({ kind: "end", atMs, level: "normal", text: `the run ended normally after its result${how}` });
      return;
    }
    if (signalled) parts.push(`the guest was killed (${kill})`);
    const paused = value.paused;
    if (typeof paused === "object" && paused !== null && !Array.isArray(paused) && Array.isArray(paused.pending)) {
      parts.push(`paused for approval: ${paused.pending.length} call${paused.pending.length === 1 ? "" : "s"} pending`);
    }
    if (parts.length === 0) return;
    this.mark({ kind: "end", atMs, text: parts.join("; ") });
  }
}

/** The timeline of a whole transcript. */
export function timelineOf(entries: Iterable<TranscriptEntry>): Timeline {
  const builder = new TimelineBuilder();
  for (const entry of entries) builder.add(entry);
  return builder.build();
}

/** The report's limits, as recorded: each entry that is an object, its figures checked (a transcript is data from anywhere). */
function limitsOf(limits: { [key: string]: Json }): TimelineLimit[] {
  const found: TimelineLimit[] = [];
  for (const [name, state] of Object.entries(limits).slice(0, 20)) {
    if (typeof state !== "object" || state === null || Array.isArray(state)) continue;
    const limit: TimelineLimit = {
      name: excerpt(name, 100),
      value: typeof state.value === "number" ? state.value : null,
      enforcedBy: typeof state.enforcedBy === "string" ? excerpt(state.enforcedBy, 100) : null,
    };
    if (typeof state.note === "string") limit.note = excerpt(state.note, EXCERPT_CHARS);
    found.push(limit);
  }
  return found;
}

function jsonExcerpt(value: Json, max: number): string {
  return excerpt(JSON.stringify(value) ?? "null", max);
}
