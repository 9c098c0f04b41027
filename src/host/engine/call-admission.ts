// The admission of the guest's calls: unique request ids, the call records and their payload budget, the
// in-flight limit, the running-handler cap and the unread-reply budget that hold calls (and reading) back,
// each call's deadline and reply; the calls that wait for approval (approval.ts) and a resumed run's replay.
import { excerpt } from "../../protocol/text.js";
import type { RequestFrame } from "../../protocol/frames.js";
import { jsonDifference, type Json } from "../../protocol/json.js";
import { Outcome } from "../../protocol/outcome.js";
import {
  decisionProblem,
  needsApproval,
  type ApprovalCall,
  type ApprovalDecision,
  type ApprovalRecord,
  type JournalCall,
  type PausedState,
  type ResumeDecision,
} from "../approvals/approval.js";
import { FrameQueue } from "../../wires/frame-queue.js";
import { answer } from "./answer.js";
import { Call, CallContext, replyLine } from "./calls.js";
import { DeadlineQueue } from "./deadlines.js";
import * as replies from "../report/call-failures.js";
import * as failures from "../report/failures.js";
import type { RunObserver } from "../observe/observer.js";
import type { Outbox } from "./outbox.js";
import type { HostSettings } from "../settings.js";
import type { Capability, CallRecord, HostFailure } from "../api/types.js";

/** Characters of a requested capability name kept in a call record; a longer (hostile) name is cut with its length. */
const MAX_RECORDED_NAME_CHARS = 1024;

/** An answer that exists while the guest leaves too much unread: kept as its outcome until it can be sent. */
interface HeldReply {
  record: CallRecord;
  kept: boolean;
  outcome: Outcome;
}

/** A call that needs approval and waits for its decision; its handler has not started. */
interface Waiting {
  record: CallRecord;
  kept: boolean;
  /** When the request arrived. */
  startedAt: number;
  handler: Capability;
  args: Json;
  approval: ApprovalRecord;
  /** Made when `decide` is called; aborted when its answer is no longer wanted. */
  controller: AbortController | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  settled: boolean;
}

/** The calls of a run that may pause, kept whole (unlike the report's records) for its token. */
class Journal {
  readonly calls = new Map<number, { name: string; arguments: Json; outcome?: Outcome }>();
  private chars = 0;
  /** The calls outgrew `maxChars`: the run can no longer pause. */
  overflowed = false;

  constructor(private readonly maxChars: number) {}

  begin(id: number, name: string, args: Json, chars: number): void {
    if (this.grow(chars)) this.calls.set(id, { name, arguments: args });
  }

  answer(id: number, outcome: Outcome): void {
    const entry = this.calls.get(id);
    if (entry === undefined) return;
    // The outcome's JSON size, measured once; a run that can pause pays for it on every answer.
    if (this.grow(JSON.stringify(outcome).length)) entry.outcome = outcome;
  }

  private grow(chars: number): boolean {
    if (this.overflowed) return false;
    this.chars += chars;
    if (this.chars <= this.maxChars) return true;
    this.overflowed = true;
    this.calls.clear();
    return false;
  }

  /** The answered calls, in id order. */
  answered(): JournalCall[] {
    const calls: JournalCall[] = [];
    for (const [id, entry] of this.calls) if (entry.outcome !== undefined) calls.push({ id, ...entry, outcome: entry.outcome });
    return calls.sort((a, b) => a.id - b.id);
  }
}

/** What call admission needs from the session it serves. */
export interface CallSession {
  /** Milliseconds on the session's clock (since the run began). */
  now(): number;
  /** Whether replies still go out: the session is running (no result yet, not over). */
  replying(): boolean;
  /** Ends the run: the guest broke the protocol with a request. */
  finish(failure: HostFailure): void;
  /** Told about each reply (tracing). */
  readonly observer?: RunObserver | undefined;
  /** A call started waiting for approval: the run's deadline stops running until every such call is decided. */
  holdClock(): void;
  /** A call's approval was decided (or given up): see {@link holdClock}. */
  releaseClock(): void;
  /** Ends the run paused: no handler is running any more, `state` goes into the report's token. */
  paused(state: PausedState): void;
}

