/**
 * A first-in first-out queue of frames received but not yet taken. An array with a moving head, because
 * `Array.prototype.shift` copies the rest of the array on every call; taken slots are cleared at once so
 * a large frame is not kept alive by the queue. The host also queues its waiting calls in one.
 */
export class FrameQueue<T = string> {
  private items: (T | undefined)[] = [];
  private head = 0;

  /** Frames waiting to be taken. */
  get size(): number {
    return this.items.length - this.head;
  }

  push(frame: T): void {
    this.items.push(frame);
  }

  /** The oldest frame, or `undefined` when the queue is empty. */
  take(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const frame = this.items[this.head]!;
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) this.clear();
    return frame;
  }

  clear(): void {
    this.items.length = 0;
    this.head = 0;
  }
}
