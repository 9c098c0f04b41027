/**
 * Replay: a host double built from a recorded transcript. It sends the recorded invoke, checks each
 * request of the guest against the recording (name and arguments, in order), answers with the recorded
 * reply, and compares the final result. The host engine does all frame handling (runHost / runGuest);
 * the replay is only a set of capabilities plus checks on the frames the engine sees. The recording comes
 * from recording.ts; the sentence that reports a difference from divergence.ts.
 */
import { runGuest } from "../host/run-guest.js";
import type { Capabilities, GuestCommand, HostLimits, HostOptions, LogEntry, RunReport } from "../host/api/types.js";
import { decodeFrame } from "../protocol/frames.js";
import type { Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import { endDivergence, helloDivergence, requestDivergence, unansweredDivergence } from "./divergence.js";
import { loadRecording, type RecordedExchange, type Recording } from "./recording.js";
import type { Direction, TranscriptEntry } from "./transcript.js";

/** Failure code of the reply a replay sends once the guest has diverged (the run is being stopped). */
export const REPLAY_DIVERGED = "ReplayDiverged";

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
  const { onStderr } = target;
  // Once the replay stops the run, what the guest says is about being stopped (its result could not be
  // written: EPIPE), noise after the divergence the caller reports; report.stderr still keeps it.
  const live = onStderr === undefined ? undefined : (chunk: string) => void (double.stoppedRun() || onStderr(chunk));
  return double.verdict(await runGuest({ ...target, ...double.options, ...(live && { onStderr: live }) }));
}

/**
 * The replay as host options plus a verdict, for hosts that run the guest themselves: pass `options`
 * to `runHost` or `runGuest`, then give the report to `verdict`. Used by {@link replayGuestCommand} and `replay`.
 */
export function replayHost(
  recording: Recording,
  options: ReplayOptions = {},
): {
  options: HostOptions;
  verdict<Report extends RunReport>(report: Report): ReplayReport<Report>;
  /** True once the replay has decided to stop the run at a divergence. */
  stoppedRun(): boolean;
} {
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
    if (frame.type === "hello") {
      // The engine refuses a protocol it does not speak on its own; the run need not be stopped.
      const difference = helloDivergence(recording.hello, frame);
      if (difference !== undefined) diverge(difference, false);
    } else if (frame.type === "request") {
      const difference = requestDivergence(recording, matched, frame);
      if (difference !== undefined) diverge(difference);
      else answers.set(frame.id, exchanges[matched++]!);
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
        diverge(unansweredDivergence(exchanges.indexOf(exchange) + 1, exchange.request));
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
    stoppedRun: () => stopped,
    verdict(report) {
      divergence ??= endDivergence(recording, matched, report);
      const details = { stopped, matchedRequests: matched, recordedRequests: exchanges.length, report };
      // Keys in reading order, as before: ok, divergence, then the details.
      return divergence === undefined ? { ok: true, ...details } : { ok: false, divergence, ...details };
    },
  };
}
