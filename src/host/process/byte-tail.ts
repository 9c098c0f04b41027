import { FrameQueue } from "../../wires/frame-queue.js";

/**
 * The last `maxBytes` of a byte stream (a child's stderr): chunks are kept as they come and the oldest
 * trimmed, so a chatty child costs a fixed amount of memory and is never blocked on a full pipe.
 */
export class ByteTail {
  private readonly chunks = new FrameQueue<Buffer>();
  private bytes = 0;
  /** Bytes dropped before the kept tail. */
  dropped = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer | string): void {
    let data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (data.length === 0) return;
    if (data.length >= this.maxBytes) {
      this.dropped += this.bytes + data.length - this.maxBytes;
      this.chunks.clear();
      this.bytes = 0;
      data = data.subarray(data.length - this.maxBytes);
    }
    this.chunks.push(data);
    this.bytes += data.length;
    while (this.bytes > this.maxBytes) {
      const first = this.chunks.peek()!;
      const excess = this.bytes - this.maxBytes;
      const cut = Math.min(first.length, excess);
      if (cut === first.length) this.chunks.take();
      else this.chunks.replaceOldest(first.subarray(cut));
      this.bytes -= cut;
      this.dropped += cut;
    }
  }

  /** The tail as text. A UTF-8 character cut by the trim is dropped rather than shown as U+FFFD. */
  text(): string {
    const all = Buffer.concat(this.chunks.toArray(), this.bytes);
    let start = 0;
    if (this.dropped > 0) while (start < all.length && start < 3 && (all[start]! & 0xc0) === 0x80) start++;
    return all.subarray(start).toString("utf8");
  }
}
