/**
 * A child process the host bounds: started in its own process group, given a deadline, stopped as a group
 * (stdin closed, SIGTERM after a grace, SIGKILL after another), its output read within a bound, and ended
 * with one settlement once it is gone. The three routines that start a child with a deadline run on it: tsc
 * (code/typecheck.ts), bubblewrap's start probe (sandbox/index.ts) and the guest (run-guest.ts).
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { ByteTail } from "./byte-tail.js";
import { GROUPS_SUPPORTED, ProcessGroup } from "./process-group.js";

/** How a child exited. */
export type ChildExit = { code: number | null; signal: NodeJS.Signals | null };

/** Which of the child's output is kept, and how much. */
export interface OutputBound {
  /** The streams read into the output, interleaved as their chunks arrive. */
  streams: readonly ("stdout" | "stderr")[];
  /** Bytes kept; the rest is counted in {@link ChildEnd.droppedBytes}. */
  maxBytes: number;
  /** "first": the beginning is kept (a checker's errors, a first line); "last": the end (a guest's stderr tail). */
  keep: "first" | "last";
  /** Sees all of the output as text as it arrives (a UTF-8 character split across chunks waits for its rest). */
  onText?: (text: string) => void;
}

/** How the child is bounded. */
export interface BoundOptions {
  /** The wait between the steps of a stop (stdin closed, SIGTERM, SIGKILL), and after the exit for pipes a grandchild holds. */
  killGraceMs: number;
  /** The deadline from the start, in ms; the child is then stopped with `timeoutReason`. None when undefined or Infinity. */
  timeoutMs?: number;
  /** {@link ChildEnd.stopped} when the deadline stopped the child. */
  timeoutReason?: string;
  /** Stops the child when aborted, with `abortReason`. */
  signal?: AbortSignal | undefined;
  /** {@link ChildEnd.stopped} when the signal stopped the child. */
  abortReason?: string;
  output?: OutputBound;
  /**
   * The child's process group: one the caller made (and releases: see {@link ProcessGroup.release}), or what
   * {@link ProcessGroup} needs to make it (whether bubblewrap is the child, and what its watchdog removes if the
   * host dies).
   */
  group?: ProcessGroup | { sandboxed?: boolean; scratch?: string | undefined; cgroups?: readonly string[] | undefined };
}

/** How a bounded child ended: told once, when it and its group are gone and its output is read. */
export interface ChildEnd {
  /** Why the child never ran (ENOENT, EACCES, …); its other fields are then empty. */
  spawnError: Error | undefined;
  exit: ChildExit | undefined;
  /** Why the child was stopped (deadline, abort, the caller's stop), or undefined when it ended by itself. */
  stopped: string | undefined;
  /** The strongest signal the stop had to send to the child itself. */
  forced: "SIGTERM" | "SIGKILL" | undefined;
  /** The kept output (see {@link OutputBound}); "" without one. */
  output: string;
  /** Output bytes not kept. */
  droppedBytes: number;
}

/**
 * How a stop begins: stdin ended (`"end"`: what was written still reaches the child) or destroyed
 * (`"destroy"`), then the steps; or SIGKILL at once for a child with nothing to clean up (runCode's
 * runner; {@link ProcessGroup.endNow}): `"kill"` counts as forced, `"finish"` (its work is done) does not.
 */
export type StopStart = "end" | "destroy" | "kill" | "finish";

/** The start of a {@link BoundedChild}: `spawn` without a shell, in its own process group where there are groups. */
export function spawnInGroup(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn(command, args, { ...options, shell: false, windowsHide: true, detached: GROUPS_SUPPORTED });
}

/**
 * Runs `command` bounded as `options` say and resolves with how it ended. Never rejects: a command that
 * cannot start (ENOENT, or a spawn that throws) is a {@link ChildEnd.spawnError}.
 */
export function runBounded(command: string, args: readonly string[], spawnOptions: SpawnOptions, options: BoundOptions): Promise<ChildEnd> {
  let child: ChildProcess;
  try {
    child = spawnInGroup(command, args, spawnOptions);
  } catch (error) {
    return Promise.resolve(notStarted(error instanceof Error ? error : new Error(String(error))));
  }
  return new BoundedChild(child, options).end();
}

function notStarted(spawnError: Error): ChildEnd {
  return { spawnError, exit: undefined, stopped: undefined, forced: undefined, output: "", droppedBytes: 0 };
}

/**
 * One child under its bounds. The child must have been started in its own process group
 * ({@link spawnInGroup}, or `detached: GROUPS_SUPPORTED`). {@link end} settles once: after the child
 * exited (or never started), its group was cleared, its kept streams ended and its watchdog stopped.
 */
