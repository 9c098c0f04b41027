/**
 * One guest child process: its exit, its stderr (a bounded tail and the live callback), the shutdown
 * sequence (close stdin, SIGTERM, SIGKILL, each to its process group) and the report of its run. Used by
 * runGuest/runCode (src/host/run-guest.ts) and by the warm runners of a run pool.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import { ByteTail } from "./byte-tail.js";
import * as failures from "./failures.js";
import type { ProcessGroup } from "./process-group.js";
import { runReport } from "./report.js";
import type { SandboxReport } from "./sandbox/index.js";
import { guestHoldsOutput, OUTPUT_WATCH_MS } from "./sandbox/output-watch.js";
import type { SessionResult } from "./session.js";
import type { HostFailure, RunReport } from "./types.js";
import { UserCallbacks } from "./user-callbacks.js";

/** How a child exited. */
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** What a run of the child came to: its session, or a failure when there was none (spawn failed, no hello). */
export interface GuestOutcome {
  session?: SessionResult;
  failure?: HostFailure;
  /** The failure came from the child's output ending: a crash, if the process died (see `failures.endedEarly`). */
  endOfStream?: boolean;
}

/** The child, its exit, its stderr (tail and live callback), and the shutdown sequence. */
export class GuestProcess {
  /** Resolves with the spawn error, or undefined once the child is running. */
  readonly started: Promise<Error | undefined>;
  /** Resolves with the child's exit. */
  readonly exited: Promise<Exit>;
  private exit: Exit | undefined;
  private readonly stderr: ByteTail;
  private stopping: Promise<void> | undefined;
  private forced: "SIGTERM" | "SIGKILL" | undefined;
  private spawnFailed = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private readonly intervals = new Set<ReturnType<typeof setInterval>>();
  private wakeOnExit: (() => void) | undefined;
  /** Holds back the bytes of a character split across stderr chunks until the rest arrives. */
  private stderrDecoder: StringDecoder | undefined;
  private readonly callbacks = new UserCallbacks();

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly group: ProcessGroup,
    private killGraceMs: number,
    maxStderrBytes: number,
    private onStderr: ((chunk: string) => void) | undefined,
  ) {
    this.stderr = new ByteTail(maxStderrBytes);
    // Stream and process errors (EPIPE on stdin above all) must never become uncaught exceptions.
    const ignore = () => {};
    child.stdin.on("error", ignore);
    child.stdout.on("error", ignore);
    child.stderr.on("error", ignore);
    child.on("error", ignore);
    // stderr is always read, so a chatty child never blocks on a full pipe.
    if (onStderr !== undefined) this.stderrDecoder = new StringDecoder("utf8");
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderr.push(chunk);
      if (this.stderrDecoder !== undefined) this.passStderr(this.stderrDecoder.write(chunk));
    });
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
        // A grandchild may hold the pipes open; stop reading them after a grace so the run can end.
        this.after(this.killGraceMs, () => {
          child.stdout.destroy();
          child.stderr.destroy();
        });
        resolve(this.exit);
      });
    });
  }

  /**
   * A warm runner taken by a run (run pools): the run's grace period and stderr callback from now on.
   * The stderr the child wrote while it waited (the kept tail) is passed to `onStderr` first.
   */
  adopt(killGraceMs: number, onStderr: ((chunk: string) => void) | undefined): void {
    this.killGraceMs = killGraceMs;
    this.onStderr = onStderr;
    if (onStderr === undefined) return;
    this.stderrDecoder = new StringDecoder("utf8");
    this.passStderr(this.stderr.text());
  }

  /**
   * Whether the child (its process handle and pipes) keeps the host's event loop alive: a run pool's
   * waiting runners must not (`held` false), a run's child does.
   */
  holdHost(held: boolean): void {
    const handles: ({ ref(): unknown; unref(): unknown } | null)[] = [
      this.child,
      ...[this.child.stdin, this.child.stdout, this.child.stderr].map(
        (stream) => stream as unknown as { ref(): unknown; unref(): unknown } | null,
      ),
    ];
    for (const handle of handles) {
      if (typeof handle?.ref !== "function") continue;
      if (held) handle.ref();
      else handle.unref();
    }
  }

  /**
   * Runs the session, then makes sure the child is gone and its stderr read, and builds the report.
   * `body` resolves with the session, or with a failure when there was none (spawn failed, no hello).
   */
  async run(
    body: (guest: GuestProcess) => Promise<GuestOutcome>,
    elapsed: () => number,
    sandbox: SandboxReport | null,
    sandboxFallback: string | undefined,
  ): Promise<RunReport> {
    let outcome: GuestOutcome;
    try {
      outcome = await body(this);
    } catch (error) {
      outcome = { failure: failures.hostFailed(error) };
    }
    if (!this.spawnFailed) {
      this.stop("end");
      await this.stopping;
      await this.stderrDrained();
    }
    this.group.release();
    // A character cut off by the end of stderr is passed as U+FFFD, so nothing is silently lost.
    if (this.stderrDecoder !== undefined) this.passStderr(this.stderrDecoder.end());
    this.clearTimers();
    const session = outcome.session?.report;
    const stderr = this.stderr.text();
    let failure = session === undefined ? outcome.failure : session.failure;
    const endOfStream = outcome.session?.endOfStream ?? outcome.endOfStream ?? false;
    if (endOfStream && failure !== undefined) failure = this.refine(failure, stderr, session?.hello !== undefined);
    return runReport({
      ...session,
      failure,
      durationMs: elapsed(),
      exit: this.exit,
      pid: this.child.pid,
      stderr,
      droppedStderrBytes: this.stderr.dropped,
      forcedStop: this.forced,
      sandbox,
      sandboxFallback,
    });
  }

  private passStderr(text: string): void {
    if (text !== "") this.callbacks.run("onStderr", () => this.onStderr?.(text));
  }

  /**
   * Confined: ends the output when no process of the guest's holds it any more (see output-watch.ts),
   * so a guest that closed stdout and lives on ends as it would unconfined. Twice in a row, with nothing
   * left unread in the stream, so no frame the guest wrote before closing is lost.
   */
  watchOutput(): void {
    const { stdout } = this.child;
    let closedOnce = false;
    const timer = setInterval(() => {
      if (this.exit !== undefined || stdout.destroyed) return clearInterval(timer);
      const drained = stdout.readableLength === 0 && !stdout.isPaused() && stdout.listenerCount("data") > 0;
      const closed = drained && this.child.pid !== undefined && guestHoldsOutput(this.child.pid) === false;
      if (closed && closedOnce) {
        clearInterval(timer);
        stdout.destroy();
      }
      closedOnce = closed;
    }, OUTPUT_WATCH_MS);
    timer.unref();
    this.intervals.add(timer);
  }

  /** SIGKILLs the child's whole group at once, synchronously (a run pool's runners when the host exits). */
  kill(): void {
    this.group.signal("SIGKILL");
  }

  /** Starts the shutdown sequence once; a later call returns the same sequence. */
  stop(why: "result" | "failure" | "end"): void {
    this.stopping ??= this.shutdown(why);
  }

  private async shutdown(why: "result" | "failure" | "end"): Promise<void> {
    const { child } = this;
    // After a result the child may still be reading; end() lets queued replies flush. Otherwise the
    // pipe may be full (a child that stopped reading), so destroy() closes it without waiting.
    if (why === "result") child.stdin.end();
    else child.stdin.destroy();
    if (!(await this.exitWithin(this.killGraceMs))) {
      // The whole group is signalled, so the guest's descendants get the same treatment.
      this.forced = "SIGTERM";
      this.group.signal("SIGTERM");
      if (!(await this.exitWithin(this.killGraceMs))) {
        this.forced = "SIGKILL";
        this.group.signal("SIGKILL");
        await this.exited;
      }
    }
    child.stdin.destroy();
    // The guest is gone; what it started and left in its group must not outlive the run.
    await this.group.clear(this.killGraceMs);
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

  /** Resolves when stderr has been read to its end (the exit handler bounds this for held pipes). */
  private stderrDrained(): Promise<void> {
    const { stderr } = this.child;
    if (stderr.destroyed || stderr.readableEnded) return Promise.resolve();
    return new Promise((resolve) => stderr.once("close", () => resolve()));
  }

  private after(ms: number, run: () => void): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
    return timer;
  }

  private clearTimers(): void {
    for (const interval of this.intervals) clearInterval(interval);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  /** The output ended early: when the child then exited on its own, its exit tells the real story. */
  private refine(failure: HostFailure, stderr: string, saidHello: boolean): HostFailure {
    if (this.exit === undefined || this.forced !== undefined) return failure;
    return failures.endedEarly(failure, this.exit, stderr, saidHello);
  }
}
