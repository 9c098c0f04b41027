/**
 * The wire-agnostic host engine: one protocol 1 session from the host's side. It waits for `hello`,
 * refuses a protocol other than 1, sends `invoke`, answers each `request` (handlers run concurrently,
 * replies go out in completion order), forwards `log` frames, and ends at `result`. Every way a session
 * can go wrong ends in a report; the promise never rejects and no timer outlives it.
 */
import { excerpt, quotedExcerpt } from "../protocol/text.js";
import { performance } from "node:perf_hooks";
import { describeError, TransportError } from "../protocol/errors.js";
import { decodeLine, encodeFrame, PROTOCOL, type HelloFrame, type LogFrame, type RequestFrame } from "../protocol/frames.js";
import { notAllowedMessage, Outcome } from "../protocol/outcome.js";
import { frameSender, type Wire } from "../wires/wire.js";
import { answer } from "./answer.js";
import { HostReplyCode } from "./codes.js";
import * as failures from "./failures.js";
import { DeadlineQueue } from "./deadlines.js";
import { LogBook } from "./log-book.js";
import { hostSettings, type HostSettings } from "./settings.js";
import { FrameQueue as FrameQueueOf } from "../wires/frame-queue.js";
import { runReport } from "./report.js";
import type { CallRecord, HostFailure, HostOptions, RunReport } from "./types.js";
import { UserCallbacks } from "./user-callbacks.js";
import { Call, CallContext, replyLine } from "./calls.js";

/** Characters of a requested capability name kept in a call record; a longer (hostile) name is cut with its length. */
const MAX_RECORDED_NAME_CHARS = 1024;

/**
 * Hosts one session over any wire: the host end of `createLinkedPair()`, or a `StreamWire` over a
 * guest's stdout and stdin. Resolves with the run's report; never rejects. When the session is over
 * the wire's `close` is called (not awaited). Invalid options throw synchronously (TypeError or
 * RangeError) before anything is sent.
 *
 * @example
 * const [guestEnd, hostEnd] = createLinkedPair();
 * void serve({ wire: guestEnd, run: (ears) => ears.call("greet", "Ada") });
 * const report = await runHost(hostEnd, { capabilities: { greet: (name) => `hello ${name}` } });
 * report.outcome; // { status: "success", content: "hello Ada" }
 */
export function runHost(wire: Wire, options?: HostOptions): Promise<RunReport> {
  if (typeof wire?.send !== "function" || typeof wire.receive !== "function") {
    throw new TypeError("runHost: the first argument must be a Wire (an object with send and receive)");
  }
  const settings = hostSettings(options, "runHost");
  const hooks: SessionHooks = {
    startedAt: performance.now(),
    closeGraceMs: settings.limits.closeGraceMs,
    release(failure) {
      try {
        const closing = wire.close?.(failure === undefined ? undefined : new Error(failure.message));
        if (closing !== undefined) Promise.resolve(closing).catch(() => {});
      } catch {
        // Releasing is best effort: the session is over either way.
      }
    },
  };
  return hostSession(wire, settings, hooks).then((result) => result.report);
}

