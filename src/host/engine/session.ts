/**
 * The host's side of one protocol 1 session, over any wire: the phases (hello, running, draining, done),
 * the read loop and its gates, and each guest frame taken in turn. It waits for `hello`, refuses a protocol
 * other than 1, sends `invoke`, hands each `request` to call admission, forwards `log` frames, and ends at
 * `result`. Every way a session can go wrong ends in a report; the promise never rejects and no timer outlives it.
 */
import { performance } from "node:perf_hooks";
import { describeError, TransportError } from "../../protocol/errors.js";
import { decodeLine, encodeFrame, PROTOCOL, type HelloFrame, type InvokeFrame, type LogFrame } from "../../protocol/frames.js";
import type { Outcome } from "../../protocol/outcome.js";
import type { Wire } from "../../wires/wire.js";
import { CallAdmission, type CallSession } from "./call-admission.js";
import * as failures from "../report/failures.js";
import { LogBook } from "../report/log-book.js";
import { Outbox } from "./outbox.js";
import type { RunObserver } from "../observe/observer.js";
import { runReport } from "../report/report.js";
import type { HostSettings } from "../settings.js";
import type { PausedRun, PausedState } from "../approvals/approval.js";
import type { HostFailure, RunReport } from "../api/types.js";
import { UserCallbacks } from "./user-callbacks.js";

/** @internal How a caller (runHost, runGuest) plugs into a session. */
export interface SessionHooks {
  /** `performance.now()` when the run began (deadlines and timestamps count from it). */
  startedAt: number;
  /** After the result, how long to wait for the guest's output to end (0: the next turn of the loop; Infinity: the caller bounds it). */
  closeGraceMs: number;
  /** The guest said hello and the host is about to send its invoke: the guest is there, and cannot end before its invoke. */
  helloReceived?(): void;
  /** The result arrived and the host will send nothing more (runGuest closes the child's stdin here). */
  resultReceived?(): void;
  /**
   * The session is over: release the wire. Called once, before the report is delivered. `paused`: the run
   * ended paused for approval (no failure, but the guest is stopped as after one).
   */
  release(failure: HostFailure | undefined, paused?: boolean): void;
  /** Told about the run's frames (tracing); its traceparent goes into the invoke frame. */
  observer?: RunObserver | undefined;
  /** The guest's first line when the caller read it before the session (a run pool's warm runner's hello). */
  firstLine?: string | undefined;
}

/** @internal A session's report plus what runGuest needs to tell a crash from a clean exit. */
export interface SessionResult {
  report: RunReport;
  /** The failure came from the guest's output ending (EOF, truncated frame, read error): a crash, if the process died. */
  endOfStream: boolean;
}

/** @internal Runs one session. Never rejects. */
export function hostSession(wire: Wire, settings: HostSettings, hooks: SessionHooks): Promise<SessionResult> {
  return new HostSession(wire, settings, hooks).run();
}

type Phase = "hello" | "running" | "draining" | "done";

class HostSession implements CallSession {
  private phase: Phase = "hello";
  private resolve!: (result: SessionResult) => void;
  private hello: RunReport["hello"];
  private outcome: Outcome | undefined;
  private readonly logs: LogBook;
  private readonly calls: CallAdmission;
  /** Every frame to the guest goes out through it; the read loop waits on it while the guest leaves too much unread. */
  private readonly outbox: Outbox;
  /** What the last guest line's onFrame returned when it asked the read loop to wait (back-pressure). */
  private frameGate: PromiseLike<unknown> | undefined;
  private helloTimer: ReturnType<typeof setTimeout> | undefined;
  private runTimer: ReturnType<typeof setTimeout> | undefined;
  private graceTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly callbacks = new UserCallbacks();
  private unreadFirstLine: string | undefined;
  readonly observer: RunObserver | undefined;
  /** Calls waiting for approval: while there are any, the run's deadline does not run (see holdClock). */
  private holds = 0;
  private heldSince = 0;
  /** Milliseconds the run's deadline was held, in total so far. */
  private heldMs = 0;
  /** Set when the run ended paused for approval. */
  private pausedRun: PausedRun | undefined;
  private readonly onAbort = () => {
    if (this.phase === "draining") this.finish(undefined);
    else this.finish(failures.aborted(this.settings.signal?.reason));
  };