export class BoundedChild {
  /** Resolves with the spawn error, or undefined once the child is running. */
  readonly started: Promise<Error | undefined>;
  /** The exit, once seen. */
  exit: ChildExit | undefined;
  /** The strongest signal a stop had to send so far. */
  forced: "SIGTERM" | "SIGKILL" | undefined;
  /** Resolves with the child's exit (never, when it did not start). */
  readonly exited: Promise<ChildExit>;
  private readonly group: ProcessGroup;
  /** A group made here is released (taken off the watchdog) when the child ends; one the caller made is the caller's to release. */
  private readonly ownsGroup: boolean;
  private readonly kept: ByteTail | ByteHead | undefined;
  private decoder: StringDecoder | undefined;
  private killGraceMs: number;
  private onText: ((text: string) => void) | undefined;
  private stopping: Promise<void> | undefined;
  private ending: Promise<ChildEnd> | undefined;
  private stopped: string | undefined;
  private spawnFailed = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private wakeOnExit: (() => void) | undefined;
  private readonly onAbort: () => void;

  constructor(
    readonly child: ChildProcess,
    private readonly options: BoundOptions,
  ) {
    const { output, group = {} } = options;
    this.killGraceMs = options.killGraceMs;
    this.onText = output?.onText;
    // Stream and process errors (EPIPE on stdin above all) must never become uncaught exceptions.
    const ignore = () => {};
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.on("error", ignore);
    child.on("error", ignore);
    this.ownsGroup = !(group instanceof ProcessGroup);
    this.group =
      group instanceof ProcessGroup
        ? group
        : new ProcessGroup(child, group.sandboxed === true ? "bubblewrap" : false, group.scratch, group.cgroups);
    if (output !== undefined) {
      this.kept = output.keep === "first" ? new ByteHead(output.maxBytes) : new ByteTail(output.maxBytes);
      if (output.onText !== undefined) this.decoder = new StringDecoder("utf8");
      // Always read to the end, so a chatty child never blocks on a full pipe.
      for (const name of output.streams) child[name]?.on("data", (chunk: Buffer) => this.take(chunk));
    }
    this.started = new Promise((resolve) => {
      child.once("spawn", () => resolve(undefined));
      child.once("error", (error) => {
        this.spawnFailed = child.pid === undefined;
        resolve(error);
      });
    });
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        this.wakeOnExit?.();
        // A grandchild may hold the pipes open; stop reading them after a grace so the end can come.
        this.after(this.killGraceMs, () => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        });
        resolve(this.exit);
      });
    });
    const { timeoutMs, signal } = options;
    if (timeoutMs !== undefined && timeoutMs !== Infinity) {
      this.after(timeoutMs, () => this.stop(options.timeoutReason ?? `the deadline of ${timeoutMs} ms passed`));
    }
    this.onAbort = () => this.stop(options.abortReason ?? "aborted");
    if (signal?.aborted) this.onAbort();
    else signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /**
   * Starts the stop once (a later call joins it): stdin ended (`"end"`: what was written still reaches the
   * child) or destroyed and `killGraceMs` for the exit (skipped without an input pipe), SIGTERM to the
   * group and `killGraceMs` again, then SIGKILL.
   * Whatever the child left in its group is stopped the same way after it exits. `"kill"` and `"finish"`
   * SIGKILL at once instead (see {@link StopStart}).
   */
  stop(why: string, start: StopStart = "destroy"): void {
    if (this.stopping !== undefined) return;
    this.stopped = why;
    this.stopping = this.shutdown(start);
  }

  /**
   * Waits for the child to exit (by itself, or brought about by the deadline, the signal or {@link stop}),
   * then stops what it left in its group, reads its kept streams to their end, and resolves with how it
   * ended. The first call starts that wait (a caller still using the child's pipes calls it once done with
   * them); every call returns the same promise. Never rejects.
   */
  end(): Promise<ChildEnd> {
    return (this.ending ??= this.settle());
  }

  private async settle(): Promise<ChildEnd> {
    const spawnError = await this.started;
    if (!this.spawnFailed) {
      await this.exited;
      // Ended by itself: nothing is forced, but what it left in its group still goes.
      this.stopping ??= this.shutdown("destroy");
      await this.stopping;
      await Promise.all((this.options.output?.streams ?? []).map((name) => closed(this.child[name])));
    }
    if (this.ownsGroup) this.group.release();
    this.options.signal?.removeEventListener("abort", this.onAbort);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    // A character cut off by the end of the output is passed as U+FFFD, so nothing is silently lost.
    if (this.decoder !== undefined) this.pass(this.decoder.end());
    if (this.spawnFailed) return notStarted(spawnError!);
    return {
      spawnError: undefined,
      exit: this.exit,
      stopped: this.stopped,
      forced: this.forced,
      output: this.kept?.text() ?? "",
      droppedBytes: this.kept?.dropped ?? 0,
    };
  }

  /**
   * From now on, stops wait `killGraceMs` and the output's text goes to `onText` (a run pool's waiting
   * runner, taken by a run); the text kept so far is passed to it first.
   */
  adopt(killGraceMs: number, onText: ((text: string) => void) | undefined): void {
    this.killGraceMs = killGraceMs;
    this.onText = onText;
    if (onText === undefined || this.kept === undefined) return;
    this.decoder = new StringDecoder("utf8");
    this.pass(this.kept.text());
  }

  /** The kept output read so far, for a report made before the end (a pooled run's report at its result). */
  outputSoFar(): { output: string; droppedBytes: number } {
    return { output: this.kept?.text() ?? "", droppedBytes: this.kept?.dropped ?? 0 };
  }

  /** SIGKILLs the child's whole group at once, synchronously (a host that is exiting). */
  kill(): void {
    this.group.signal("SIGKILL");
  }

  private take(chunk: Buffer): void {
    this.kept!.push(chunk);
    if (this.decoder !== undefined) this.pass(this.decoder.write(chunk));
  }

  private pass(text: string): void {
    if (text !== "") this.onText?.(text);
  }

  private async shutdown(start: StopStart): Promise<void> {
    await this.started;
    if (this.spawnFailed) return;
    const { child } = this;
    const grace = this.killGraceMs;
    if (start === "kill" || start === "finish") {
      child.stdin?.destroy();
      if (this.exit === undefined) {
        if (start === "kill") this.forced = "SIGKILL";
        this.group.endNow();
        await this.exited;
      }
      await this.group.clear(grace);
      return;
    }
    const stdin = start;
    // After a result the child may still be reading; end() lets queued frames flush. Otherwise the
    // pipe may be full (a child that stopped reading), so destroy() closes it without waiting.
    if (stdin === "end") child.stdin?.end();
    else child.stdin?.destroy();
    // A child without an input pipe is told nothing by its closing: it gets SIGTERM at once.
    if (!(await this.exitWithin(child.stdin === null ? 0 : grace))) {
      // The whole group is signalled, so the child's descendants get the same treatment.
      this.forced = "SIGTERM";
      this.group.signal("SIGTERM");
      if (!(await this.exitWithin(grace))) {
        this.forced = "SIGKILL";
        this.group.signal("SIGKILL");
        await this.exited;
      }
    }
    child.stdin?.destroy();
    // The child is gone; what it started and left in its group must not outlive it.
    await this.group.clear(grace);
  }

  /** Waits for the exit at most `ms`; true when the child has exited. */
  private exitWithin(ms: number): Promise<boolean> {
    if (this.exit !== undefined) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = this.after(ms, () => {
        this.wakeOnExit = undefined;
        resolve(false);
      });
      this.wakeOnExit = () => {
        this.wakeOnExit = undefined;
        clearTimeout(timer);
        this.timers.delete(timer);
        resolve(true);
      };
    });
  }

  private after(ms: number, run: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
    return timer;
  }
}