/** Takes the guest's request frames and answers each one through the session's outbox. */
export class CallAdmission {
  /** The kept call records, in arrival order, at most `maxCallRecords`. */
  readonly records: CallRecord[] = [];
  /** Calls past `maxCallRecords` (answered, but not recorded). */
  droppedRecords = 0;
  /** Kept records that lost their arguments, their outcome or both to `maxCallPayloadChars`. */
  droppedPayloads = 0;
  /** Characters of request and reply frames whose payloads the kept records hold. */
  private payloadChars = 0;
  /** Every request id up to this one has been used (ids must be unique in the run). */
  private idsUpTo = 0;
  /** The ids used above `idsUpTo`: empty for a guest that counts up from 1. */
  private readonly idsAbove = new Set<number>();
  /**
   * Calls accepted while the guest had too much unread or `maxRunningHandlers` handlers were running:
   * their handlers start, in order, once the guest reads and a handler settles.
   */
  private readonly waitingToStart = new FrameQueue<Call>();
  /**
   * Answers that came while the guest had too much unread, in order: held as outcomes (one copy of their
   * content) rather than as encoded frames (a second), encoded once the guest has read down to half.
   */
  private readonly waitingToSend = new FrameQueue<HeldReply>();
  /** Calls waiting for their reply. */
  private readonly pending = new Map<number, Call>();
  /** The pending calls' deadlines, in start order, under one timer (see DeadlineQueue). */
  private readonly deadlines: DeadlineQueue<Call>;
  /** Handlers that have not settled, including those whose call timed out. */
  private running = 0;
  private readonly allowed: ReadonlySet<string>;
  /** Every approval asked (for kept records), in the order asked: the report's `approvals`. */
  readonly approvals: ApprovalRecord[] = [];
  /** Calls waiting for an approval decision, by id. */
  private readonly awaiting = new Map<number, Waiting>();
  /** The calls so far, whole, when the run can pause (runCode with a token key); else undefined. */
  private readonly journal: Journal | undefined;
  /** Set once a decision paused the run: the calls pending; the run ends when no handler is running. */
  private pausing: ApprovalCall[] | undefined;
  /** A resumed run: the steps of the paused run the body has made again. */
  private readonly replayedSteps = new Set<number>();

  constructor(
    private readonly session: CallSession,
    private readonly settings: HostSettings,
    /** Where replies go; it counts them against `maxUnreadChars` and tells {@link drained} when the guest has read. */
    private readonly outbox: Outbox,
  ) {
    this.allowed = new Set(settings.allowed);
    outbox.whenDrained(() => this.drained());
    this.deadlines = new DeadlineQueue<Call>(
      () => session.now(),
      (call) => this.timedOut(call),
    );
    if (settings.approval?.seal !== undefined) this.journal = new Journal(settings.limits.maxCallPayloadChars);
  }

  /**
   * Whether the session must read nothing more for now: a guest that sends requests but does not read its
   * replies would make the host queue them without bound, and a call waiting for a handler slot holds
   * back those behind it (a deadline still ends the run).
   */
  holdsReading(): boolean {
    return this.unreadFull() || this.waitingToStart.size > 0;
  }

  /** The guest leaves too much unread: over `maxUnreadChars` in the outbox, or answers already held for it. */
  private unreadFull(): boolean {
    return this.outbox.full() || this.waitingToSend.size > 0;
  }

  /** The guest has taken enough (down to half the budget): the held answers are sent, then the waiting calls start. */
  private drained(): void {
    if (this.waitingToSend.size > 0) this.sendHeld();
    if (this.waitingToStart.size > 0) this.startWaiting();
  }

