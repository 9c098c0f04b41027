// The host's one way to send: every frame to the guest goes out here, counted against the unread-reply
// budget until the wire has taken it, and the session's read loop waits here while the guest leaves too
// much unread. The session (invoke) and call admission (replies) both send through it.
import { frameSender, type Wire } from "../../wires/wire.js";

/** What one unread frame is counted as besides its characters, against `maxUnreadChars`. */
const UNREAD_FRAME_OVERHEAD = 256;

/** The sending half of a session: the send path, the unread-reply budget and the read loop's wake-up. */
export class Outbox {
  /** The first error a send settled with (the run's failure names it when the guest's output then ends). */
  sendError: unknown;
  /** Characters (plus a fixed overhead per frame) handed to the wire whose send has not settled (the guest has not taken them yet). */
  private unsent = 0;
  /** Wakes the read loop once the guest has taken enough of what was sent, or the run is over. */
  private resumeReading: (() => void) | undefined;
  /** Told first when the guest has read down to half the budget (call admission sends what it held back). */
  private drained: (() => void) | undefined;
  /** The wire's promise-free send, when it has one. */
  private readonly sendFrame: ((frame: string, done: (error?: Error) => void) => void) | undefined;

  constructor(
    private readonly wire: Wire,
    private readonly maxUnreadChars: number,
    /** Sees each frame before it is sent (the user's onFrame); undefined costs nothing per frame. */
    private readonly tap?: (line: string) => void,
  ) {
    this.sendFrame = frameSender(wire);
  }

  /**
   * Writes one frame to the guest, counted against the budget until its send settles. Never throws: a
   * failed send is kept in {@link sendError}; the guest's output ending then ends the run.
   */
  send(line: string): void {
    this.tap?.(line);
    // A queued frame costs more than its text (the stream's buffer entry, the callback): counting that
    // too keeps a flood of tiny replies within the budget as well as a few large ones.
    const cost = line.length + UNREAD_FRAME_OVERHEAD;
    this.unsent += cost;
    const settled = (error?: unknown) => {
      if (error !== undefined) this.sendError ??= error;
      this.unsent -= cost;
      // At half the budget or below, not just under it: reading resumes in batches, not once per frame taken.
      if (this.unsent > this.maxUnreadChars / 2) return;
      this.drained?.();
      this.wakeReader();
    };
    if (this.sendFrame !== undefined) {
      this.sendFrame(line, settled);
      return;
    }
    try {
      this.wire.send(line).then(
        () => settled(),
        (error: unknown) => settled(error ?? new Error("the send failed")),
      );
    } catch (error) {
      settled(error ?? new Error("the send failed"));
    }
  }

  /** The guest leaves more than `maxUnreadChars` unread: nothing more should be sent or started for it. */
  full(): boolean {
    return this.unsent > this.maxUnreadChars;
  }

  /** Sets what runs when the guest has read down to half the budget, before the read loop is woken. */
  whenDrained(listener: () => void): void {
    this.drained = listener;
  }

  /** Resolves at the next {@link wakeReader}: the read loop waits here while it must read nothing more. */
  readerWait(): Promise<void> {
    return new Promise<void>((resolve) => (this.resumeReading = resolve));
  }

  /** Lets a waiting read loop re-check whether it may read (the guest read, a call started, the run ended). */
  wakeReader(): void {
    const resume = this.resumeReading;
    this.resumeReading = undefined;
    resume?.();
  }
}