/** Resolves when `stream` has closed (read to its end, or destroyed after the exit's grace). */
function closed(stream: Readable | null): Promise<void> {
  if (stream === null || stream.destroyed || stream.readableEnded) return Promise.resolve();
  return new Promise((resolve) => stream.once("close", () => resolve()));
}

/** The first `maxBytes` of a byte stream; what comes after is only counted. */
class ByteHead {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  /** Bytes dropped after the kept head. */
  dropped = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    const room = this.maxBytes - this.bytes;
    if (chunk.length > room) this.dropped += chunk.length - Math.max(room, 0);
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.bytes += kept.length;
  }

  /** The head as text. A UTF-8 character cut by the bound is dropped rather than shown as U+FFFD. */
  text(): string {
    const all = Buffer.concat(this.chunks, this.bytes);
    if (this.dropped === 0) return all.toString("utf8");
    let end = all.length;
    // Back up over a cut multi-byte sequence: continuation bytes, then the lead byte that began it.
    let back = 0;
    while (back < 3 && end - back - 1 >= 0 && (all[end - back - 1]! & 0xc0) === 0x80) back++;
    const lead = all[end - back - 1];
    if (lead !== undefined && lead >= 0xc0) {
      const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
      if (back + 1 < length) end -= back + 1;
    }
    return all.subarray(0, end).toString("utf8");
  }
}
