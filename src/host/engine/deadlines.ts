import { FrameQueue } from "../../wires/frame-queue.js";

/** Something with a deadline that may be settled (answered, dropped) before the deadline passes. */
export interface Deadline {
  /** When it expires, on the queue's clock. */
  readonly due: number;
  /** Settled items are skipped: they never expire. */
  readonly settled: boolean;
}

/**
 * Deadlines watched by one timer instead of one timer each. Items must be added in the order of their
 * deadlines (every call of a session has the same timeout, so the call started first is due first):
 * the timer is armed for the head only, expires the unsettled items whose deadline has passed, skips
 * settled ones, and re-arms for the next head. Adding and settling an item creates no timer while one
 * is armed, which is what makes a call cheap when it is answered in microseconds.
 */
export class DeadlineQueue<T extends Deadline> {
  private readonly items = new FrameQueue<T>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    /** The clock `due` is measured on, in milliseconds. */
    private readonly now: () => number,
    /** Called once for each unsettled item whose deadline has passed, in order. */
    private readonly expire: (item: T) => void,
  ) {}

  /** Adds an item; its `due` must not be earlier than that of any item added before. */
  add(item: T): void {
    this.items.push(item);
    if (this.timer === undefined) this.arm(item.due);
  }

  /**
   * Forgets the settled items at the head. Call it after settling an item, so that a session answering
   * its calls in order keeps the queue near empty instead of holding every call until its deadline.
   */
  trim(): void {
    while (this.items.peek()?.settled) this.items.take();
  }

  /** Forgets every item and stops the timer. */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.items.clear();
  }

  private arm(due: number): void {
    this.timer = setTimeout(this.fire, Math.max(0, due - this.now()));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const now = this.now();
    for (let item = this.items.peek(); item !== undefined; item = this.items.peek()) {
      if (!item.settled && item.due > now) break;
      this.items.take();
      if (!item.settled) this.expire(item);
    }
    // The armed timer may have been for an item settled long ago (it is not cleared on settling); the
    // head now is the earliest deadline still open.
    const next = this.items.peek();
    if (next !== undefined && this.timer === undefined) this.arm(next.due);
  };
}
