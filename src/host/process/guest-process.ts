/**
 * One guest child process: its exit, its stderr (a bounded tail and the live callback), the shutdown
 * sequence (close stdin, SIGTERM, SIGKILL, each to its process group; all three from bounded-child.ts) and
 * the report of its run. Used by
 * runGuest/runCode (src/host/run-guest.ts) and by the warm runners of a run pool.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { BoundedChild, type ChildEnd, type ChildExit } from "./bounded-child.js";
import * as failures from "../report/failures.js";
import type { ProcessGroup } from "./process-group.js";
import { runReport } from "../report/report.js";
import type { SandboxReport } from "../sandbox/index.js";
import { guestHoldsOutput, OUTPUT_WATCH_MS } from "../sandbox/output-watch.js";
import type { SessionResult } from "../engine/session.js";
import type { HostFailure, RunReport } from "../api/types.js";
import { UserCallbacks } from "../engine/user-callbacks.js";

/** How a child exited. */
export type Exit = ChildExit;

/** What a run of the child came to: its session, or a failure when there was none (spawn failed, no hello). */
export interface GuestOutcome {
  session?: SessionResult;
  failure?: HostFailure;
  /** The failure came from the child's output ending: a crash, if the process died (see `failures.endedEarly`). */
  endOfStream?: boolean;
}

/**
 * @internal A remote runner's guest (src/host/remote/): the child is the connection to it, so how the guest
 * ended is what the runner reports, and output that ends without that report means the connection was lost.
 */
export interface FarEnd {
  /** The far end's guest's exit, once its runner reported it. */
  ended(): { exit: Exit; forcedStop: "SIGTERM" | "SIGKILL" | undefined } | undefined;
  /** The failure of a run whose output ended early without the runner's report; `exit` is the connection's. */
  lost(saidHello: boolean, exit: Exit | undefined, stderr: string): HostFailure;
  /** The connection's grace for the run's `killGraceMs`: long enough for the runner's own shutdown of its guest. */
  grace(killGraceMs: number): number;
}

