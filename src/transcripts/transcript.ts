/**
 * Transcripts: every frame of a session, both directions, one NDJSON line each:
 * `{"from":"guest","frame":{…}}`. A line the peer wrote that is not JSON at all is kept as
 * `{"from":"guest","text":"…"}`, so a recording of a broken session loses nothing.
 *
 * The writer is our own (not ndjson's stringify, which ends lines with os.EOL and rewrites cycles
 * instead of refusing them), and files are read with the project's linear {@link LineSplitter} (split2
 * rescans pending data on every chunk, which is quadratic on the long lines a big result makes).
 */
import {
  closeSync,
  constants,
  createReadStream,
  createWriteStream,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  openSync,
  type Stats,
} from "node:fs";
import { performance } from "node:perf_hooks";
import type { Writable } from "node:stream";
import type { RunReport } from "../host/api/types.js";
import { describeError } from "../protocol/errors.js";
import { validateFrame, type Frame } from "../protocol/frames.js";
import { jsonProblem, MAX_FRAME_DEPTH, type Json } from "../protocol/json.js";
import { LineError, LineSplitter } from "../wires/line-splitter.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../protocol/frames.js";

/** A frame may nest as deep as the protocol allows (the frame object is level 1), no deeper. */
const FRAME_LIMITS = { maxDepth: MAX_FRAME_DEPTH };

/** Which side wrote a frame. */
export type Direction = "guest" | "host";

/**
 * One line of a transcript: a frame as it was written (any JSON value; frames are objects, but a peer
 * that broke the protocol may have written other JSON), `text` for a line that was not JSON, or a
 * {@link TranscriptNote}. `at`, when the recording is timed, is when the line crossed the wire (or the
 * note was taken): milliseconds since the recording started.
 */
export type TranscriptEntry = ({ from: Direction; frame: Json } | { from: Direction; text: string } | TranscriptNote) & { at?: number };

/**
 * What a timed recording (`recordTo(path, { timed: true })`, the CLI's `--record`) holds besides the
 * frames, for `ears timeline`: the code body a run was given (`ears exec`; at most {@link MAX_RECORDED_CODE_CHARS}
 * characters, `droppedChars` counting the rest), the guest's stderr as it arrived, and the run's report at the
 * end (without the logs, calls, stderr and outcome, which the frames and notes already hold). Replay skips notes.
 */
export type TranscriptNote =
  { from: "guest"; stderr: string } | { from: "host"; report: Json } | { from: "host"; code: string; droppedChars?: number };

/** Characters of a code body a {@link Recorder.code} note keeps (a body may be 256 KiB; a timeline shows less). */
export const MAX_RECORDED_CODE_CHARS = 64 * 1024;

/** Whether an entry is a note (code, stderr or report) rather than a line that crossed the wire. */
export function isNote(entry: TranscriptEntry): entry is TranscriptNote & { at?: number } {
  return "stderr" in entry || "report" in entry || "code" in entry;
}

/**
 * A transcript entry that holds a protocol 1 frame, so `entry.frame.type` narrows the frame. What
 * `testGuest` records, and what `readTranscript(path, { frames: true })` returns.
 */
export type FrameEntry = TranscriptEntry & { from: Direction; frame: Frame };

/** What a transcript writer accepts: an entry, or a typed frame object (checked like any JSON value). */
export type EntryToWrite = TranscriptEntry | { from: Direction; frame: Frame; at?: number };