  /** Admits a request (the frame's length stands for its size): it is answered now, or starts now or later. */
  take(frame: RequestFrame, frameChars: number): void {
    const { id, name } = frame;
    if (!this.useId(id)) return;
    // Pausing: no new call starts; the resumed run makes it again, live.
    if (this.pausing !== undefined) return;
    const { limits } = this.settings;
    // A name is guest text: kept whole up to 1,024 characters (any real capability name), else cut with its
    // length, so a flood of huge names cannot grow the report.
    const record: CallRecord = { id, name: excerpt(name, MAX_RECORDED_NAME_CHARS), arguments: frame.arguments, durationMs: 0 };
    const kept = this.records.length < limits.maxCallRecords;
    if (kept) {
      this.records.push(record);
      // The frame's length stands for the arguments' size: exact for ASCII, and cheaper than measuring.
      if (this.payloadChars + frameChars > limits.maxCallPayloadChars) {
        record.arguments = null;
        record.argumentsDropped = true;
        this.droppedPayloads++;
      } else this.payloadChars += frameChars;
    } else this.droppedRecords++;
    const startedAt = this.session.now();
    this.journal?.begin(id, name, frame.arguments, frameChars);
    const replay = this.settings.approval?.replay;
    let resumed: { decision: ResumeDecision | undefined } | undefined;
    if (replay !== undefined) {
      const step = this.replayStep(frame, record, kept, startedAt);
      if (step === "answered" || step === "diverged") return;
      resumed = step;
    }
    if (!this.allowed.has(name)) {
      record.denied = true;
      this.reply(record, kept, startedAt, replies.capabilityDenied(name, this.settings.allowed));
      return;
    }
    const handler = Object.hasOwn(this.settings.capabilities, name) ? this.settings.capabilities[name] : undefined;
    if (handler === undefined) {
      this.reply(record, kept, startedAt, replies.capabilityMissing(name));
      return;
    }
    const { maxInFlight } = limits;
    if (this.running + this.waitingToStart.size + this.awaiting.size >= maxInFlight) {
      this.reply(record, kept, startedAt, replies.tooManyCalls(name, maxInFlight));
      return;
    }
    const approval = this.settings.approval;
    if (resumed !== undefined || needsApproval(handler, { id, name, arguments: frame.arguments }, approval)) {
      const approvalRecord: ApprovalRecord = { id, name: record.name, decision: "unanswered", atMs: startedAt, durationMs: 0 };
      if (kept) this.approvals.push(approvalRecord);
      const waiting: Waiting = {
        record,
        kept,
        startedAt,
        handler,
        args: frame.arguments,
        approval: approvalRecord,
        controller: undefined,
        timer: undefined,
        settled: false,
      };
      if (resumed?.decision !== undefined) {
        approvalRecord.resumed = true;
        this.decided(waiting, resumed.decision);
      } else this.ask(waiting);
      return;
    }
    this.admit(record, kept, startedAt, handler, frame.arguments);
  }

  /**
   * A resumed run's request at a step the paused run made: the same call is answered from the token (its
   * handler is not run again) or, at a pending step, goes on to its decision; another call ends the run
   * (`ReplayDiverged`) and nothing runs for it. A step the paused run did not make is live.
   */
  private replayStep(
    frame: RequestFrame,
    record: CallRecord,
    kept: boolean,
    startedAt: number,
  ): "answered" | "diverged" | { decision: ResumeDecision | undefined } | undefined {
    const replay = this.settings.approval!.replay!;
    const answered = replay.calls.get(frame.id);
    const pending = replay.pending.get(frame.id);
    const before = answered ?? pending?.call;
    if (before === undefined) return undefined;
    this.replayedSteps.add(frame.id);
    if (before.name !== frame.name || jsonDifference(before.arguments, frame.arguments) !== undefined) {
      this.session.finish(failures.replayDiverged(frame.id, before, frame));
      return "diverged";
    }
    if (answered !== undefined) {
      record.replayed = true;
      this.reply(record, kept, startedAt, answered.outcome);
      return "answered";
    }
    return { decision: pending!.decision };
  }

