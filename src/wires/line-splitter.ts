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
 * Cuts a byte stream into lines, in time linear in the input: each chunk is scanned once for `\n`,
 * partial lines are kept as a list of chunks and joined once when their newline arrives (split2 and the
 * MCP SDK's ReadBuffer rescan or re-copy the pending data on every chunk, which is quadratic on long
 * lines). Lines are decoded from whole bytes, so a UTF-8 character split across chunks is safe; a
 * trailing `\r` is dropped; blank and whitespace-only lines are skipped; a UTF-8 byte order mark at
 * the very start is skipped. The byte cap is enforced before anything beyond it is buffered.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private atStart = true;

  constructor(
    /** Largest line accepted, in bytes, without its `\n` (a trailing `\r` counts). */
    readonly maxLineBytes: number,
  ) {}

  /** Bytes held for an unfinished line (never more than `maxLineBytes`). */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }

  /** Feeds a chunk; calls `emit` for every complete line. Throws {@link LineError}; after that the splitter is unusable. */
  push(chunk: Buffer, emit: (line: string) => void): void {
    if (this.atStart) {
      // Hold back up to two bytes until it is clear whether the stream opens with a BOM.
      const data = this.pendingBytes > 0 ? Buffer.concat([...this.pending, chunk]) : chunk;
      this.pending = [];
      this.pendingBytes = 0;
      let bom = 0;
      while (bom < 3 && bom < data.length && data[bom] === BOM[bom]) bom++;
      if (bom === data.length && bom < 3) {
        this.pending = [data];
        this.pendingBytes = data.length;
        return;
      }
      this.atStart = false;
      chunk = bom === 3 ? data.subarray(3) : data;
    }
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      if (newline < 0) {
        const rest = chunk.length - start;
        this.guard(this.pendingBytes + rest);
        this.pending.push(start === 0 ? chunk : chunk.subarray(start));
        this.pendingBytes += rest;
        return;
      }
      this.guard(this.pendingBytes + newline - start);
      if (this.pendingBytes === 0) {
        this.emitLine(chunk, start, newline, emit);
      } else {
        this.pending.push(chunk.subarray(start, newline));
        const line = Buffer.concat(this.pending, this.pendingBytes + newline - start);
        this.pending = [];
        this.pendingBytes = 0;
        this.emitLine(line, 0, line.length, emit);
      }
      start = newline + 1;
    }
  }

  /** Ends the input. Throws {@link LineError} `truncated` when bytes without a final newline remain. */
  end(): void {
    if (this.pendingBytes === 0) return;
    const held = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    if (held.toString("utf8").trim() === "") return;
    throw new LineError(
      "truncated",
      `the stream ended in the middle of a frame (${held.length} bytes without a final newline)`,
    );
  }

  /** Emits `bytes[start, end)` as a line (a trailing `\r` dropped, blank lines skipped). */
  private emitLine(bytes: Buffer, start: number, end: number, emit: (line: string) => void): void {
    if (end > start && bytes[end - 1] === 13) end--;
    if (end === start) return;
    const line = bytes.toString("utf8", start, end);
    // The decoder turns every invalid sequence into U+FFFD, so a line without one was valid UTF-8 and
    // needs no second pass over its bytes (the search is instant in a one-byte string).
    if (line.includes("\uFFFD") && !isUtf8(bytes.subarray(start, end))) throw new LineError("not-utf8", "a frame is not valid UTF-8");
    // Blank (whitespace-only) lines are skipped; a frame starts with "{", so only other lines need the check.
    if (bytes[start] !== 0x7b && line.trim() === "") return;
    emit(line);
  }

  private guard(bytes: number): void {
    if (bytes > this.maxLineBytes) {
      this.pending = [];
      this.pendingBytes = 0;
      throw new LineError("oversized", `a frame exceeds the ${this.maxLineBytes}-byte limit`);
    }
  }
}

const BOM = [0xef, 0xbb, 0xbf];