/** A transcript file that cannot be read or is not a transcript. `line` is 1-based, 0 for the whole file. */
export class TranscriptError extends Error {
  override name = "TranscriptError";
  constructor(
    message: string,
    readonly path: string,
    readonly line: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * One transcript line for `entry`, without the newline. Throws a TypeError when JSON would alter the
 * frame (NaN, BigInt, cycles, …) or the entry is not a transcript entry: values are refused, never fixed.
 */
export function formatTranscriptEntry(entry: EntryToWrite): string {
  if (entry === null || typeof entry !== "object") throw new TypeError("a transcript entry must be an object");
  const from = (entry as { from?: unknown }).from;
  if (from !== "guest" && from !== "host") throw new TypeError(`entry.from must be "guest" or "host", got ${describeError(from)}`);
  const at = (entry as { at?: unknown }).at;
  if (at !== undefined && !isTime(at))
    throw new TypeError(`entry.at must be a finite number of milliseconds >= 0, got ${describeError(at)}`);
  const head = at === undefined ? { from } : { from, at };
  if ("stderr" in entry) {
    if (from !== "guest" || typeof entry.stderr !== "string") throw new TypeError('a stderr note must be from "guest" with a string');
    return JSON.stringify({ ...head, stderr: entry.stderr });
  }
  if ("code" in entry) {
    const { code, droppedChars } = entry as { code: unknown; droppedChars?: unknown };
    if (from !== "host" || typeof code !== "string") throw new TypeError('a code note must be from "host" with a string');
    if (droppedChars !== undefined && !(Number.isSafeInteger(droppedChars) && (droppedChars as number) > 0)) {
      throw new TypeError("a code note's droppedChars must be a whole number > 0");
    }
    return JSON.stringify({ ...head, code, ...(droppedChars === undefined ? {} : { droppedChars }) });
  }
  if ("report" in entry) {
    if (from !== "host") throw new TypeError('a report note must be from "host"');
    const problem = jsonProblem(entry.report, FRAME_LIMITS);
    if (problem !== undefined) throw new TypeError(`entry.report cannot be written as JSON unchanged: ${problem.replace(/^\$/, "report")}`);
    return JSON.stringify({ ...head, report: entry.report });
  }
  if ("text" in entry && !("frame" in entry)) {
    if (typeof entry.text !== "string") throw new TypeError("entry.text must be a string");
    return JSON.stringify({ ...head, text: entry.text });
  }
  const frame = (entry as { frame?: unknown }).frame;
  const problem = jsonProblem(frame, FRAME_LIMITS);
  if (problem !== undefined) throw new TypeError(`entry.frame cannot be written as JSON unchanged: ${problem.replace(/^\$/, "frame")}`);
  return JSON.stringify({ ...head, frame });
}

function isTime(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/**
 * One transcript line for a frame line as it crossed the wire (what `HostOptions.onFrame` sees). A line
 * that is faithful JSON is spliced in as it is, so the recording keeps exactly what was sent; any other
 * line (not JSON, or JSON whose value JSON.parse alters, such as a number that overflows to Infinity)
 * is kept as `text`.
 */
export function transcriptLine(from: Direction, line: string, at?: number): string {
  const head = at === undefined ? `{"from":"${from}"` : `{"from":"${from}","at":${at}`;
  return faithfulJson(line) === undefined ? `${head},"text":${JSON.stringify(line)}}` : `${head},"frame":${line}}`;
}

/** The entry for a frame line as it crossed the wire: the same entry {@link readTranscript} reads back. */
export function transcriptEntry(from: Direction, line: string): TranscriptEntry {
  const value = faithfulJson(line);
  return value === undefined ? { from, text: line } : { from, frame: value.json };
}

function faithfulJson(line: string): { json: Json } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  return jsonProblem(value, FRAME_LIMITS) === undefined ? { json: value as Json } : undefined;
}

/** A transcript being written to a file; see {@link recordTo}. */
export interface Recorder {
  /**
   * Pass as `HostOptions.onFrame`: appends the line to the transcript, in call order. Returns a promise
   * while the sink is over its high-water mark (the host then waits for it before reading the guest's
   * next frame: back-pressure), undefined otherwise.
   */
  readonly onFrame: (from: Direction, line: string) => Promise<void> | undefined;
  /** Appends an entry built from frame objects. Throws a TypeError for values JSON would alter. */
  write(entry: EntryToWrite): void;
  /**
   * Appends a note of the guest's stderr (pass as, or call from, `GuestCommand.onStderr`), timed when
   * the recording is.
   */
  stderr(chunk: string): void;
  /**
   * Appends the run's report as the closing note, timed when the recording is, without what the frames
   * and stderr notes already hold (logs, calls, stderr, outcome, hello). Throws a TypeError for values
   * JSON would alter.
   */
  report(report: RunReport): void;
  /**
   * Appends the code body the run was given, as a note, timed when the recording is: its first
   * {@link MAX_RECORDED_CODE_CHARS} characters (whole UTF-16 pairs), and how many were left out.
   */
  code(body: string): void;
  /** Flushes and closes the file. Rejects with a {@link TranscriptError} when any write failed. Idempotent. */
  close(): Promise<void>;
}

/** How much transcript text may wait for a slow sink before the host is asked to stop reading. */
const RECORD_HIGH_WATER_BYTES = 1024 * 1024;

/** Options for {@link recordTo} and {@link recordToStream}. */
export interface RecordOptions {
  /**
   * Stamp every line with `at`, milliseconds since the recording started (to the microsecond), as
   * `ears timeline` needs. Default false: lines are `{"from":…,"frame":…}` exactly.
   */
  timed?: boolean;
}

/**
 * Starts a transcript file at `path`, before a run starts, so a bad path fails here. The transcript
 * holds everything the guest read and was sent, so the file is private (mode 0600) and opened safely:
 *
 * - a symbolic link at `path` is refused, never followed (`O_NOFOLLOW`; links in the directories
 *   above are the caller's choice and are followed);
 * - a new file is created with mode 0600; an existing regular file is made 0600 and then truncated
 *   (refused, untouched, if it has other hard links or cannot be made private);
 * - a character device (`/dev/null`) or, on Linux, a FIFO with a reader is written as it is; other
 *   kinds (FIFO without a reader, socket, directory) are refused. Nothing here ever blocks.
 *
 * Lines are queued in order and end with `\n` on every platform; `close()` flushes them. Frames
 * written after `close()` are refused with an Error, never silently dropped.
 */
export function recordTo(path: string, options: RecordOptions = {}): Recorder {
  const fd = openTranscriptFile(path);
  const stream = createWriteStream(path, { fd, autoClose: true, highWaterMark: RECORD_HIGH_WATER_BYTES });
  return recorderOver(stream, path, options);
}

/**
 * A transcript written to any writable byte stream (a compressor, a socket), with the same
 * back-pressure as {@link recordTo}; `name` is used in error messages. `close()` ends the stream.
 */
export function recordToStream(stream: Writable, name: string, options: RecordOptions = {}): Recorder {
  return recorderOver(stream, name, options);
}

/** The report keys a report note leaves out: the frames and stderr notes hold them already. */
const KEPT_ELSEWHERE = new Set(["logs", "calls", "stderr", "outcome", "hello"]);

function recorderOver(stream: Writable, path: string, { timed = false }: RecordOptions): Recorder {
  const startedAt = performance.now();
  const now = () => Math.round((performance.now() - startedAt) * 1000) / 1000;
  let failure: Error | undefined;
  stream.on("error", (error) => {
    failure ??= error;
  });
  let closing: Promise<void> | undefined;
  // One shared promise while the sink is full: settles on 'drain', or when the stream closes or fails.
  let drained: Promise<void> | undefined;
  const waitForDrain = () =>
    (drained ??= new Promise<void>((resolve) => {
      const done = () => {
        stream.off("drain", done);
        stream.off("close", done);
        drained = undefined;
        resolve();
      };
      stream.on("drain", done);
      stream.on("close", done);
    }));
  const append = (line: string): Promise<void> | undefined => {
    if (closing !== undefined) throw new Error(`transcript ${path} is closed; a frame arrived after close()`);
    if (failure !== undefined || stream.destroyed) return undefined;
    return stream.write(`${line}\n`) ? undefined : waitForDrain();
  };
  return {
    onFrame: (from, line) => append(timed ? transcriptLine(from, line, now()) : transcriptLine(from, line)),
    write: (entry) => {
      // write() has no back-pressure to give: its drain promise never rejects, and close() waits for it.
      void append(formatTranscriptEntry(entry));
    },
    stderr: (chunk) => {
      void append(formatTranscriptEntry(timed ? { from: "guest", at: now(), stderr: chunk } : { from: "guest", stderr: chunk }));
    },
    code: (body) => {
      let kept = body.slice(0, MAX_RECORDED_CODE_CHARS);
      // Never half a surrogate pair: the note must be the text it says it is.
      if (/[\ud800-\udbff]$/.test(kept)) kept = kept.slice(0, -1);
      const note = { from: "host" as const, code: kept, ...(kept.length < body.length ? { droppedChars: body.length - kept.length } : {}) };
      void append(formatTranscriptEntry(timed ? { ...note, at: now() } : note));
    },
    report: (report) => {
      const kept = Object.fromEntries(Object.entries(report).filter(([key]) => !KEPT_ELSEWHERE.has(key))) as Json;
      void append(formatTranscriptEntry(timed ? { from: "host", at: now(), report: kept } : { from: "host", report: kept }));
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        // 'close' comes after 'finish' or after 'error', so by then any write failure is known.
        if (stream.closed) return resolve();
        stream.once("close", () => resolve());
        stream.end((error?: Error | null) => {
          // After a failed write, end() reports only "Cannot call end after a stream was destroyed"; the
          // write's own error (ENOSPC, EPIPE) is the one to report, and it may not have been emitted yet.
          if (error) failure ??= stream.errored ?? error;
        });
      }).then(() => {
        if (failure !== undefined) {
          throw new TranscriptError(`writing transcript ${path} failed: ${describeError(failure)}`, path, 0, { cause: failure });
        }
      });
      return closing;
    },
  };
}

