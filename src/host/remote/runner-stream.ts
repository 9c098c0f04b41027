/**
 * The host's reading of a remote runner's stdout (see runner-lines.ts): the header taken off the front, the
 * guest's bytes passed on unchanged to `output` (the session's wire reads it), the trailer taken off the end.
 * `output` ends at the trailer, or when the runner's stdout ends without one (the connection was lost).
 */
import { PassThrough, type Readable } from "node:stream";
import { clip } from "../../protocol/text.js";
import { MAX_RUNNER_LINE_BYTES, parseHeader, parseTrailer, trailerMark, type RunnerHeader, type RunnerTrailer } from "./runner-lines.js";

type State = "header" | "guest" | "trailer" | "done";

export class RunnerStream {
  /** The guest's stdout, as the far end's guest wrote it. */
  readonly output = new PassThrough();
  header: RunnerHeader | undefined;
  trailer: RunnerTrailer | undefined;
  /** Why the stream is not a runner's: the first line was no header, or the trailer was bad. */
  problem: string | undefined;
  /** Settles once the header is read or will never be (true: a header that started a guest). */
  readonly started: Promise<boolean>;
  private settleStarted!: (started: boolean) => void;
  private state: State = "header";
  private pending: Buffer = Buffer.alloc(0);
  private mark: Buffer | undefined;

  constructor(private readonly source: Readable) {
    this.started = new Promise((settle) => (this.settleStarted = settle));
    source.on("data", (chunk: Buffer) => this.take(chunk));
    source.on("end", () => this.end());
    source.on("close", () => this.end());
    source.on("error", () => this.end());
    this.output.on("drain", () => source.resume());
  }

  private take(chunk: Buffer): void {
    let rest: Buffer = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = Buffer.alloc(0);
    while (rest.length > 0 && this.state !== "done") {
      if (this.state === "guest") rest = this.guestBytes(rest);
      else rest = this.line(rest);
    }
  }

  /** The header or the trailer: a whole line, bounded. */
  private line(bytes: Buffer): Buffer {
    const newline = bytes.indexOf(0x0a);
    if (newline < 0) {
      if (bytes.length > MAX_RUNNER_LINE_BYTES) this.fail(`its ${this.state} line is over ${MAX_RUNNER_LINE_BYTES} bytes`);
      else this.pending = bytes;
      return Buffer.alloc(0);
    }
    const text = bytes.subarray(0, newline).toString("utf8");
    if (this.state === "header") {
      const header = parseHeader(text);
      if (typeof header === "string") {
        this.fail(`its first line is not an ears runner's header (${header}): ${JSON.stringify(clip(text, 200))}`);
      } else {
        this.header = header;
        if ("refused" in header) this.finish();
        else {
          this.mark = trailerMark(header.nonce);
          this.state = "guest";
          this.settleStarted(true);
        }
      }
    } else {
      const trailer = parseTrailer(text);
      if (typeof trailer === "string") this.fail(`its trailer is not valid (${trailer})`);
      else {
        this.trailer = trailer;
        this.finish();
      }
    }
    return bytes.subarray(newline + 1);
  }

  /** Guest bytes, up to the trailer's mark; a tail that may be the start of the mark waits for the next chunk. */
  private guestBytes(bytes: Buffer): Buffer {
    const mark = this.mark!;
    const at = bytes.indexOf(mark);
    if (at >= 0) {
      this.pass(bytes.subarray(0, at));
      this.state = "trailer";
      return bytes.subarray(at + mark.length);
    }
    let keep = 0;
    for (let length = Math.min(mark.length - 1, bytes.length); length > 0; length--) {
      if (bytes.subarray(bytes.length - length).equals(mark.subarray(0, length))) {
        keep = length;
        break;
      }
    }
    this.pass(bytes.subarray(0, bytes.length - keep));
    this.pending = Buffer.from(bytes.subarray(bytes.length - keep));
    return Buffer.alloc(0);
  }

  private pass(bytes: Buffer): void {
    // The session stopped reading (a failure): the guest's bytes go nowhere, and the trailer is still read.
    if (this.output.destroyed) return;
    if (bytes.length > 0 && !this.output.write(bytes)) this.source.pause();
  }

  private fail(problem: string): void {
    this.problem ??= problem;
    this.finish();
  }

  private finish(): void {
    if (this.state === "done") return;
    this.state = "done";
    this.settleStarted(false);
    this.output.end();
    // Nothing more is wanted from the runner; read on so it is never blocked on a full pipe.
    this.source.resume();
  }

  private end(): void {
    // A tail kept as a possible mark was the guest's after all.
    if (this.state === "guest" && this.pending.length > 0) this.pass(this.pending);
    this.pending = Buffer.alloc(0);
    this.finish();
  }
}
