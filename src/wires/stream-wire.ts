// A wire over any pair of byte streams: NDJSON line framing, back-pressure, sliced writes of large frames.
import type { Readable, Writable } from "node:stream";
import { TransportError } from "../protocol/errors.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../protocol/frames.js";
import { LineError, LineSplitter } from "./line-splitter.js";
import { FrameQueue } from "./frame-queue.js";
import { framesArrived, framesTaken, sendFrame, type CountsFrames, type SendsFrames, type Wire } from "./wire.js";

/** Options for {@link stdio} and {@link streamWire}. */
export interface StdioOptions {
  /** Where frames come from. Default `process.stdin`. */
  input?: Readable;
  /** Where frames go. Default `process.stdout`. */
  output?: Writable;
  /** Largest frame accepted, in bytes. Default 64 MiB. A larger frame breaks the session (no resync). */
  maxFrameBytes?: number;
}

// Lines decoded but not yet received; past this the input is paused until the reader catches up.
const QUEUE_HIGH_WATER = 1024;
// The same in characters: a count alone would let 1024 lines of 64 MiB wait (a reader that stopped
// taking frames, such as a host waiting for its guest to read replies, must not keep buffering them).
const QUEUE_HIGH_WATER_CHARS = 16 * 1024 * 1024;

/** Frames longer than this (in UTF-16 code units, 1 Mi) are written in slices of at most this length. */
const WRITE_SLICE_CHARS = 1024 * 1024;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A wire over a pair of byte streams: NDJSON framing, `\n` only on output (never `os.EOL`), `\n` or
 * `\r\n` on input. Reading starts on the first `receive`. Stream errors are turned into rejected
 * sends and receives, never thrown from a stream callback.
 */
export class StreamWire implements Wire, SendsFrames, CountsFrames {
  private readonly splitter: LineSplitter;
  private readonly lines = new FrameQueue();
  private waiting: { resolve(line: string | undefined): void; reject(error: unknown): void } | undefined;
  private readError: TransportError | undefined;
  private ended = false;
  private reading = false;
  private closed = false;
  private writeError: TransportError | undefined;
  private arrived = 0;
  private taken = 0;
  /** Characters of the lines in `lines`. */
  private queuedChars = 0;
  private readonly onData = (chunk: Buffer | string) => this.take(chunk);
  private readonly onEnd = () => this.finishInput();
  private readonly onInputError = (error: Error) =>
    this.failRead(new TransportError(`reading from the host failed: ${error.message}`, { kind: "closed", cause: error }));
  /** A failed slice of a large frame is reported by the frame's last write, which fails too. */
  private readonly onSliceWritten = (error?: Error | null) => {
    if (error) this.onOutputError(error);
  };
  private readonly onOutputError = (error: Error) => {
    this.writeError ??= new TransportError(`writing to the host failed (${(error as NodeJS.ErrnoException).code ?? error.message})`, {
      kind: "write-failed",
      mayHaveExecuted: true,
      cause: error,
    });
  };

  constructor(
    protected readonly input: Readable,
    protected readonly output: Writable,
    maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
    /** Writes one string to the output; the stdio wire passes the writer saved before stdout was captured. */
    protected readonly write: (text: string, done: (error?: Error | null) => void) => void = (text, done) => {
      output.write(text, done);
    },
  ) {
    if (!(Number.isInteger(maxFrameBytes) && maxFrameBytes > 0)) {
      throw new RangeError(`maxFrameBytes must be a positive integer, got ${maxFrameBytes}`);
    }
    this.splitter = new LineSplitter(maxFrameBytes);
    // An 'error' event without a listener would crash the process; these are removed on close.
    input.on("error", this.onInputError);
    output.on("error", this.onOutputError);
  }