/** Opens the transcript path as {@link recordTo} describes; throws a {@link TranscriptError} saying why not. */
function openTranscriptFile(path: string): number {
  const refuse = (why: string, cause?: unknown): never => {
    throw new TranscriptError(`cannot create transcript ${path}: ${why}`, path, 0, { cause });
  };
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO nobody reads fails (ENXIO) instead of blocking the process.
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EMLINK")
      refuse("it is a symbolic link, which ears does not follow (give the path of the file itself)", error);
    if (code === "ENXIO") refuse("it is a FIFO that no process is reading", error);
    return refuse(describeError(error), error);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isFile()) {
      if (stat.nlink > 1) refuse(`it has ${stat.nlink} hard links, so truncating it would change another file too; remove it first`);
      try {
        fchmodSync(fd, 0o600);
      } catch (error) {
        refuse(`it could not be made private (mode 0600: ${describeError(error)}); it was left unchanged`, error);
      }
      ftruncateSync(fd, 0);
      return fd;
    }
    if (stat.isCharacterDevice()) return fd;
    if (stat.isFIFO() && process.platform === "linux") {
      // Reopened through /proc (the same FIFO, not the path again) to get a blocking descriptor:
      // a non-blocking one would fail writes with EAGAIN whenever the reader is behind.
      const blocking = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY);
      closeSync(fd);
      return blocking;
    }
    return refuse(`it is not a regular file (${fileKind(stat)})`);
  } catch (error) {
    closeSync(fd);
    throw error instanceof TranscriptError
      ? error
      : new TranscriptError(`cannot create transcript ${path}: ${describeError(error)}`, path, 0, { cause: error });
  }
}

