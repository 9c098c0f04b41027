import { TransportError } from "../protocol/errors.js";
import { framesArrived, framesTaken, type CountsFrames, type Wire } from "./wire.js";
import { FrameQueue } from "./frame-queue.js";

/**
 * One end of an in-memory linked pair. Frames are strings handed over without copying; `receive`
 * returns them in order and `undefined` once the peer has ended its side.
 */
export class MemoryWire implements Wire, CountsFrames {
  private peer!: MemoryWire;
  private readonly queue = new FrameQueue();
  private waiting: ((frame: string | undefined) => void) | undefined;
  /** The peer will send no more (its `end` or `close` was called). */
  private inputEnded = false;
  /** This end will send no more. */
  private outputEnded = false;
  /** This end stopped reading; the peer's sends now fail, like EPIPE. */
  private readingStopped = false;
  private arrived = 0;
  private taken = 0;

  /** Frames that have arrived at this end (see `framesArrived`); not part of the public API. */
  get [framesArrived](): number {
    return this.arrived;
  }

  /** Frames `receive` has returned (see `framesArrived`); not part of the public API. */
  get [framesTaken](): number {
    return this.taken;
  }

  /** @internal Use {@link createLinkedPair}. */
  static link(a: MemoryWire, b: MemoryWire): void {
    a.peer = b;
    b.peer = a;
  }

  send(frame: string): Promise<void> {
    if (typeof frame !== "string") return Promise.reject(new TypeError("a frame must be a string"));
    if (this.outputEnded) {
      return Promise.reject(new TransportError("this end of the wire is closed; the frame was not sent", { kind: "write-failed" }));
    }
    if (this.peer.readingStopped) {
      return Promise.reject(
        new TransportError("the other end of the wire is closed (EPIPE); the frame was not delivered", { kind: "write-failed" }),
      );
    }
    this.peer.deliver(frame);
    return Promise.resolve();
  }

  receive(): Promise<string | undefined> {
    const frame = this.queue.take();
    if (frame !== undefined) {
      this.taken++;
      return Promise.resolve(frame);
    }
    if (this.inputEnded || this.readingStopped) return Promise.resolve(undefined);
    if (this.waiting !== undefined) return Promise.reject(new Error("receive() called again before the previous call settled"));
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  /** Half-close: the peer reads the frames already sent, then end of stream. This end can still receive. */
  end(): void {
    if (this.outputEnded) return;
    this.outputEnded = true;
    this.peer.endInput();
  }

  /** Ends this side's output and stops reading: the peer sees end of stream, and its later sends fail. */
  close(): void {
    this.end();
    this.readingStopped = true;
    this.queue.clear();
    this.wake(undefined);
  }

  private deliver(frame: string): void {
    this.arrived++;
    if (this.waiting !== undefined) {
      this.taken++;
      this.wake(frame);
    } else this.queue.push(frame);
  }

  private endInput(): void {
    this.inputEnded = true;
    if (this.queue.size === 0) this.wake(undefined);
  }

  private wake(frame: string | undefined): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(frame);
  }
}

/**
 * Two connected in-memory wires, for tests and in-process hosts: what one sends, the other receives.
 * Returns `[guest, host]`; the two ends are symmetric, the names only say which to give to whom.
 */
export function createLinkedPair(): [guest: MemoryWire, host: MemoryWire] {
  const guest = new MemoryWire();
  const host = new MemoryWire();
  MemoryWire.link(guest, host);
  return [guest, host];
}