/** @internal How a caller (runHost, runGuest) plugs into a session. */
export interface SessionHooks {
  /** `performance.now()` when the run began (deadlines and timestamps count from it). */
  startedAt: number;
  /** After the result, how long to wait for the guest's output to end; Infinity when the caller bounds it. */
  closeGraceMs: number;
  /** The result arrived and the host will send nothing more (runGuest closes the child's stdin here). */
  resultReceived?(): void;
  /** The session is over: release the wire. Called once, before the report is delivered. */
  release(failure: HostFailure | undefined): void;
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

/** What one unread frame is counted as besides its characters, against `maxUnreadChars`. */
const UNREAD_FRAME_OVERHEAD = 256;

class HostSession {
  private phase: Phase = "hello";
  private resolve!: (result: SessionResult) => void;
  private hello: RunReport["hello"];
  private outcome: Outcome | undefined;
  private readonly logs: LogBook;
  private readonly calls: CallRecord[] = [];
  private droppedCalls = 0;
  private droppedCallPayloads = 0;
  /** Characters of request and reply frames whose payloads the kept records hold. */
  private payloadChars = 0;
  /** Every request id up to this one has been used (ids must be unique in the run). */
  private idsUpTo = 0;
  /** The ids used above `idsUpTo`: empty for a guest that counts up from 1. */
  private readonly idsAbove = new Set<number>();
  /** Calls accepted while the guest had too much unread: their handlers start, in order, once it reads. */
  private readonly waitingToStart = new FrameQueueOf<Call>();
  /** Calls waiting for their reply. */
  private readonly pending = new Map<number, Call>();
  /** The pending calls' deadlines, in start order, under one timer (see DeadlineQueue). */
  private readonly deadlines = new DeadlineQueue<Call>(
    () => this.now(),
    (call) => this.callTimedOut(call),
  );
  /** Handlers that have not settled, including those whose call timed out. */
  private running = 0;
  private readonly allowed: ReadonlySet<string>;
  private sendError: unknown;
  /** Characters (plus a fixed overhead per frame) handed to the wire whose send has not settled (the guest has not taken them yet). */
  private unsent = 0;
  /** Wakes the read loop once the guest has taken enough of what was sent, or the run is over. */
  private resumeReading: (() => void) | undefined;
  /** What the last guest line's onFrame returned when it asked the read loop to wait (back-pressure). */
  private frameGate: PromiseLike<unknown> | undefined;
  private helloTimer: ReturnType<typeof setTimeout> | undefined;
  private runTimer: ReturnType<typeof setTimeout> | undefined;
  private graceTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly callbacks = new UserCallbacks();
  /** The wire's promise-free send, when it has one. */
  private readonly sendFrame: ((frame: string, done: (error?: Error) => void) => void) | undefined;
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
    this.allowed = new Set(settings.allowed);
    this.sendFrame = frameSender(wire);
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
      if (limits.runTimeoutMs !== Infinity) {
        const left = Math.max(0, limits.runTimeoutMs - this.now());
        this.runTimer = setTimeout(() => this.finish(failures.runTimedOut(limits.runTimeoutMs)), left);
      }
      this.readLoop().catch((error: unknown) => {
        // Not reached by design (every step below is guarded); kept so a bug cannot become a hang.
        this.finish(failures.engineFailed(error));
      });
    });
  }

  /** A method, not an inline comparison: the phase changes across awaits, which narrowing cannot see. */
  private over(): boolean {
    return this.phase === "done";
  }

  private now(): number {
    return performance.now() - this.hooks.startedAt;
  }

  private async readLoop(): Promise<void> {
    const maxUnread = this.settings.limits.maxUnreadChars;
    while (!this.over()) {
      if (this.unsent > maxUnread || this.waitingToStart.size > 0) {
        // A guest that sends requests but does not read its replies would make the host queue them
        // without bound; read nothing more until it catches up (a deadline still ends the run).
        await new Promise<void>((resolve) => (this.resumeReading = resolve));
        continue;
      }
      let line: string | undefined;
      try {
        line = await this.wire.receive();
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
      this.wakeReader();
    };
    try {
      gate.then(opened, opened);
    } catch {
      return; // a user's thenable whose then() throws holds nothing
    }
    while (!open && !this.over()) await new Promise<void>((resolve) => (this.resumeReading = resolve));
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
        this.takeRequest(frame, line.length);
        return;
      case "log":
        this.takeLog(frame);
        return;
      case "result":
        this.takeResult(frame.outcome);
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
    this.send(encodeFrame({ type: "invoke", protocol: PROTOCOL, allowed: this.settings.allowed, input: this.settings.input }));
  }

  private takeLog(frame: LogFrame): void {
    const entry = { level: frame.level, content: frame.content, atMs: this.now() };
    this.callbacks.run("onLog", () => this.settings.onLog?.(entry));
    this.logs.add(entry);
  }

  private takeRequest(frame: RequestFrame, frameChars: number): void {
    const { id, name } = frame;
    if (!this.useId(id)) return;
    const { limits } = this.settings;
    // A name is guest text: kept whole up to 1,024 characters (any real capability name), else cut with its
    // length, so a flood of huge names cannot grow the report.
    const record: CallRecord = { id, name: excerpt(name, MAX_RECORDED_NAME_CHARS), arguments: frame.arguments, durationMs: 0 };
    const kept = this.calls.length < limits.maxCallRecords;
    if (kept) {
      this.calls.push(record);
      // The frame's length stands for the arguments' size: exact for ASCII, and cheaper than measuring.
      if (this.payloadChars + frameChars > limits.maxCallPayloadChars) {
        record.arguments = null;
        record.argumentsDropped = true;
        this.droppedCallPayloads++;
      } else this.payloadChars += frameChars;
    } else this.droppedCalls++;
    const startedAt = this.now();
    if (!this.allowed.has(name)) {
      record.denied = true;
      this.reply(record, kept, startedAt, Outcome.failure(HostReplyCode.CapabilityDenied, `${notAllowedMessage(name, this.settings.allowed)}; it did not run`));
      return;
    }
    const handler = Object.hasOwn(this.settings.capabilities, name) ? this.settings.capabilities[name] : undefined;
    if (handler === undefined) {
      this.reply(record, kept, startedAt, Outcome.failure(HostReplyCode.CapabilityMissing, `capability ${quotedExcerpt(name, 64)} is allowed but the host has no handler for it; it did not run`));
      return;
    }
    const { maxInFlight, callTimeoutMs } = limits;
    if (this.running + this.waitingToStart.size >= maxInFlight) {
      this.reply(record, kept, startedAt, Outcome.failure(HostReplyCode.TooManyCalls, `the host is already running ${maxInFlight} calls (limits.maxInFlight); ${JSON.stringify(name)} did not run, try again when earlier calls have finished`));
      return;
    }
    const call = new Call(record, kept, startedAt, startedAt + callTimeoutMs, handler, frame.arguments);
    this.pending.set(id, call);
    if (callTimeoutMs !== Infinity) this.deadlines.add(call);
    // While the guest leaves more than maxUnreadChars of replies unread, no handler starts: each answer
    // would only add to the queue the guest is not reading. The call waits; its deadline runs meanwhile.
    if (this.unsent > limits.maxUnreadChars || this.waitingToStart.size > 0) this.waitingToStart.push(call);
    else this.start(call);
  }

  /**
   * Checks that `id` was not used before in the run and marks it used; a reused id, or more scattered
   * ids than `maxScatteredIds`, ends the run. O(1) per id for a guest counting up from 1.
   */
  private useId(id: number): boolean {
    if (id === this.idsUpTo + 1) {
      this.idsUpTo = id;
      if (this.idsAbove.size > 0) while (this.idsAbove.delete(this.idsUpTo + 1)) this.idsUpTo++;
      return true;
    }
    if (id <= this.idsUpTo || this.idsAbove.has(id)) {
      this.finish(failures.reusedRequestId(id, this.pending.has(id)));
      return false;
    }
    const max = this.settings.limits.maxScatteredIds;
    if (this.idsAbove.size >= max) {
      this.finish(failures.scatteredRequestIds(max, this.idsUpTo + 1));
      return false;
    }
    this.idsAbove.add(id);
    return true;
  }

  private start(call: Call): void {
    const { record, startedAt } = call;
    const args = call.args;
    call.args = null;
    this.running++;
    void answer(call.handler, args, new CallContext(record.name, record.id, call)).then((outcome) => {
      this.running--;
      if (call.settled) return; // timed out or the run ended: the answer is dropped
      call.settled = true;
      this.pending.delete(record.id);
      this.deadlines.trim();
      this.reply(record, call.kept, startedAt, outcome);
    });
  }

  /** Starts the waiting calls, in order, while the guest's unread replies stay under the limit. */
  private startWaiting(): void {
    const max = this.settings.limits.maxUnreadChars;
    while (this.unsent <= max && this.phase === "running") {
      const call = this.waitingToStart.take();
      if (call === undefined) return;
      if (!call.settled) this.start(call); // a call that timed out while waiting never starts
    }
  }

  private callTimedOut(call: Call): void {
    const { id, name } = call.record;
    call.settled = true;
    this.pending.delete(id);
    const ms = this.settings.limits.callTimeoutMs;
    call.abort(new DOMException(`the call to ${JSON.stringify(name)} timed out after ${ms} ms`, "TimeoutError"));
    call.args = null;
    this.reply(call.record, call.kept, call.startedAt, Outcome.failure(HostReplyCode.CallTimedOut, `the host did not answer ${JSON.stringify(name)} within ${ms} ms (limits.callTimeoutMs); the call may have run, so its effects are unknown`));
  }

  private reply(record: CallRecord, kept: boolean, startedAt: number, outcome: Outcome): void {
    if (this.phase !== "running") return;
    let line = replyLine(record.id, outcome);
    const { maxReplyBytes: max, maxCallPayloadChars } = this.settings.limits;
    if (line === undefined || tooLong(line, max)) {
      const why = line === undefined ? "could not be encoded (it is too large for JSON.stringify)" : `is ${Buffer.byteLength(line)} bytes, over the ${max}-byte limit (limits.maxReplyBytes)`;
      outcome = Outcome.failure(HostReplyCode.CapabilityFailed, `the answer to ${JSON.stringify(record.name)} ${why}; it was not sent`);
      line = replyLine(record.id, outcome)!;
    }
    if (kept) {
      record.status = outcome.status;
      if (this.payloadChars + line.length > maxCallPayloadChars) {
        record.outcomeDropped = true;
        if (record.argumentsDropped !== true) this.droppedCallPayloads++;
      } else {
        this.payloadChars += line.length;
        record.outcome = outcome;
      }
    }
    record.durationMs = this.now() - startedAt;
    this.send(line);
  }

  private takeResult(outcome: Outcome): void {
    this.outcome = outcome;
    this.phase = "draining";
    clearTimeout(this.runTimer);
    this.dropPending("the guest sent its result");
    try {
      this.hooks.resultReceived?.();
    } catch {
      // A hook failing must not stop the session from ending.
    }
    if (this.hooks.closeGraceMs !== Infinity) this.graceTimer = setTimeout(() => this.finish(undefined), this.hooks.closeGraceMs);
  }

  private outputEnded(): void {
    if (this.phase === "draining") this.finish(undefined);
    else this.finish(failures.outputEnded(this.phase !== "hello", this.sendError), true);
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

  private send(line: string): void {
    if (this.settings.onFrame !== undefined) this.callbacks.run("onFrame", () => this.settings.onFrame?.("host", line));
    // A queued frame costs more than its text (the stream's buffer entry, the callback): counting that
    // too keeps a flood of tiny replies within the budget as well as a few large ones.
    const cost = line.length + UNREAD_FRAME_OVERHEAD;
    this.unsent += cost;
    const settled = (error?: unknown) => {
      if (error !== undefined) this.sendError ??= error;
      this.unsent -= cost;
      if (this.unsent <= this.settings.limits.maxUnreadChars / 2) {
        if (this.waitingToStart.size > 0) this.startWaiting();
        this.wakeReader();
      }
    };
    if (this.sendFrame !== undefined) {
      this.sendFrame(line, settled);
      return;
    }
    try {
      this.wire.send(line).then(() => settled(), (error: unknown) => settled(error ?? new Error("the send failed")));
    } catch (error) {
      settled(error ?? new Error("the send failed"));
    }
  }

  private wakeReader(): void {
    const resume = this.resumeReading;
    this.resumeReading = undefined;
    resume?.();
  }

  /** Aborts the handlers still running; their calls get no reply. */
  private dropPending(why: string): void {
    for (const call of this.pending.values()) {
      call.settled = true;
      call.record.durationMs = this.now() - call.startedAt;
      call.abort(new DOMException(`${why} before ${JSON.stringify(call.record.name)} was answered`, "AbortError"));
    }
    this.pending.clear();
    this.deadlines.clear();
    this.waitingToStart.clear();
  }

  private finish(failure: HostFailure | undefined, endOfStream = false): void {
    if (this.phase === "done") return;
    this.phase = "done";
    clearTimeout(this.helloTimer);
    clearTimeout(this.runTimer);
    clearTimeout(this.graceTimer);
    this.settings.signal?.removeEventListener("abort", this.onAbort);
    this.dropPending("the run ended");
    this.wakeReader();
    try {
      this.hooks.release(failure);
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
      calls: this.calls,
      droppedCalls: this.droppedCalls,
      droppedCallPayloads: this.droppedCallPayloads,
      durationMs: this.now(),
    });
    this.resolve({ report, endOfStream: failure !== undefined && endOfStream });
  }
}

/** Whether `line` is over `max` UTF-8 bytes, counting bytes only when the length alone cannot tell. */
function tooLong(line: string, max: number): boolean {
  if (line.length > max) return true;
  if (line.length * 3 <= max) return false;
  return Buffer.byteLength(line) > max;
}

/** True for a promise or any object with a `then` method (what onFrame returns to ask for back-pressure). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as PromiseLike<unknown>).then === "function";
}
