/**
 * Recordings: the parts of a transcript a replay needs (the invoke, each request with its reply, the
 * result), extracted and checked once so a replay never meets a transcript it cannot follow.
 */
import { validateFrame, type HelloFrame, type InvokeFrame, type RequestFrame } from "../protocol/frames.js";
import type { Outcome } from "../protocol/outcome.js";
import { isNote, readTranscript, type TranscriptEntry } from "./transcript.js";

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
    if (isNote(entry)) return; // stderr and the report: nothing a replay answers from
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
        if (exchange === undefined) {
          throw new RecordingError(`${at} replies to request id ${frame.id}, which the guest did not send before it`);
        }
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

/** A recording given as a transcript file path, its entries, or a {@link Recording}, as a {@link Recording}. */
export async function loadRecording(recording: string | readonly TranscriptEntry[] | Recording): Promise<Recording> {
  return typeof recording === "string"
    ? recordingOf(await readTranscript(recording))
    : Array.isArray(recording)
      ? recordingOf(recording as readonly TranscriptEntry[])
      : (recording as Recording);
}