  constructor(
    private readonly wire: Wire,
    private readonly settings: HostSettings,
    private readonly hooks: SessionHooks,
  ) {
    this.logs = new LogBook(settings.limits.maxLogs, settings.limits.maxLogBytes, settings.limits.maxLogEntryBytes);
    const { onFrame } = settings;
    const tap = onFrame === undefined ? undefined : (line: string) => this.callbacks.run("onFrame", () => onFrame("host", line));
    this.outbox = new Outbox(wire, settings.limits.maxUnreadChars, tap);
    this.calls = new CallAdmission(this, settings, this.outbox);
    this.observer = hooks.observer;
    this.unreadFirstLine = hooks.firstLine;
  }

  run(): Promise<SessionResult> {
    return new Promise((resolve) => {
      this.resolve = resolve;
      const { signal, limits } = this.settings;
      if (signal?.aborted) {
        this.onAbort();
        return;
      }
      signal?.addEventListener("abort", this.onAbort, { once: true });
      if (limits.helloTimeoutMs !== Infinity) {
        const left = Math.max(0, limits.helloTimeoutMs - this.now());
        this.helloTimer = setTimeout(() => this.finish(failures.helloTimedOut(limits.helloTimeoutMs)), left);
      }
      this.armRunTimer();
      this.readLoop().catch((error: unknown) => {
        // Not reached by design (every step below is guarded); kept so a bug cannot become a hang.
        this.finish(failures.engineFailed(error));
      });
    });
  }

  /** Arms the run's deadline for the time it has left, not counting the time it was held. */
  private armRunTimer(): void {
    const { runTimeoutMs } = this.settings.limits;
    if (runTimeoutMs === Infinity || this.phase === "done" || this.phase === "draining") return;
    const left = Math.max(0, runTimeoutMs - (this.now() - this.heldMs));
    this.runTimer = setTimeout(() => this.finish(failures.runTimedOut(runTimeoutMs)), left);
  }

  holdClock(): void {
    if (this.holds++ > 0) return;
    this.heldSince = this.now();
    clearTimeout(this.runTimer);
    this.runTimer = undefined;
  }

  releaseClock(): void {
    if (--this.holds > 0) return;
    this.heldMs += this.now() - this.heldSince;
    this.armRunTimer();
  }

  paused(state: PausedState): void {
    const seal = this.settings.approval?.seal;
    if (seal === undefined || this.phase !== "running") return;
    try {
      this.pausedRun = { token: seal(state), pending: state.pending };
    } catch (error) {
      this.finish(failures.engineFailed(error));
      return;
    }
    this.finish(undefined);
  }

  /** A method, not an inline comparison: the phase changes across awaits, which narrowing cannot see. */
  private over(): boolean {
    return this.phase === "done";
  }

  now(): number {
    return performance.now() - this.hooks.startedAt;
  }

  replying(): boolean {
    return this.phase === "running";
  }

  private async readLoop(): Promise<void> {
    while (!this.over()) {
      if (this.calls.holdsReading()) {
        // The guest is not reading its replies: read nothing more until it catches up.
        await this.outbox.readerWait();
        continue;
      }
      let line = this.unreadFirstLine;
      this.unreadFirstLine = undefined;
      try {
        line ??= await this.wire.receive();
      } catch (error) {
        this.readFailed(error);
        return;
      }
      if (this.over()) return;
      if (line === undefined) {
        this.outputEnded();
        return;
      }
      this.take(line);
      if (this.frameGate !== undefined) await this.passFrameGate();
    }
  }

  /** Waits until the promise onFrame returned settles, or the run is over (spurious wake-ups re-check). */
  private async passFrameGate(): Promise<void> {
    const gate = this.frameGate!;
    this.frameGate = undefined;
    let open = false;
    const opened = () => {
      open = true;
      this.outbox.wakeReader();
    };
    try {
      gate.then(opened, opened);
    } catch {
      return; // a user's thenable whose then() throws holds nothing
    }
    while (!open && !this.over()) await this.outbox.readerWait();
  }

  private take(line: string): void {
    if (this.settings.onFrame !== undefined) {
      this.callbacks.run("onFrame", () => {
        const gate = this.settings.onFrame?.("guest", line);
        if (isThenable(gate)) this.frameGate = gate;
      });
    }
    if (this.phase === "draining") {
      this.finish(failures.wroteAfterResult(line));
      return;
    }
    const decoded = decodeLine(line);
    if (!("frame" in decoded)) {
      this.finish(failures.notAFrame(decoded.reason, line));
      return;
    }
    const { frame } = decoded;
    if (this.phase === "hello") {
      if (frame.type === "hello") this.takeHello(frame);
      else this.finish(failures.firstFrameNotHello(frame.type, line));
      return;
    }
    switch (frame.type) {
      case "request":
        this.observer?.requested(frame, line);
        this.calls.take(frame, line.length);
        return;
      case "log":
        this.takeLog(frame);
        return;
      case "result":
        this.takeResult(frame.outcome, line);
        return;
      case "hello":
        this.finish(failures.secondHello(line));
        return;
      default:
        this.finish(failures.hostFrameFromGuest(frame.type, line));
    }
  }

