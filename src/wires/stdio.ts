// The guest's wire on its own process: stdin and stdout, stdout captured for the session, escaped errors watched.
import { captureStdout } from "./stdout-capture.js";
import { StreamWire, type StdioOptions } from "./stream-wire.js";
import { routeOutput, watchEscapes, type EscapeOrigin, type RoutesOutput, type WatchesEscapes, type Wire } from "./wire.js";

export { StreamWire, streamWire, type StdioOptions } from "./stream-wire.js";

/**
 * The guest's wire on the process's own stdin and stdout. While it lives, everything the program
 * writes to stdout (`console.*`, `process.stdout.write`) is captured and handed to the session, which
 * sends it as `log` frames (held until the session asks for it, after its `hello`); after the session
 * ends it goes to stderr. Closing it releases stdin so the
 * process exits on its own; when the session broke, it writes one `ears: …` line to stderr and sets
 * `process.exitCode = 1`. It never calls `process.exit`, so nothing written is lost.
 */
class ProcessWire extends StreamWire implements WatchesEscapes, RoutesOutput {
  /** Where captured output goes while a session routes it; undefined before and after. */
  private sink: ((level: string, content: string) => void) | undefined;
  /** True once the session stopped routing or the wire was released: captured output goes to stderr. */
  private done = false;
  /** Output captured before a session asked for it, handed over first. */
  private readonly early: { level: string; content: string }[] = [];
  private escapes: Promise<never> | undefined;

  constructor(maxFrameBytes: number | undefined) {
    // The raw writer is an argument of super(), so capture starts before `this` may be named: the
    // callback reaches the wire through this holder, filled in once super() returns.
    const owner: { wire?: ProcessWire } = {};
    const rawWrite = captureStdout((level, content) => owner.wire?.captured(level, content));
    super(process.stdin, process.stdout, maxFrameBytes, (text, done) => {
      rawWrite(text, done);
    });
    owner.wire = this;
  }

  [routeOutput](sink: (level: string, content: string) => void): () => void {
    if (!this.done) {
      this.sink = sink;
      for (const { level, content } of this.early.splice(0)) sink(level, content);
    }
    return () => {
      this.done = true;
      this.sink = undefined;
    };
  }

  /**
   * Watches the process for errors that escape the program while it is served. The first one rejects
   * the returned promise (serve turns it into a GuestFailed result); later ones go where captured output
   * goes (the session's `error` logs, after the result stderr). The process keeps Node's exit-status rules otherwise.
   */
  [watchEscapes](describe: (error: unknown, origin: EscapeOrigin) => Error): Promise<never> {
    this.escapes ??= new Promise<never>((_, reject) => {
      let first = true;
      const escaped = (error: unknown, origin: EscapeOrigin) => {
        const failure = describe(error, origin);
        if (first && !this.done) {
          first = false;
          reject(failure);
        } else this.captured("error", failure.stack ?? failure.message);
      };
      process.on("uncaughtException", (error, origin) => escaped(error, origin));
      process.on("unhandledRejection", (reason) => escaped(reason, "unhandledRejection"));
    });
    this.escapes.catch(() => {});
    return this.escapes;
  }

  private captured(level: string, content: string): void {
    if (this.done) process.stderr.write(`${content}\n`);
    else if (this.sink !== undefined) this.sink(level, content);
    else this.early.push({ level, content });
  }

  protected override async release(failure?: Error): Promise<void> {
    this.done = true;
    // stdout cannot be ended; every frame's write callback has already fired, so it is flushed.
    this.input.destroy();
    // Deno keeps a read of fd 0 pending after destroy() once stdin has delivered data, which keeps the
    // process alive while the host holds stdin open (test/protocol/vectors.test.ts, oversized-reply under deno).
    closeDenoStdin();
    if (failure !== undefined) {
      process.stderr.write(`ears: ${failure.message}\n`);
      process.exitCode = 1;
    }
  }
}

/** The default transport: stdin and stdout of this process (or the given streams, for tests). */
export function stdio(options: StdioOptions = {}): Wire {
  if (options.input !== undefined || options.output !== undefined) {
    return new StreamWire(options.input ?? process.stdin, options.output ?? process.stdout, options.maxFrameBytes);
  }
  return new ProcessWire(options.maxFrameBytes);
}

/** Closes Deno's own stdin resource, when running under Deno; a no-op elsewhere or when already closed. */
function closeDenoStdin(): void {
  const deno = (globalThis as { Deno?: { stdin?: { close?: () => void } } }).Deno;
  try {
    deno?.stdin?.close?.();
  } catch {
    // Already closed: nothing is pending on it then.
  }
}