/** Options for {@link readTranscript}. */
export interface ReadTranscriptOptions {
  /** Longest line accepted, in bytes. Default: the default frame cap plus room for the entry wrapper. */
  maxLineBytes?: number;
  /**
   * Every entry must hold a protocol 1 frame (a line that is not one rejects, naming it), and each frame is
   * decoded as the host decodes it, protocol 1's defaults applied (a `log` without `level` is `info`, a
   * `request` without `arguments` has `null`). The result is typed {@link FrameEntry}[], so
   * `entry.frame.type` narrows; notes (stderr, report) are left out. Default false: any JSON frame,
   * `text` lines and notes are kept as they are.
   */
  frames?: boolean;
}

/**
 * Reads a transcript file. Blank lines are skipped; `\r\n` is accepted. Rejects with a
 * {@link TranscriptError} naming the line for a line that is not UTF-8, not JSON, too long, cut off
 * at the end, or not an entry (`from` must be "guest" or "host", with a `frame` or a `text` string).
 */
export function readTranscript(path: string, options: ReadTranscriptOptions & { frames: true }): Promise<FrameEntry[]>;
export function readTranscript(path: string, options?: ReadTranscriptOptions): Promise<TranscriptEntry[]>;
export async function readTranscript(path: string, options: ReadTranscriptOptions = {}): Promise<TranscriptEntry[]> {
  const splitter = new LineSplitter(options.maxLineBytes ?? DEFAULT_MAX_FRAME_BYTES + 1024);
  const entries: TranscriptEntry[] = [];
  let lineNumber = 0;
  const emit = (line: string) => {
    const entry = parseEntry(line, path, lineNumber);
    if (options.frames !== true) entries.push(entry);
    else if (!isNote(entry)) entries.push(asFrameEntry(entry, path, lineNumber + 1));
  };
  const fail = (error: unknown, at: number): never => {
    if (error instanceof TranscriptError) throw error;
    const reason = error instanceof LineError ? lineProblem(error) : describeError(error);
    throw new TranscriptError(`${path} line ${at}: ${reason}`, path, at, { cause: error });
  };
  try {
    closeSync(openSync(path, "r")); // a clear error for a missing file, before streaming
  } catch (error) {
    throw new TranscriptError(`cannot read transcript ${path}: ${describeError(error)}`, path, 0, { cause: error });
  }
  const stream = createReadStream(path);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      // Feed the splitter one line at a time, so each emitted line's number is known (blank lines count).
      let start = 0;
      while (start < chunk.length) {
        const newline = chunk.indexOf(10, start);
        const end = newline < 0 ? chunk.length : newline + 1;
        try {
          splitter.push(chunk.subarray(start, end), emit);
        } catch (error) {
          fail(error, lineNumber + 1);
        }
        if (newline >= 0) lineNumber++;
        start = end;
      }
    }
  } catch (error) {
    if (error instanceof TranscriptError) throw error;
    throw new TranscriptError(`cannot read transcript ${path}: ${describeError(error)}`, path, 0, { cause: error });
  } finally {
    stream.destroy();
  }
  try {
    splitter.end();
  } catch (error) {
    fail(error, lineNumber + 1);
  }
  return entries;
}

