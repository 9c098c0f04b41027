import { FrameQueue } from "../../wires/frame-queue.js";
import type { LogEntry } from "../api/types.js";

/** Longest level kept whole when an entry must be cut (levels are short words; a long one is an attack or a bug). */
const CUT_LEVEL_BYTES = 1024;

/**
 * The newest log entries, bounded by count and by total bytes (level and content both count: both are
 * guest-controlled), so a guest that floods logs costs a fixed amount of memory. An entry larger than
 * the per-entry limit is cut to it, with a marker, instead of being kept whole. Dropping from the
 * front is O(1) amortised (a {@link FrameQueue}), and a dropped entry's strings can be collected at once.
 */
export class LogBook {
  private readonly kept = new FrameQueue<{ entry: LogEntry; size: number }>();
  private bytes = 0;
  /** Entries dropped so far. */
  dropped = 0;
  /** Bytes (level and content) of the entries dropped, plus the bytes cut from entries kept in part. */
  droppedBytes = 0;

  /** Largest entry kept whole: the smaller of the per-entry and the total byte limits. */
  private readonly maxEntryBytes: number;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    maxEntryBytes = maxBytes,
  ) {
    this.maxEntryBytes = Math.min(maxEntryBytes, maxBytes);
  }

  /** Keeps `entry` (cut to the per-entry limit when it is over it), dropping the oldest entries as needed. */
  add(entry: LogEntry): void {
    let size = logBytes(entry);
    if (size > this.maxEntryBytes) {
      const kept = cutLog(entry, this.maxEntryBytes);
      this.droppedBytes += size - kept.size;
      entry = kept.entry;
      size = kept.size;
    }
    this.kept.push({ entry, size });
    this.bytes += size;
    while (this.kept.size > this.maxEntries || this.bytes > this.maxBytes) {
      const oldest = this.kept.take()!;
      this.bytes -= oldest.size;
      this.droppedBytes += oldest.size;
      this.dropped++;
    }
  }

  /** The kept entries, oldest first. */
  list(): LogEntry[] {
    return this.kept.toArray().map((kept) => kept.entry);
  }
}

/** UTF-8 bytes of an entry's guest-controlled strings. */
function logBytes(entry: LogEntry): number {
  return Buffer.byteLength(entry.level) + Buffer.byteLength(entry.content);
}

/**
 * An entry cut so that its level and content fit in `maxBytes` (markers included where room allows):
 * the level to at most {@link CUT_LEVEL_BYTES}, the content to what is left. `cutBytes` on the entry
 * says how many bytes were removed. The kept text is copied, so the guest's huge string is not kept
 * alive by a slice of it.
 */
function cutLog(entry: LogEntry, maxBytes: number): { entry: LogEntry; size: number } {
  const levelBytes = Buffer.byteLength(entry.level);
  const contentBytes = Buffer.byteLength(entry.content);
  const level =
    levelBytes > CUT_LEVEL_BYTES || levelBytes > maxBytes ? cutText(entry.level, Math.min(CUT_LEVEL_BYTES, maxBytes)) : entry.level;
  const levelKept = Buffer.byteLength(level);
  const content = cutText(entry.content, maxBytes - levelKept);
  const size = levelKept + Buffer.byteLength(content);
  const cut: LogEntry = { level, content, atMs: entry.atMs, cutBytes: levelBytes + contentBytes - size };
  return { entry: cut, size };
}

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes, ending with a marker that says how much was cut when
 * it fits. Cuts at a character boundary (never inside a surrogate pair); the result is a fresh string.
 */
export function cutText(text: string, maxBytes: number): string {
  const total = Buffer.byteLength(text);
  if (total <= maxBytes) return text;
  const marker = ` …[cut ${total} bytes to ${maxBytes}]`;
  const room = maxBytes - Buffer.byteLength(marker);
  const keep = Math.max(0, room >= 0 ? room : maxBytes);
  // Only a prefix is encoded: `keep` bytes come from at most `keep` characters, and the guest's string
  // may be tens of MiB.
  const bytes = Buffer.from(text.slice(0, keep + 1), "utf8");
  let end = Math.min(keep, bytes.length);
  while (end > 0 && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--; // back to the start of a UTF-8 sequence
  const kept = bytes.toString("utf8", 0, end);
  return room >= 0 ? kept + marker : kept;
}