/** The child (on the bounded-child helper: its exit, its stderr tail and live callback, the shutdown sequence) and its report. */
export class GuestProcess {
  /** Resolves with the spawn error, or undefined once the child is running. */
  readonly started: Promise<Error | undefined>;
  /** Resolves with the child's exit. */
  readonly exited: Promise<Exit>;
  private readonly bounded: BoundedChild;
  private readonly intervals = new Set<ReturnType<typeof setInterval>>();
  private readonly callbacks = new UserCallbacks();

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    group: ProcessGroup,
    killGraceMs: number,
    maxStderrBytes: number,
    onStderr: ((chunk: string) => void) | undefined,
    private readonly farEnd?: FarEnd,
    /** Nothing in the child needs a chance to clean up (runCode's runner): see {@link stop}. */
    private readonly disposable = false,
  ) {
    // stderr is always read (its tail kept), so a chatty child never blocks on a full pipe.
    this.bounded = new BoundedChild(child, {
      killGraceMs: farEnd === undefined ? killGraceMs : farEnd.grace(killGraceMs),
      output: { streams: ["stderr"], maxBytes: maxStderrBytes, keep: "last", ...this.stderrCallback(onStderr) },
      group,
    });
    this.started = this.bounded.started;
    this.exited = this.bounded.exited;
  }

  /**
   * A warm runner taken by a run (run pools): the run's grace period and stderr callback from now on.
   * The stderr the child wrote while it waited (the kept tail) is passed to `onStderr` first.
   */
  adopt(killGraceMs: number, onStderr: ((chunk: string) => void) | undefined): void {
    this.bounded.adopt(this.farEnd === undefined ? killGraceMs : this.farEnd.grace(killGraceMs), this.stderrCallback(onStderr).onText);
  }

  /** The user's onStderr, guarded: a callback that throws costs the callback, never the run. */
  private stderrCallback(onStderr: ((chunk: string) => void) | undefined): { onText?: (text: string) => void } {
    return onStderr === undefined ? {} : { onText: (text) => this.callbacks.run("onStderr", () => onStderr(text)) };
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
   * `atResult` (a pooled run): a session that ended with its result is reported at once, without the exit
   * (the child is being killed; `gone` settles once it and its group are gone and its stderr is read).
   */
  async run(
    body: (guest: GuestProcess) => Promise<GuestOutcome>,
    elapsed: () => number,
    sandbox: SandboxReport | null,
    sandboxFallback: string | undefined,
    atResult = false,
  ): Promise<{ report: RunReport; gone: Promise<void>; atResult: boolean }> {
    let outcome: GuestOutcome;
    try {
      outcome = await body(this);
    } catch (error) {
      outcome = { failure: failures.hostFailed(error) };
    }
    this.stop("end");
    const ending = this.bounded.end();
    const gone = ending.then(() => {
      for (const interval of this.intervals) clearInterval(interval);
    });
    const session = outcome.session?.report;
    if (atResult && this.farEnd === undefined && session?.outcome !== undefined && session.failure === undefined) {
      const sofar = this.bounded.outputSoFar();
      const report = runReport({
        ...session,
        durationMs: elapsed(),
        pid: this.child.pid,
        stderr: sofar.output,
        droppedStderrBytes: sofar.droppedBytes,
        sandbox,
        sandboxFallback,
      });
      return { report, gone, atResult: true };
    }
    return { report: this.reportEnd(outcome, await ending, elapsed, sandbox, sandboxFallback), gone, atResult: false };
  }

  /** The report of a run whose child is gone: its exit refines a failure of output that ended early. */
  private reportEnd(
    outcome: GuestOutcome,
    end: ChildEnd,
    elapsed: () => number,
    sandbox: SandboxReport | null,
    sandboxFallback: string | undefined,
  ): RunReport {
    const session = outcome.session?.report;
    let failure = session === undefined ? outcome.failure : session.failure;
    const endOfStream = outcome.session?.endOfStream ?? outcome.endOfStream ?? false;
    const far = this.farEnd?.ended();
    const exit = far === undefined ? end.exit : far.exit;
    const forced = far === undefined ? end.forced : far.forcedStop;
    const saidHello = session?.hello !== undefined;
    if (endOfStream && failure !== undefined) {
      failure =
        this.farEnd !== undefined && far === undefined
          ? this.farEnd.lost(saidHello, end.exit, end.output)
          : this.refine(failure, exit, forced, end.output, saidHello);
    }
    return runReport({
      ...session,
      failure,
      durationMs: elapsed(),
      exit,
      pid: this.child.pid,
      stderr: end.output,
      droppedStderrBytes: end.droppedBytes,
      forcedStop: forced,
      sandbox,
      sandboxFallback,
    });
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
      if (this.bounded.exit !== undefined || stdout.destroyed) return clearInterval(timer);
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
    this.bounded.kill();
  }

  /**
   * Starts the shutdown sequence once (see BoundedChild.stop); a later call joins it. After a result the
   * child may still be reading, so its stdin is ended (queued replies flush); otherwise it is destroyed.
   * A disposable child is SIGKILLed at once after its result, and on a failure the host decided (a deadline,
   * an abort, a limit, a broken protocol: `"failure"`), which counts as forced. When its output ended
   * (`"ended"`: it is exiting, perhaps crashing) or the session is over (`"end"`), it is given the steps, so
   * its own exit, and what it says on stderr, make the report. A run that ended paused for approval
   * (`"paused"`) is stopped as after a failure, at once and not forced when disposable.
   */
  stop(why: "result" | "paused" | "failure" | "ended" | "end"): void {
    if (why === "result") this.bounded.stop(why, this.disposable ? "finish" : "end");
    else if (why === "paused") this.bounded.stop(why, this.disposable ? "finish" : "destroy");
    else if (why === "failure" && this.disposable) this.bounded.stop(why, "kill");
    else this.bounded.stop(why === "ended" ? "failure" : why);
  }

  /** The output ended early: when the child then exited on its own, its exit tells the real story. */
  private refine(
    failure: HostFailure,
    exit: Exit | undefined,
    forced: string | undefined,
    stderr: string,
    saidHello: boolean,
  ): HostFailure {
    if (exit === undefined || forced !== undefined) return failure;
    return failures.endedEarly(failure, exit, stderr, saidHello);
  }
}
