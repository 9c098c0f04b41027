/**
 * The transport seam. A wire moves whole frames: one line of JSON text per call, without the newline.
 * The runtime calls `send` in frame order, sometimes before the previous send settled, so a wire must
 * deliver frames in the order `send` was called. A user-written Wire with only `send` and `receive`
 * works with `serve`.
 */
export interface Wire {
  /** Writes one frame. Settles when the frame is handed to the transport; rejects when it cannot be written. */
  send(frame: string): Promise<void>;
  /** Returns the next frame, or `undefined` at the end of the stream. Rejects when the stream is broken. */
  receive(): Promise<string | undefined>;
  /**
   * Called once when the session is over: release the transport so the process can exit. `failure`
   * is set when the session broke (no result was written), for the wire to report.
   */
  close?(failure?: Error): Promise<void> | void;
}

/**
 * Not part of the public API (no entry point exports it). Implemented by the package's own stream
 * wires: sends one frame like `send`, but reports to `done` instead of making a promise (`done()` once
 * written, `done(error)` when it cannot be). The per-call paths of the guest and the host use it when
 * a wire has it: a promise and its handlers per frame were a measurable part of a call's cost. `done`
 * is never called during the call itself.
 */
export const sendFrame = Symbol("ears.sendFrame");

/** A wire with the promise-free send of {@link sendFrame}. */
export interface SendsFrames {
  [sendFrame](frame: string, done: (error?: Error) => void): void;
}

/**
 * Not part of the public API (no entry point exports it; not marked internal, so that the declarations
 * of the wires that implement it stay valid). Implemented by the package's own wires: how many frames have arrived at this end (read from
 * the transport, whether or not `receive` returned them yet) and how many `receive` has returned. The
 * guest uses them to refuse a reply that had arrived before its request was written (PROTOCOL.md
 * section 5): the frame `receive` just returned is number `[framesTaken]`, and it arrived before a
 * request when that number is at most `[framesArrived]` read when the request was written.
 */
export const framesArrived = Symbol("ears.framesArrived");
/** Not part of the public API. See {@link framesArrived}. */
export const framesTaken = Symbol("ears.framesTaken");

/** A wire that counts its frames (see {@link framesArrived}). */
export interface CountsFrames {
  readonly [framesArrived]: number;
  readonly [framesTaken]: number;
}

/** The wire as a {@link CountsFrames}, or `undefined` when it does not count its frames. */
export function frameCounter(wire: Wire): CountsFrames | undefined {
  const counts = wire as Partial<CountsFrames>;
  return typeof counts[framesArrived] === "number" && typeof counts[framesTaken] === "number" ? (counts as CountsFrames) : undefined;
}

/** The wire's promise-free send, bound to it, or `undefined` when the wire has none. */
export function frameSender(wire: Wire): ((frame: string, done: (error?: Error) => void) => void) | undefined {
  const send = (wire as Partial<SendsFrames>)[sendFrame];
  return typeof send === "function" ? send.bind(wire) : undefined;
}

/**
 * A wire that owns the process (the stdio wire) can watch for errors that escape the program: an
 * exception thrown from a timer or event callback, or a rejected promise nobody handled. Node would
 * crash with no result frame; `serve` instead ends the run with a `GuestFailed` result. The session
 * says how an escaped error is described (`describe`), so the wire knows nothing of the session's text.
 */
export const watchEscapes = Symbol("ears.watchEscapes");

/** How an error escaped: thrown from a callback, or a rejection nobody handled. */
export type EscapeOrigin = "uncaughtException" | "unhandledRejection";

/** Implemented by wires that can report escaped errors; the promise rejects with the first one, described. */
export interface WatchesEscapes {
  [watchEscapes](describe: (error: unknown, origin: EscapeOrigin) => Error): Promise<never>;
}

/**
 * A wire that owns the process's stdout (the stdio wire) captures what the program writes there, so the
 * stream stays pure frames. The wire neither reads nor builds frames: it hands each captured piece to the
 * session's `sink` (the session turns it into a `log` frame), what was captured before the session
 * started first, in order. Calling the returned function ends the routing (the session is about to send its
 * result): from then on captured output goes to stderr, as it does when the session never started.
 */
export const routeOutput = Symbol("ears.routeOutput");

/** Implemented by wires that capture the process's stdout; see {@link routeOutput}. */
export interface RoutesOutput {
  [routeOutput](sink: (level: string, content: string) => void): () => void;
}
