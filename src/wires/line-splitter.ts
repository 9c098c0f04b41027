import { isUtf8 } from "node:buffer";

/** What a {@link LineSplitter} found wrong with its input. */
export type LineErrorKind = "oversized" | "not-utf8" | "truncated";

/** A framing error: the byte stream cannot be cut into valid UTF-8 lines. */
export class LineError extends Error {
  override name = "LineError";
  constructor(
    readonly kind: LineErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Cuts a byte stream into lines, in time linear in the input: each chunk is scanned once for `\n`. A
 * line inside one chunk is decoded straight from it. The bytes of a line spread over several chunks
 * are copied, as they arrive, into one buffer (grown fourfold, never past the cap) and decoded from
 * it once at the newline (split2 and the MCP SDK's ReadBuffer rescan or re-copy the pending data on
 * every chunk, which is quadratic on long lines). Lines are decoded from whole bytes, so a UTF-8
 * character split across chunks is safe; invalid UTF-8 is an error, never replaced; a trailing `\r` is
 * dropped; blank and whitespace-only lines are skipped; a UTF-8 byte order mark at the very start is
 * skipped. The byte cap is enforced before anything beyond it is buffered.
 *
 * Memory of long lines (a 64 MiB frame, test/memory/host-memory.test.ts). The stream's chunks are
 * copied, not held: held chunks live long enough to reach V8's old generation, and then stay allocated,
 * with the copy that joins them, until a full collection (20 frames of 64 MiB peaked at 553 MiB that way,
 * 330-340 MiB copied). The buffer of a line over {@link KEPT_BUFFER_BYTES} is dropped after the line rather
 * than kept for the next one: a kept 64 MiB buffer means no new external memory per frame, and external
 * memory growth is what makes V8 collect the previous frame's large strings early (kept, the same flood
 * peaked at 850 MiB).
 */
export class LineSplitter {
  /** The unfinished line's bytes are `held[0, heldBytes)`; the buffer is reused unless it grew past {@link KEPT_BUFFER_BYTES}. */
  private held: Buffer = EMPTY;
  private heldBytes = 0;
  private atStart = true;

  constructor(
    /** Largest line accepted, in bytes, without its `\n` (a trailing `\r` counts). */
    readonly maxLineBytes: number,
  ) {}

  /** Bytes held for an unfinished line (never more than `maxLineBytes`). */
  get bufferedBytes(): number {
    return this.heldBytes;
  }

  /** Feeds a chunk; calls `emit` for every complete line. Throws {@link LineError}; after that the splitter is unusable. */
  push(chunk: Buffer, emit: (line: string) => void): void {
    if (this.atStart) {
      // Hold back up to two bytes until it is clear whether the stream opens with a BOM.
      const data = this.heldBytes > 0 ? Buffer.concat([this.held.subarray(0, this.heldBytes), chunk]) : chunk;
      this.heldBytes = 0;
      let bom = 0;
      while (bom < 3 && bom < data.length && data[bom] === BOM[bom]) bom++;
      if (bom === data.length && bom < 3) {
        this.hold(data, 0, data.length);
        return;
      }
      this.atStart = false;
      chunk = bom === 3 ? data.subarray(3) : data;
    }
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      if (newline < 0) {
        this.guard(this.heldBytes + chunk.length - start);
        this.hold(chunk, start, chunk.length);
        return;
      }
      this.guard(this.heldBytes + newline - start);
      if (this.heldBytes === 0) {
        this.emitLine(chunk, start, newline, emit);
      } else {
        this.hold(chunk, start, newline);
        const length = this.heldBytes;
        this.heldBytes = 0;
        this.emitHeld(length, emit);
      }
      start = newline + 1;
    }
  }

  /** Ends the input. Throws {@link LineError} `truncated` when bytes without a final newline remain. */
  end(): void {
    if (this.heldBytes === 0) return;
    const held = this.held.toString("utf8", 0, this.heldBytes);
    const bytes = this.heldBytes;
    this.release();
    if (held.trim() === "") return;
    throw new LineError("truncated", `the stream ended in the middle of a frame (${bytes} bytes without a final newline)`);
  }

  /**
   * Copies `chunk[start, end)` after the held bytes, growing the buffer when it is full: fourfold (fewer
   * copies and freshly touched pages than doubling; the untouched rest of a large buffer is address
   * space, not resident memory), never past the cap.
   */
  private hold(chunk: Buffer, start: number, end: number): void {
    const needed = this.heldBytes + end - start;
    if (needed > this.held.length) {
      let size = Math.max(this.held.length * 4, MIN_HELD_BYTES);
      while (size < needed) size *= 4;
      // Uninitialised memory is fine: only `[0, heldBytes)` is ever read, and it is written first.
      const grown = Buffer.allocUnsafeSlow(Math.min(size, Math.max(needed, this.maxLineBytes)));
      this.held.copy(grown, 0, 0, this.heldBytes);
      this.held = grown;
    }
    this.heldBytes += chunk.copy(this.held, this.heldBytes, start, end);
  }

  /** Emits the held line `held[0, length)`, then drops the buffer if it is large (see the class notes). */
  private emitHeld(length: number, emit: (line: string) => void): void {
    const held = this.held;
    if (held.length > KEPT_BUFFER_BYTES) this.release();
    this.emitLine(held, 0, length, emit);
  }

  /** Drops the held buffer (after a long line, at the end of the input, after an error). */
  private release(): void {
    this.held = EMPTY;
    this.heldBytes = 0;
  }

  /** Emits `bytes[start, end)` as a line (a trailing `\r` dropped, blank lines skipped). */
  private emitLine(bytes: Buffer, start: number, end: number, emit: (line: string) => void): void {
    if (end > start && bytes[end - 1] === 13) end--;
    if (end === start) return;
    const line = bytes.toString("utf8", start, end);
    // The decoder turns every invalid sequence into U+FFFD, so a line without one was valid UTF-8 and
    // needs no second pass over its bytes (the search is instant in a one-byte string).
    if (line.includes("\uFFFD") && !isUtf8(bytes.subarray(start, end))) {
      this.release();
      throw new LineError("not-utf8", "a frame is not valid UTF-8");
    }
    // Blank (whitespace-only) lines are skipped; a frame starts with "{", so only other lines need the check.
    if (bytes[start] !== 0x7b && line.trim() === "") return;
    emit(line);
  }

  private guard(bytes: number): void {
    if (bytes > this.maxLineBytes) {
      this.release();
      throw new LineError("oversized", `a frame exceeds the ${this.maxLineBytes}-byte limit`);
    }
  }
}

const BOM = [0xef, 0xbb, 0xbf];
const EMPTY = Buffer.alloc(0);
/** The held buffer's first size: one pipe read (a line cut by a chunk's end is usually short). */
const MIN_HELD_BYTES = 64 * 1024;

/** The largest held buffer kept for the next line (a larger one is dropped after its line). */
const KEPT_BUFFER_BYTES = 1024 * 1024;