  /** A resumed run's first step of the paused run the body did not make again, if any (checked at its result). */
  unreplayed(): { step: number; call: { name: string; arguments: Json } } | undefined {
    const replay = this.settings.approval?.replay;
    if (replay === undefined) return undefined;
    const steps = [...replay.calls.values(), ...[...replay.pending.values()].map((pending) => pending.call)].sort((a, b) => a.id - b.id);
    const missed = steps.find((call) => !this.replayedSteps.has(call.id));
    return missed === undefined ? undefined : { step: missed.id, call: missed };
  }

  /** Asks `approval.decide` about a call; it waits, its deadline not yet running and the run's held. */
  private ask(waiting: Waiting): void {
    const { record } = waiting;
    const decide = this.settings.approval?.decide;
    if (decide === undefined) {
      this.decided(waiting, { approved: false, reason: "the host gives no way to approve calls (approval.decide)", by: "ears" });
      return;
    }
    this.awaiting.set(record.id, waiting);
    this.session.holdClock();
    const controller = (waiting.controller = new AbortController());
    const ms = this.settings.approval!.timeoutMs;
    if (ms !== Infinity) waiting.timer = setTimeout(() => this.decisionTimedOut(waiting, ms), ms);
    const call: ApprovalCall = { id: record.id, name: record.name, arguments: waiting.args };
    let decision: unknown;
    try {
      decision = decide(call, { signal: controller.signal });
    } catch (error) {
      this.decideFailed(waiting, error);
      return;
    }
    Promise.resolve(decision).then(
      (value) => this.decided(waiting, value),
      (error: unknown) => this.decideFailed(waiting, error),
    );
  }

  /** Ends a call's wait once (a later decision is ignored); false when it had ended already. */
  private leave(waiting: Waiting): boolean {
    if (waiting.settled) return false;
    waiting.settled = true;
    clearTimeout(waiting.timer);
    waiting.approval.durationMs = this.session.now() - waiting.approval.atMs;
    if (this.awaiting.delete(waiting.record.id)) this.session.releaseClock();
    return true;
  }

  private decideFailed(waiting: Waiting, error: unknown): void {
    if (!this.leave(waiting)) return;
    waiting.approval.decision = "denied";
    waiting.approval.reason = `approval.decide failed: ${excerpt(String(error instanceof Error ? error.message : error), 1000)}`;
    this.reply(
      waiting.record,
      waiting.kept,
      waiting.startedAt,
      replies.approvalDenied(waiting.record.name, "the host's approval check failed"),
    );
  }

  private decided(waiting: Waiting, value: unknown): void {
    const problem = decisionProblem(value);
    if (problem !== undefined) {
      this.decideFailed(waiting, new TypeError(`a malformed decision: ${problem}`));
      return;
    }
    if (!this.leave(waiting)) return;
    const decision = value as ApprovalDecision;
    const { approval, record } = waiting;
    if (decision.by !== undefined) approval.by = excerpt(decision.by, 1000);
    if ((decision as { approved?: unknown }).approved === undefined) {
      this.pause(waiting);
      return;
    }
    if ((decision as { approved: boolean }).approved) {
      approval.decision = "approved";
      this.admit(record, waiting.kept, waiting.startedAt, waiting.handler, waiting.args);
      return;
    }
    const reason = (decision as { reason: string }).reason;
    approval.decision = "denied";
    approval.reason = excerpt(reason, 1000);
    this.reply(record, waiting.kept, waiting.startedAt, replies.approvalDenied(record.name, reason));
  }

  private decisionTimedOut(waiting: Waiting, ms: number): void {
    if (!this.leave(waiting)) return;
    waiting.approval.decision = "timedOut";
    waiting.controller?.abort(new DOMException(`no decision within ${ms} ms (approval.timeoutMs)`, "TimeoutError"));
    this.reply(waiting.record, waiting.kept, waiting.startedAt, replies.approvalTimedOut(waiting.record.name, ms));
  }

