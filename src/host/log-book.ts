import type { LogEntry } from "./types.js";

/**
 * The newest log entries, bounded by count and by total content bytes, so a guest that floods logs
 * costs a fixed amount of memory. Dropping from the front is O(1) amortised (an index, compacted now
 * and then) rather than `Array.shift`, which is linear per call.
 */
export class LogBook {
  private entries: LogEntry[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  /** Entries dropped so far. */
  dropped = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  add(entry: LogEntry): void {
    const size = Buffer.byteLength(entry.content);
    this.entries.push(entry);
    this.sizes.push(size);
    this.bytes += size;
    // The newest entry is always kept, even alone over the byte budget (it is at most one frame).
    while (this.entries.length - this.head > 1 && (this.entries.length - this.head > this.maxEntries || this.bytes > this.maxBytes)) {
      this.bytes -= this.sizes[this.head]!;
      this.head++;
      this.dropped++;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  /** The kept entries, oldest first. */
  list(): LogEntry[] {
    return this.entries.slice(this.head);
  }
}
