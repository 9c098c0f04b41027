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
      let line: Buffer;
      if (this.pendingBytes === 0) {
        line = chunk.subarray(start, newline);
      } else {
        this.pending.push(chunk.subarray(start, newline));
        line = Buffer.concat(this.pending, this.pendingBytes + newline - start);
        this.pending = [];
        this.pendingBytes = 0;
      }
      start = newline + 1;
      this.emitLine(line, emit);
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

  private emitLine(bytes: Buffer, emit: (line: string) => void): void {
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 13) end--;
    if (end === 0) return;
    const body = end === bytes.length ? bytes : bytes.subarray(0, end);
    if (!isUtf8(body)) throw new LineError("not-utf8", "a frame is not valid UTF-8");
    const line = body.toString("utf8");
    // Blank (whitespace-only) lines are skipped; a frame starts with "{", so only other lines need the check.
    if (body[0] !== 0x7b && line.trim() === "") return;
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