function lineProblem(error: LineError): string {
  switch (error.kind) {
    case "not-utf8":
      return "not valid UTF-8";
    case "truncated":
      return "the file ends in the middle of a line (no final newline); the recording may have been cut off";
    case "oversized":
      return `${error.message}; pass a larger maxLineBytes if the recording is genuine`;
  }
}

function asFrameEntry(entry: TranscriptEntry, path: string, at: number): FrameEntry {
  const frame = "frame" in entry ? validateFrame(entry.frame) : "the line was not JSON (the session broke here)";
  if (typeof frame === "string")
    throw new TranscriptError(`${path} line ${at}: not a protocol 1 frame (${frame}); read it without frames: true`, path, at);
  // Frame's interfaces have no index signature, so TypeScript cannot see that a frame is Json too.
  const read = { from: entry.from, frame } as FrameEntry;
  if (entry.at !== undefined) read.at = entry.at;
  return read;
}

function parseEntry(line: string, path: string, lineNumber: number): TranscriptEntry {
  // The splitter emits a line only for the newline that ends it, after lineNumber was counted up.
  const at = lineNumber + 1;
  const bad = (reason: string) => new TranscriptError(`${path} line ${at}: ${reason}`, path, at);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw bad(`not JSON (${describeError(error)})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad('a transcript entry must be an object like {"from":"guest","frame":{…}}');
  }
  const entry = value as Record<string, unknown>;
  const from = entry.from;
  if (from !== "guest" && from !== "host") throw bad('"from" must be "guest" or "host"');
  if (entry.at !== undefined && !isTime(entry.at)) throw bad('"at" must be a number of milliseconds >= 0');
  // Keys in the order the writer puts them: from, at, then the content.
  const direction: Direction = from;
  const head = entry.at === undefined ? { from: direction } : { from: direction, at: entry.at as number };
  const timed = <T extends object>(content: T): T & { from: Direction; at?: number } => ({ ...head, ...content });
  if ("frame" in entry) {
    const problem = jsonProblem(entry.frame, FRAME_LIMITS);
    if (problem !== undefined) throw bad(`the frame cannot be read as JSON unchanged: ${problem.replace(/^\$/, "frame")}`);
    return timed({ frame: entry.frame as Json });
  }
  if (typeof entry.text === "string") return timed({ text: entry.text });
  if (typeof entry.stderr === "string" && from === "guest")
    return { from, ...(entry.at === undefined ? {} : { at: entry.at as number }), stderr: entry.stderr };
  if (typeof entry.code === "string" && from === "host") {
    const dropped = entry.droppedChars;
    if (dropped !== undefined && !(Number.isSafeInteger(dropped) && (dropped as number) > 0)) {
      throw bad('"droppedChars" must be a whole number > 0');
    }
    return {
      from,
      ...(entry.at === undefined ? {} : { at: entry.at as number }),
      code: entry.code,
      ...(dropped === undefined ? {} : { droppedChars: dropped as number }),
    };
  }
  if ("report" in entry && from === "host") {
    const problem = jsonProblem(entry.report, FRAME_LIMITS);
    if (problem !== undefined) throw bad(`the report cannot be read as JSON unchanged: ${problem.replace(/^\$/, "report")}`);
    return { from, ...(entry.at === undefined ? {} : { at: entry.at as number }), report: entry.report as Json };
  }
  throw bad('an entry needs a "frame" (the frame object), a "text" string, or a note (a guest "stderr" string, a host "report" or "code")');
}

/** What a path that is not a regular file is, for messages. */
function fileKind(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isFIFO()) return "a FIFO";
  return stat.isSocket() ? "a socket" : "a special file";
}
