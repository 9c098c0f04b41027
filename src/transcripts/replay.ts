/**
 * Replay: a host double built from a recorded transcript. It sends the recorded invoke, checks each
 * request of the guest against the recording (name and arguments, in order), answers with the recorded
 * reply, and compares the final result. The host engine does all frame handling (runHost / runGuest);
 * the replay is only a set of capabilities plus checks on the frames the engine sees.
 */
import { runGuest } from "../host/index.js";
import type { Capabilities, GuestCommand, HostLimits, HostOptions, LogEntry, RunReport } from "../host/index.js";
import { decodeFrame, validateFrame, type HelloFrame, type InvokeFrame, type RequestFrame } from "../protocol/frames.js";
import { jsonDifference, type Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import { excerpt } from "../protocol/text.js";
import { readTranscript, type Direction, type TranscriptEntry } from "./transcript.js";

/** One recorded request and the reply the host gave it (absent when the session ended first). */
export interface RecordedExchange {
  request: RequestFrame;
  reply?: Outcome;
}

/** The parts of a transcript a replay needs. */
export interface Recording {
  hello?: HelloFrame;
  invoke: InvokeFrame;
  /** The guest's requests in the order it sent them. */
  exchanges: RecordedExchange[];
  /** The guest's result; absent when the recorded session broke before it. */
  result?: Outcome;
}

/** A transcript that cannot be replayed (no invoke, a malformed host frame, a reply to an unknown id). */
export class RecordingError extends Error {
  override name = "RecordingError";
}

/** Failure code of the reply a replay sends once the guest has diverged (the run is being stopped). */
export const REPLAY_DIVERGED = "ReplayDiverged";

/**
 * Extracts the recording from transcript entries. Host entries must be valid frames (the host wrote
 * them); guest entries that are not valid frames are skipped, since they are where a recorded session
 * broke. Throws {@link RecordingError} naming the entry (1-based) when the transcript cannot be replayed.
 */
export function recordingOf(entries: readonly TranscriptEntry[]): Recording {
  let hello: HelloFrame | undefined;
  let invoke: InvokeFrame | undefined;
  let result: Outcome | undefined;
  const exchanges: RecordedExchange[] = [];
  const unanswered = new Map<number, RecordedExchange>();
  entries.forEach((entry, index) => {
    const at = `entry ${index + 1} (from ${entry.from})`;
    if (!("frame" in entry)) {
      if (entry.from === "host") throw new RecordingError(`${at} is not a frame; a host never writes that`);
      return;
    }
    const frame = validateFrame(entry.frame);
    if (typeof frame === "string") {
      if (entry.from === "host") throw new RecordingError(`${at} is not a valid frame: ${frame}`);
      return;
    }
    if (entry.from === "host") {
      if (frame.type === "invoke") {
        if (invoke !== undefined) throw new RecordingError(`${at} is a second invoke; a session has one`);
        invoke = frame;
      } else if (frame.type === "reply") {
        const exchange = unanswered.get(frame.id);
        if (exchange === undefined) throw new RecordingError(`${at} replies to request id ${frame.id}, which the guest did not send before it`);
        unanswered.delete(frame.id);
        exchange.reply = frame.outcome;
      } else {
        throw new RecordingError(`${at} is a ${frame.type} frame, which only a guest sends`);
      }
      return;
    }
    if (frame.type === "hello") hello ??= frame;
    else if (frame.type === "request") {
      const exchange = { request: frame };
      exchanges.push(exchange);
      unanswered.set(frame.id, exchange);
    } else if (frame.type === "result") result ??= frame.outcome;
  });
  if (invoke === undefined) {
    throw new RecordingError("the transcript has no invoke frame from the host, so it is not the recording of a session");
  }
  return { hello, invoke, exchanges, result };
}

/** What a replay found: a union on `ok`, with the `divergence` exactly when it is false. */
export type ReplayReport<Report extends RunReport = RunReport> = ReplayMatched<Report> | ReplayDiverged<Report>;

/** The guest made the recorded requests, in order, and returned the recorded result. */
export interface ReplayMatched<Report extends RunReport = RunReport> extends ReplayDetails<Report> {
  ok: true;
  divergence?: undefined;
}

/** The guest did something the recording does not show. */
export interface ReplayDiverged<Report extends RunReport = RunReport> extends ReplayDetails<Report> {
  ok: false;
  /** The first difference from the recording, e.g. `request #3: expected read {"path":"a"} but the guest sent read {"path":"b"}`. */
  divergence: string;
}

/** What every replay report has. */
export interface ReplayDetails<Report extends RunReport = RunReport> {
  /**
   * True when the replay itself stopped the run at the divergence (the report's failure is then
   * `Aborted`); false when the run ended on its own (the difference may have been seen during the run,
   * like a hello for another protocol, which the engine refuses by itself, or found afterwards).
   */
  stopped: boolean;
  /** Requests that matched the recording before the first divergence. */
  matchedRequests: number;
  /** Requests in the recording. */
  recordedRequests: number;
  /** The replayed run's own report (the host engine's view). */
  report: Report;
}

/** A guest command to replay against, run as a child process (the CLI's `ears replay`). */
export type ReplayCommand = Pick<GuestCommand, "command" | "args" | "cwd" | "env" | "killGraceMs" | "onStderr" | "sandbox">;

/** Options for {@link replayHost} and `replay`. */
export interface ReplayOptions {
  limits?: HostLimits;
  onLog?: (log: LogEntry) => void;
  /** Sees every frame of the replayed run (e.g. `recordTo(path).onFrame`, to record the replay itself). */
  onFrame?: (direction: Direction, line: string) => unknown;
  /** Aborting it ends the replay (the run's failure is then `Aborted`). */
  signal?: AbortSignal;
}

/** A recording given as a transcript file path, its entries, or a {@link Recording}, as a {@link Recording}. */
export async function loadRecording(recording: string | readonly TranscriptEntry[] | Recording): Promise<Recording> {
  return typeof recording === "string"
    ? recordingOf(await readTranscript(recording))
    : Array.isArray(recording)
      ? recordingOf(recording as readonly TranscriptEntry[])
      : (recording as Recording);
}

/**
 * Replays a recording against a guest command run as a child process; `replay` in the test kit also
 * takes an in-process program. Stops at the first divergence; never rejects for anything the guest does.
 */
export async function replayGuestCommand(
  recording: string | readonly TranscriptEntry[] | Recording,
  target: ReplayCommand,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  const double = replayHost(await loadRecording(recording), options);
  return double.verdict(await runGuest({ ...target, ...double.options }));
}

/**
 * The replay as host options plus a verdict, for hosts that run the guest themselves: pass `options`
 * to `runHost` or `runGuest`, then give the report to `verdict`. Used by {@link replayGuestCommand} and `replay`.
 */
export function replayHost(
  recording: Recording,
  options: ReplayOptions = {},
): { options: HostOptions; verdict<Report extends RunReport>(report: Report): ReplayReport<Report> } {
  const { exchanges } = recording;
  const stop = new AbortController();
  let divergence: string | undefined;
  let matched = 0;
  const answers = new Map<number, RecordedExchange>();
  let stopped = false;
  const diverge = (message: string, stopRun = true) => {
    if (divergence !== undefined) return;
    divergence = message;
    if (!stopRun) return;
    stopped = true;
    // Not from inside the engine's frame handling; a turn later, so the diverging request's handler has
    // answered and the guest sees a ReplayDiverged failure rather than only a closed connection.
    setImmediate(() => stop.abort(new Error(`replay diverged: ${message}`)));
  };

  const onGuestLine = (line: string) => {
    if (divergence !== undefined) return;
    let frame;
    try {
      // The engine's own decoder, so a line the engine refuses (too deep, a number beyond the double
      // range) is never compared here either; the engine reports it as a protocol violation.
      frame = decodeFrame(line);
    } catch {
      return;
    }
    if (frame.type === "hello" && recording.hello !== undefined && frame.protocol !== recording.hello.protocol) {
      // The engine refuses a protocol it does not speak on its own; the run need not be stopped.
      diverge(`hello: the recorded guest spoke protocol ${recording.hello.protocol}, but this guest speaks protocol ${frame.protocol}`, false);
    } else if (frame.type === "request") {
      const number = matched + 1;
      const expected = exchanges[matched];
      if (expected === undefined) {
        diverge(`request #${number}: the recording has no more requests (it has ${exchanges.length}), but the guest sent ${describeRequest(frame)}`);
      } else if (expected.request.name !== frame.name) {
        diverge(`request #${number}: expected ${describeRequest(expected.request)} but the guest sent ${describeRequest(frame)}`);
      } else if (firstDifference(expected.request.arguments, frame.arguments) !== undefined) {
        const difference = firstDifference(expected.request.arguments, frame.arguments, "arguments");
        diverge(`request #${number}: ${contrast(describeRequest(expected.request), `sent ${describeRequest(frame)}`, difference)}`);
      } else {
        matched = number;
        answers.set(frame.id, expected);
      }
    }
  };

  // Every name the recorded guest was allowed or asked for answers from the recording; the engine keeps
  // denying names outside `allowed` itself, exactly as in the recorded session.
  const capabilities: Capabilities = Object.create(null) as Capabilities;
  const names = new Set([...recording.invoke.allowed, ...exchanges.map((e) => e.request.name)]);
  for (const name of names) {
    capabilities[name] = (_args: Json, ctx: { id: number }) => {
      const exchange = answers.get(ctx.id);
      if (exchange === undefined) {
        return Outcome.failure(REPLAY_DIVERGED, `the replay stopped: ${divergence ?? "this request does not match the recording"}`);
      }
      answers.delete(ctx.id);
      if (exchange.reply === undefined) {
        diverge(
          `request #${exchanges.indexOf(exchange) + 1} ${describeRequest(exchange.request)} has no reply in the recording (the recorded session ended before it was answered); the replay stops here`,
        );
        return Outcome.failure(REPLAY_DIVERGED, `the replay stopped: ${divergence}`);
      }
      return exchange.reply;
    };
  }

  return {
    options: {
      allowed: recording.invoke.allowed,
      input: recording.invoke.input,
      capabilities,
      onLog: options.onLog,
      limits: options.limits,
      signal: options.signal === undefined ? stop.signal : AbortSignal.any([stop.signal, options.signal]),
      onFrame: (direction, line) => {
        if (direction === "guest") onGuestLine(line);
        return options.onFrame?.(direction, line); // its back-pressure passes through
      },
    },
    verdict(report) {
      divergence ??= endDivergence(recording, matched, report);
      const details = { stopped, matchedRequests: matched, recordedRequests: exchanges.length, report };
      // Keys in reading order, as before: ok, divergence, then the details.
      return divergence === undefined ? { ok: true, ...details } : { ok: false, divergence, ...details };
    },
  };
}

/** Differences found once the run is over: recorded requests the guest never made, and the result. */
function endDivergence(recording: Recording, matched: number, report: RunReport): string | undefined {
  const ended = report.failure === undefined ? "" : ` (the run ended: ${report.failure.code}: ${report.failure.message})`;
  const next = recording.exchanges[matched];
  if (next !== undefined) {
    const instead = report.outcome === undefined ? ended : ` and then returned ${describeOutcome(report.outcome)}`;
    return `request #${matched + 1}: expected ${describeRequest(next.request)} but the guest made only ${matched} of the ${recording.exchanges.length} recorded requests${instead}`;
  }
  const expected = recording.result;
  const actual = report.outcome;
  if (expected !== undefined && actual === undefined) {
    return `result: expected ${describeOutcome(expected)} but the guest sent no result${ended}`;
  }
  if (expected === undefined && actual !== undefined) {
    return `result: the recorded session ended without a result, but the guest returned ${describeOutcome(actual)}`;
  }
  if (expected !== undefined && actual !== undefined && !Outcome.equal(expected, actual)) {
    const difference = firstDifference(Outcome.toJson(expected), Outcome.toJson(actual));
    return `result: ${contrast(describeOutcome(expected), `returned ${describeOutcome(actual)}`, difference)}`;
  }
  return undefined;
}

/** Where two JSON values first differ (object key order ignored), or undefined when they are equal. */
function firstDifference(expected: Json | undefined, actual: Json | undefined, path = ""): string | undefined {
  const found = jsonDifference(expected, actual, path);
  if (found === undefined) return undefined;
  const show = (value: Json | undefined) => (value === undefined ? "absent" : cut(JSON.stringify(value), 80));
  const where = found.path.replace(/^\./, "");
  return `${where === "" ? "the value" : where}: recorded ${show(found.a)}, now ${show(found.b)}`;
}

/** Both versions, plus where they differ when a version had to be cut short to stay readable. */
function contrast(expected: string, actual: string, difference: string | undefined): string {
  const long = expected.includes("… (") || actual.includes("… (");
  return `expected ${expected} but the guest ${actual}${long && difference !== undefined ? `; first difference at ${difference}` : ""}`;
}

function describeRequest(request: RequestFrame): string {
  return `${request.name} ${cut(JSON.stringify(request.arguments))}`;
}

function describeOutcome(outcome: Outcome): string {
  const { status, ...rest } = Outcome.toJson(outcome);
  if (outcome.status === "failure") delete rest.code;
  return `${status}${outcome.status === "failure" ? ` ${outcome.code}` : ""} ${cut(JSON.stringify(rest))}`;
}

function cut(text: string, max = 200): string {
  return excerpt(text, max);
}