  send(frame: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this[sendFrame](frame, (error) => (error === undefined ? resolve() : reject(error)));
    });
  }

  /** {@link send} without the promise (see `sendFrame`); not part of the public API. */
  [sendFrame](frame: string, done: (error?: Error) => void): void {
    let refused = this.writeError;
    if (refused === undefined && this.closed) {
      refused = new TransportError("the wire is closed; the frame was not sent", { kind: "write-failed" });
    } else if (refused === undefined && (this.output.destroyed || this.output.writableEnded)) {
      refused = this.writeError = new TransportError("the output stream is closed", { kind: "write-failed" });
    }
    if (refused !== undefined) {
      const error = refused;
      queueMicrotask(() => done(error)); // reported when a rejected promise would be, never during the call
      return;
    }
    const written = (error?: Error | null) => {
      if (error) {
        this.onOutputError(error);
        done(this.writeError);
      } else done();
    };
    if (frame.length <= WRITE_SLICE_CHARS) {
      this.write(`${frame}\n`, written); // one write: a small frame reaches the pipe whole
      return;
    }
    // A large frame is written in slices, then its newline: `${frame}\n` would be a new string that
    // the stream flattens into one more full copy of the frame before converting it to bytes.
    for (let start = 0; start < frame.length;) {
      let end = Math.min(start + WRITE_SLICE_CHARS, frame.length);
      if (end < frame.length && isHighSurrogate(frame.charCodeAt(end - 1))) end--; // keep each pair whole
      this.write(frame.slice(start, end), this.onSliceWritten);
      start = end;
    }
    this.write("\n", written);
  }

  /** Frames that have arrived from the input (see `framesArrived`); not part of the public API. */
  get [framesArrived](): number {
    return this.arrived;
  }

  /** Frames `receive` has returned (see `framesArrived`); not part of the public API. */
  get [framesTaken](): number {
    return this.taken;
  }

  receive(): Promise<string | undefined> {
    const line = this.lines.take();
    if (line !== undefined) {
      this.queuedChars -= line.length;
      this.taken++;
      if (
        this.reading &&
        this.input.isPaused() &&
        this.lines.size < QUEUE_HIGH_WATER / 2 &&
        this.queuedChars < QUEUE_HIGH_WATER_CHARS / 2
      ) {
        this.input.resume();
      }
      return Promise.resolve(line);
    }
    if (this.readError !== undefined) return Promise.reject(this.readError);
    if (this.ended || this.closed) return Promise.resolve(undefined);
    if (this.waiting !== undefined) return Promise.reject(new Error("receive() called again before the previous call settled"));
    this.startReading();
    if (this.ended) return this.receive();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  async close(failure?: Error): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopReading();
    this.waiting?.resolve(undefined);
    this.waiting = undefined;
    this.input.off("error", this.onInputError);
    this.input.on("error", () => {}); // late errors after close are of no interest but must not crash
    await this.release(failure);
  }

  /** Releases the streams; the process-bound subclass overrides this. */
  protected async release(_failure?: Error): Promise<void> {
    if (!this.output.writableEnded && !this.output.destroyed) {
      await new Promise<void>((resolve) => this.output.end(resolve));
    }
    this.input.destroy();
  }

  private startReading(): void {
    if (this.reading) return;
    this.reading = true;
    if (this.input.readableEnded || this.input.destroyed) {
      this.finishInput();
      return;
    }
    this.input.on("data", this.onData);
    this.input.on("end", this.onEnd);
    this.input.on("close", this.onEnd);
  }

  private stopReading(): void {
    this.input.off("data", this.onData);
    this.input.off("end", this.onEnd);
    this.input.off("close", this.onEnd);
    this.input.pause();
  }

  private take(chunk: Buffer | string): void {
    if (this.readError !== undefined || this.ended) return;
    try {
      this.splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk, this.deliver);
    } catch (error) {
      this.failRead(lineFailure(error));
      return;
    }
    if (this.lines.size >= QUEUE_HIGH_WATER || this.queuedChars >= QUEUE_HIGH_WATER_CHARS) this.input.pause();
  }

  private readonly deliver = (line: string): void => {
    this.arrived++;
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.taken++;
      this.waiting = undefined;
      waiting.resolve(line);
    } else {
      this.lines.push(line);
      this.queuedChars += line.length;
    }
  };

  private finishInput(): void {
    if (this.ended || this.readError !== undefined) return;
    try {
      this.splitter.end();
    } catch (error) {
      this.failRead(lineFailure(error));
      return;
    }
    this.ended = true;
    this.stopReading();
    this.waiting?.resolve(undefined);
    this.waiting = undefined;
  }

  private failRead(error: TransportError): void {
    if (this.readError !== undefined) return;
    this.readError = error;
    this.stopReading();
    if (this.lines.size === 0) {
      this.waiting?.reject(error);
      this.waiting = undefined;
    }
  }
}

function lineFailure(error: unknown): TransportError {
  if (error instanceof LineError) {
    const kind = error.kind === "oversized" ? "oversized" : error.kind === "truncated" ? "truncated" : "malformed";
    return new TransportError(error.message, { kind, cause: error });
  }
  return new TransportError(`reading from the host failed: ${String(error)}`, { kind: "closed", cause: error });
}

/** A wire over any pair of streams (a child's stdout and stdin, PassThrough pairs in tests). No console capture. */
export function streamWire(options: Required<Pick<StdioOptions, "input" | "output">> & Pick<StdioOptions, "maxFrameBytes">): StreamWire {
  return new StreamWire(options.input, options.output, options.maxFrameBytes);
}