  /**
   * A decision paused the run: every call still waiting for approval is pending too (its `decide` is
   * aborted), calls not started are dropped (the resumed run makes them again), and the run ends paused
   * once the running handlers have answered (their answers go into the token). A run that cannot pause
   * (no token key, not runCode, answers too large to keep) denies the call instead, saying why.
   */
  private pause(waiting: Waiting): void {
    const cannot =
      this.settings.approval?.seal === undefined
        ? "this run cannot pause (pausing needs runCode or resumeCode with approval.tokenKey)"
        : this.journal?.overflowed
          ? "this run cannot pause: its calls so far are too large to keep in a token (limits.maxCallPayloadChars)"
          : undefined;
    const { approval, record } = waiting;
    if (cannot !== undefined) {
      approval.decision = "denied";
      approval.reason = cannot;
      this.reply(record, waiting.kept, waiting.startedAt, replies.approvalDenied(record.name, cannot));
      return;
    }
    const pending: ApprovalCall[] = [{ id: record.id, name: record.name, arguments: waiting.args }];
    approval.decision = "paused";
    for (const other of [...this.awaiting.values()]) {
      if (!this.leave(other)) continue;
      other.approval.decision = "paused";
      other.controller?.abort(new DOMException("the run paused for approval", "AbortError"));
      pending.push({ id: other.record.id, name: other.record.name, arguments: other.args });
    }
    this.pausing = pending.sort((a, b) => a.id - b.id);
    for (let call = this.waitingToStart.take(); call !== undefined; call = this.waitingToStart.take()) {
      if (call.settled) continue;
      call.settled = true;
      this.pending.delete(call.record.id);
      this.journal?.calls.delete(call.record.id);
    }
    this.deadlines.trim();
    this.pausedIfIdle();
  }

  /** Pausing and no handler left to answer: the run ends paused. */
  private pausedIfIdle(): void {
    if (this.pausing === undefined || this.pending.size > 0 || !this.session.replying()) return;
    const pending = this.pausing;
    for (const call of pending) this.journal!.calls.delete(call.id);
    this.session.paused({ calls: this.journal!.answered(), pending });
  }

  /** Starts a call's handler now, or queues it (its deadline runs from now). */
  private admit(record: CallRecord, kept: boolean, startedAt: number, handler: Capability, args: Json): void {
    const { limits } = this.settings;
    const { callTimeoutMs } = limits;
    // The deadline counts from now: for a call that waited for approval, from its decision.
    const call = new Call(record, kept, startedAt, this.session.now() + callTimeoutMs, handler, args);
    this.pending.set(record.id, call);
    if (callTimeoutMs !== Infinity) this.deadlines.add(call);
    // While the guest leaves more than maxUnreadChars of replies unread, no handler starts: each answer
    // would only add to the queue the guest is not reading. Nor while maxRunningHandlers run: each of
    // them may still return a large answer, uncounted until it exists. The call waits; its deadline runs.
    if (this.holdsReading() || this.running >= limits.maxRunningHandlers) this.waitingToStart.push(call);
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
      this.session.finish(failures.reusedRequestId(id, this.pending.has(id)));
      return false;
    }
    const max = this.settings.limits.maxScatteredIds;
    if (this.idsAbove.size >= max) {
      this.session.finish(failures.scatteredRequestIds(max, this.idsUpTo + 1));
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
    const settled = (outcome: Outcome) => {
      this.running--;
      // Timed out or the run ended: the answer is dropped. Else its reply is sent or held before the slot is reused.
      if (!call.settled) {
        call.settled = true;
        this.pending.delete(record.id);
        this.deadlines.trim();
        this.reply(record, call.kept, startedAt, outcome);
      }
      if (this.waitingToStart.size > 0) this.handlerSettled();
      this.pausedIfIdle();
    };
    // A handler that answered synchronously is replied to now, in the turn its request was read (answer.ts).
    const answered = answer(call.handler, args, new CallContext(record.name, record.id, call));
    if (answered instanceof Promise) void answered.then(settled);
    else settled(answered);
  }

  /** A handler settled while calls wait: its slot goes to the next, and reading resumes once none waits. */
  private handlerSettled(): void {
    this.startWaiting();
    if (!this.holdsReading()) this.outbox.wakeReader();
  }

