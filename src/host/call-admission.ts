// The admission of the guest's calls: unique request ids, the call records and their payload budget, the
// in-flight limit, the running-handler cap and the unread-reply budget that hold calls (and reading) back,
// each call's deadline and reply.
import { excerpt } from "../protocol/text.js";
import type { RequestFrame } from "../protocol/frames.js";
import { Outcome } from "../protocol/outcome.js";
import { FrameQueue } from "../wires/frame-queue.js";
import { answer } from "./answer.js";
import { Call, CallContext, replyLine } from "./calls.js";
import { DeadlineQueue } from "./deadlines.js";
import * as replies from "./call-failures.js";
import * as failures from "./failures.js";
import type { RunObserver } from "./observer.js";
import type { Outbox } from "./outbox.js";
import type { HostSettings } from "./settings.js";
import type { CallRecord, HostFailure } from "./types.js";

/** Characters of a requested capability name kept in a call record; a longer (hostile) name is cut with its length. */
const MAX_RECORDED_NAME_CHARS = 1024;

/** An answer that exists while the guest leaves too much unread: kept as its outcome until it can be sent. */
interface HeldReply {
  record: CallRecord;
  kept: boolean;
  outcome: Outcome;
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
    const { maxInFlight, callTimeoutMs } = limits;
    if (this.running + this.waitingToStart.size >= maxInFlight) {
      this.reply(record, kept, startedAt, replies.tooManyCalls(name, maxInFlight));
      return;
    }
    const call = new Call(record, kept, startedAt, startedAt + callTimeoutMs, handler, frame.arguments);
    this.pending.set(id, call);
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
    void answer(call.handler, args, new CallContext(record.name, record.id, call)).then((outcome) => {
      this.running--;
      // Timed out or the run ended: the answer is dropped. Else its reply is sent or held before the slot is reused.
      if (!call.settled) {
        call.settled = true;
        this.pending.delete(record.id);
        this.deadlines.trim();
        this.reply(record, call.kept, startedAt, outcome);
      }
      if (this.waitingToStart.size > 0) this.handlerSettled();
    });
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
  }

  private reply(record: CallRecord, kept: boolean, startedAt: number, outcome: Outcome): void {
    if (!this.session.replying()) return;
    record.durationMs = this.session.now() - startedAt;
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
