/**
 * A first-in first-out queue: an array with a moving head, because `Array.prototype.shift` copies the
 * rest of the array on every call. Taken slots are cleared at once so a large item (a 64 MiB frame) is
 * not kept alive by the queue, and the array is compacted when the queue empties or the head has passed
 * half of it. The one such queue in the package: frames received but not taken (the wires), calls
 * waiting to start and call deadlines (the host), the log book and the stderr tail.
 */
export class FrameQueue<T = string> {
  private items: (T | undefined)[] = [];
  private head = 0;

  /** Items waiting to be taken. */
  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item without taking it, or `undefined` when the queue is empty. */
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** The oldest item, or `undefined` when the queue is empty. */
  take(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.items[this.head++] = undefined;
    this.compact();
    return item;
  }

  /** Replaces the oldest item (the stderr tail trims its first chunk in place); a no-op when empty. */
  replaceOldest(item: T): void {
    if (this.head < this.items.length) this.items[this.head] = item;
  }

  /** The items, oldest first, as a new array. */
  toArray(): T[] {
    return this.items.slice(this.head) as T[];
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }

  private compact(): void {
    if (this.head === this.items.length) this.clear();
    else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