  private takeHello(frame: HelloFrame): void {
    clearTimeout(this.helloTimer);
    this.hello = frame.sdk === undefined ? { protocol: frame.protocol } : { protocol: frame.protocol, sdk: frame.sdk };
    if (frame.protocol !== PROTOCOL) {
      this.finish(failures.protocolMismatch(frame.protocol, frame.sdk));
      return;
    }
    this.phase = "running";
    try {
      this.hooks.helloReceived?.();
    } catch {
      // A hook failing must not stop the session.
    }
    const invoke: InvokeFrame = { type: "invoke", protocol: PROTOCOL, allowed: this.settings.allowed, input: this.settings.input };
    if (this.observer?.traceparent !== undefined) invoke.traceparent = this.observer.traceparent;
    this.outbox.send(encodeFrame(invoke));
  }

  private takeLog(frame: LogFrame): void {
    const entry = { level: frame.level, content: frame.content, atMs: this.now() };
    this.callbacks.run("onLog", () => this.settings.onLog?.(entry));
    this.observer?.logged(entry);
    this.logs.add(entry);
  }

  private takeResult(outcome: Outcome, line: string): void {
    // Measured on the line: its length bounds its UTF-8 bytes from below, so most results need no count.
    const max = this.settings.limits.maxResultBytes;
    const bytes = line.length > max / 3 ? Buffer.byteLength(line) : line.length;
    if (bytes > max) {
      this.finish(failures.resultTooLarge(bytes, max));
      return;
    }
    this.outcome = outcome;
    this.phase = "draining";
    clearTimeout(this.runTimer);
    this.calls.dropPending("the guest sent its result");
    const unreplayed = this.calls.unreplayed();
    if (unreplayed !== undefined) {
      this.finish(failures.replayDiverged(unreplayed.step, unreplayed.call, undefined));
      return;
    }
    try {
      this.hooks.resultReceived?.();
    } catch {
      // A hook failing must not stop the session from ending.
    }
    const grace = this.hooks.closeGraceMs;
    // 0: once the rest of this turn's input is in (what was read with the result frame: a guest's stderr before it).
    if (grace === 0) setImmediate(() => this.finish(undefined));
    else if (grace !== Infinity) this.graceTimer = setTimeout(() => this.finish(undefined), grace);
  }

  private outputEnded(): void {
    if (this.phase === "draining") this.finish(undefined);
    else this.finish(failures.outputEnded(this.phase !== "hello", this.outbox.sendError), true);
  }

  private readFailed(error: unknown): void {
    if (this.phase === "done") return;
    const kind = error instanceof TransportError ? error.kind : "closed";
    const reason = describeError(error);
    if (kind === "oversized") this.finish(failures.frameTooLarge(reason));
    else if (kind === "malformed") this.finish(failures.malformedFraming(reason));
    else if (kind === "truncated") this.finish(failures.truncatedFrame(this.phase === "draining", reason), true);
    else if (this.phase === "draining") this.finish(undefined);
    else this.finish(failures.readFailed(this.phase !== "hello", reason), true);
  }

  finish(failure: HostFailure | undefined, endOfStream = false): void {
    if (this.phase === "done") return;
    this.phase = "done";
    clearTimeout(this.helloTimer);
    clearTimeout(this.runTimer);
    clearTimeout(this.graceTimer);
    this.settings.signal?.removeEventListener("abort", this.onAbort);
    this.calls.dropPending("the run ended");
    this.outbox.wakeReader();
    try {
      this.hooks.release(failure, this.pausedRun !== undefined);
    } catch {
      // Releasing is best effort.
    }
    const report = runReport({
      outcome: this.outcome,
      failure,
      hello: this.hello,
      logs: this.logs.list(),
      droppedLogs: this.logs.dropped,
      droppedLogBytes: this.logs.droppedBytes,
      calls: this.calls.records,
      droppedCalls: this.calls.droppedRecords,
      droppedCallPayloads: this.calls.droppedPayloads,
      approvals: this.calls.approvals.length > 0 ? this.calls.approvals : undefined,
      paused: this.pausedRun,
      durationMs: this.now(),
    });
    this.resolve({ report, endOfStream: failure !== undefined && endOfStream });
  }
}

/** True for a promise or any object with a `then` method (what onFrame returns to ask for back-pressure). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === "function"
  );
}