  /**
   * Starts the waiting calls, in order, while the guest's unread replies stay under the limit and fewer
   * than `maxRunningHandlers` handlers run. A call that timed out while waiting is dropped and never starts.
   */
  private startWaiting(): void {
    const { maxRunningHandlers } = this.settings.limits;
    for (let call = this.waitingToStart.peek(); call !== undefined; call = this.waitingToStart.peek()) {
      if (!call.settled && (this.unreadFull() || this.running >= maxRunningHandlers)) return;
      if (!this.session.replying()) return;
      this.waitingToStart.take();
      if (!call.settled) this.start(call);
    }
  }

  private timedOut(call: Call): void {
    const { id, name } = call.record;
    call.settled = true;
    this.pending.delete(id);
    const ms = this.settings.limits.callTimeoutMs;
    call.abort(replies.callTimeoutReason(name, ms));
    call.args = null;
    this.reply(call.record, call.kept, call.startedAt, replies.callTimedOut(name, ms));
    this.pausedIfIdle();
  }

  private reply(record: CallRecord, kept: boolean, startedAt: number, outcome: Outcome): void {
    if (!this.session.replying()) return;
    record.durationMs = this.session.now() - startedAt;
    this.journal?.answer(record.id, outcome);
    // Counted as soon as it exists: while the guest leaves too much unread, the answer waits as it is
    // (its frame would be one more copy of its content, queued where the guest is not reading).
    if (this.unreadFull()) this.waitingToSend.push({ record, kept, outcome });
    else this.sendReply(record, kept, outcome);
  }

  /** Sends the held answers, in order, while the guest's unread replies stay under the limit. */
  private sendHeld(): void {
    while (!this.outbox.full() && this.session.replying()) {
      const held = this.waitingToSend.take();
      if (held === undefined) return;
      this.sendReply(held.record, held.kept, held.outcome);
    }
  }

  /** Encodes the reply (or the failure saying it cannot be sent), records it and sends it. */
  private sendReply(record: CallRecord, kept: boolean, outcome: Outcome): void {
    let line = replyLine(record.id, outcome);
    const { maxReplyBytes: max, maxCallPayloadChars } = this.settings.limits;
    if (line === undefined || tooLong(line, max)) {
      outcome = replies.answerNotSent(record.name, line === undefined ? undefined : Buffer.byteLength(line), max);
      line = replyLine(record.id, outcome)!;
    }
    if (kept) {
      record.status = outcome.status;
      if (this.payloadChars + line.length > maxCallPayloadChars) {
        record.outcomeDropped = true;
        if (record.argumentsDropped !== true) this.droppedPayloads++;
      } else {
        this.payloadChars += line.length;
        record.outcome = outcome;
      }
    }
    this.session.observer?.replied(record.id, outcome, line);
    this.outbox.send(line);
  }

  /** Gives up every call not yet answered: running handlers are aborted, waiting ones never start; none gets a reply. */
  dropPending(why: string): void {
    for (const call of this.pending.values()) {
      call.settled = true;
      call.record.durationMs = this.session.now() - call.startedAt;
      call.abort(new DOMException(`${why} before ${JSON.stringify(call.record.name)} was answered`, "AbortError"));
    }
    this.pending.clear();
    for (const waiting of [...this.awaiting.values()]) {
      if (!this.leave(waiting)) continue;
      waiting.record.durationMs = this.session.now() - waiting.startedAt;
      waiting.controller?.abort(new DOMException(`${why} before ${JSON.stringify(waiting.record.name)} was approved`, "AbortError"));
    }
    this.deadlines.clear();
    this.waitingToStart.clear();
    this.waitingToSend.clear();
  }
}

/** Whether `line` is over `max` UTF-8 bytes, counting bytes only when the length alone cannot tell. */
function tooLong(line: string, max: number): boolean {
  if (line.length > max) return true;
  if (line.length * 3 <= max) return false;
  return Buffer.byteLength(line) > max;
}
