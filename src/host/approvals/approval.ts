/**
 * Approvals inside a run (docs/approvals.md): which calls need a person's (or a policy's) decision before
 * their handler runs, the options a host gives (`approval`), and the gate that asks, waits and answers.
 * The gate lives beside call admission: a call that needs approval waits here, its handler not started,
 * its own deadline not yet running, and the run's deadline held (see `CallSession.holdClock`).
 */
import type { Json } from "../../protocol/json.js";
import type { Outcome } from "../../protocol/outcome.js";
import { MAX_TIMER_MS } from "../../protocol/timers.js";
import type { Capability, CapabilityContext } from "../../contract/contract.js";
import { checkLedger, type ApprovalLedger } from "./ledger.js";

/** A call waiting for a decision, as `approval.decide` sees it. */
export interface ApprovalCall {
  /** The guest's request id (unique in the run; also the step of a replay). */
  id: number;
  /** The capability the body called. */
  name: string;
  /** The arguments as the body sent them (not yet checked by a contract's schema). */
  arguments: Json;
}

/**
 * A decision on one call. `by` is a free-form label of who or what decided, kept in the report.
 * `{ pause: true }` ends the run with a resumable token (runCode with `approval.tokenKey` only; elsewhere
 * the call is denied, saying why).
 */
export type ApprovalDecision =
  { approved: true; by?: string } | { approved: false; reason: string; by?: string } | { pause: true; by?: string };

/** A decision given to {@link resumeCode} for a pending call: approve or deny (pausing again is for live calls). */
export type ResumeDecision = { approved: true; by?: string } | { approved: false; reason: string; by?: string };

/**
 * Whether a call to one capability needs approval: `true`, or a predicate over the arguments as the body
 * sent them. A predicate that throws, or returns anything but `false`, means "needs approval" (fail closed).
 */
export type ApprovalRule = boolean | ((args: Json) => boolean);

/** Options of a run's approvals (`approval` in runGuest/runCode/runHost options). */
export interface ApprovalOptions {
  /**
   * Asked once for each call that needs approval, while the body waits for that call (other calls go
   * on). `signal` aborts when the answer is no longer wanted: the decision deadline passed, the run
   * ended or paused. A throw, a rejection or a malformed decision denies the call (the reason the body
   * sees is generic; the report's approval record has the error). Without `decide`, every call that needs
   * approval is denied, saying so.
   */
  decide?: (call: ApprovalCall, context: { signal: AbortSignal }) => ApprovalDecision | PromiseLike<ApprovalDecision>;
  /**
   * Calls of this run that need approval besides those whose capability says so (`requiresApproval`):
   * capability names, or a predicate over the call (a throw or any value but `false` means "needs approval").
   */
  required?: readonly string[] | ((call: ApprovalCall) => boolean);
  /**
   * How long one decision may take, default {@link DEFAULT_APPROVAL_TIMEOUT_MS} (10 minutes); Infinity for
   * no limit. Past it the call is answered `ApprovalTimedOut` and its handler does not run.
   */
  timeoutMs?: number;
  /**
   * runCode/resumeCode: the key a pause token is signed with (HMAC-SHA256), at least 32 bytes (a string's
   * UTF-8 bytes count). Without it a `{ pause: true }` decision denies the call instead.
   */
  tokenKey?: string | Uint8Array;
  /**
   * resumeCode: where a resume is claimed before anything of it runs (docs/approvals.md, "Resume once"):
   * a token already claimed there is refused with an `ApprovalTokenError` (`AlreadyResumed`).
   * `memoryLedger()` for one process, `fileLedger(dir)` for one machine, `redisLedger(client)` for many
   * hosts. runCode takes it too (so one `approval` object serves both) and does not use it. Without it,
   * a token can be resumed more than once.
   */
  ledger?: ApprovalLedger;
}

/** What became of one approval asked in a run (`report.approvals`). */
export interface ApprovalRecord {
  /** The call's request id (see `report.calls`). */
  id: number;
  name: string;
  /**
   * "approved" (the handler ran), "denied" (`ApprovalDenied`), "timedOut" (`ApprovalTimedOut`), "paused"
   * (pending in `report.paused`), "unanswered" (the run ended first).
   */
  decision: "approved" | "denied" | "timedOut" | "paused" | "unanswered";
  /** Who or what decided, as `decide` (or resumeCode's decision) said. */
  by?: string;
  /** The denial's reason; for a `decide` that failed, why. */
  reason?: string;
  /** Milliseconds since the run started when the approval was asked. */
  atMs: number;
  /** How long the decision took (from asking to deciding, or to the end of the run). */
  durationMs: number;
  /** Set when the decision came from `resumeCode`'s `decisions` rather than a live `decide`. */
  resumed?: true;
}

/** A run that paused for approval (`report.paused`): store `token`, resume it with `resumeCode`. */
export interface PausedRun {
  /** Plain JSON: keep it anywhere, give it to `resumeCode` (it is signed; see docs/approvals.md). */
  token: ApprovalToken;
  /** The calls waiting for a decision; `resumeCode`'s `decisions` are keyed by their `id`. */
  pending: ApprovalCall[];
}

/** A signed pause token (docs/approvals.md, "The token"): `payload` is JSON text, `signature` its HMAC. */
export interface ApprovalToken {
  format: "ears-approval-token";
  version: number;
  payload: string;
  signature: string;
}

/** Default `approval.timeoutMs`: 10 minutes, long enough for a person at a prompt. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60 * 1000;

/** Minimum length of `approval.tokenKey` in bytes (the size of HMAC-SHA256's output). */
export const MIN_TOKEN_KEY_BYTES = 32;

/** One call answered before a pause, as the token keeps it. */
export interface JournalCall {
  id: number;
  name: string;
  arguments: Json;
  outcome: Outcome;
}

/** What a paused session hands its sealer: the answered calls and the pending ones. */
export interface PausedState {
  calls: JournalCall[];
  pending: ApprovalCall[];
}

/** The replay of a resumed run: answers by step, and the decisions for the pending steps. */
export interface Replay {
  calls: ReadonlyMap<number, JournalCall>;
  pending: ReadonlyMap<number, { call: ApprovalCall; decision: ResumeDecision | undefined }>;
}

/** Approval options after checking. */
export interface ApprovalSettings {
  decide: ApprovalOptions["decide"];
  required: ApprovalOptions["required"];
  timeoutMs: number;
  tokenKey: Uint8Array | undefined;
  ledger: ApprovalLedger | undefined;
  /** runCode: turns a paused state into the report's token; absent where a run cannot be resumed. */
  seal?: (state: PausedState) => ApprovalToken;
  /** resumeCode: the steps answered from the token. */
  replay?: Replay;
}

/** @internal Checks `options.approval`. Throws TypeError or RangeError naming the bad field. */
export function approvalSettings(approval: ApprovalOptions | undefined, caller: string): ApprovalSettings | undefined {
  if (approval === undefined) return undefined;
  if (typeof approval !== "object" || approval === null) throw new TypeError(`${caller}: options.approval must be an object`);
  const { decide, required, timeoutMs = DEFAULT_APPROVAL_TIMEOUT_MS, tokenKey, ledger } = approval;
  if (decide !== undefined && typeof decide !== "function") {
    throw new TypeError(`${caller}: options.approval.decide must be a function (call, { signal }) => decision`);
  }
  if (
    required !== undefined &&
    typeof required !== "function" &&
    !(Array.isArray(required) && required.every((name) => typeof name === "string"))
  ) {
    throw new TypeError(`${caller}: options.approval.required must be an array of capability names or a function (call) => boolean`);
  }
  if (!(typeof timeoutMs === "number" && timeoutMs > 0 && (Number.isFinite(timeoutMs) || timeoutMs === Infinity))) {
    throw new RangeError(`${caller}: options.approval.timeoutMs must be a positive number of milliseconds (or Infinity)`);
  }
  return {
    decide,
    required,
    timeoutMs: timeoutMs > MAX_TIMER_MS ? Infinity : timeoutMs,
    tokenKey: tokenKey === undefined ? undefined : tokenKeyBytes(tokenKey, caller),
    ledger: checkLedger(ledger, caller),
  };
}

/** @internal The key's bytes, checked: a string's UTF-8 bytes or a copy of the array, at least 32 bytes. */
export function tokenKeyBytes(key: unknown, caller: string): Uint8Array {
  const bytes = typeof key === "string" ? Buffer.from(key, "utf8") : key instanceof Uint8Array ? Uint8Array.from(key) : undefined;
  if (bytes === undefined) throw new TypeError(`${caller}: options.approval.tokenKey must be a string or a Uint8Array`);
  if (bytes.length < MIN_TOKEN_KEY_BYTES) {
    throw new RangeError(
      `${caller}: options.approval.tokenKey must be at least ${MIN_TOKEN_KEY_BYTES} bytes (got ${bytes.length}); ` +
        "use a random secret, e.g. crypto.randomBytes(32)",
    );
  }
  return bytes;
}

/** @internal Checks a handler's `requiresApproval` (set by `requireApproval` or a contract's `implement`). */
export function checkApprovalRule(handler: Capability, name: string, caller: string): void {
  const rule = (handler as { requiresApproval?: unknown }).requiresApproval;
  if (rule !== undefined && typeof rule !== "boolean" && typeof rule !== "function") {
    throw new TypeError(
      `${caller}: options.capabilities[${JSON.stringify(name)}].requiresApproval must be a boolean or a function (args) => boolean`,
    );
  }
}

/**
 * @internal Whether a call needs approval: its capability's rule, or the run's `approval.required`.
 * Fail closed: a predicate that throws or answers anything but `false` says yes.
 */
export function needsApproval(handler: Capability, call: ApprovalCall, settings: ApprovalSettings | undefined): boolean {
  const rule = (handler as { requiresApproval?: unknown }).requiresApproval;
  if (rule === true || (typeof rule === "function" && !saysNo(() => (rule as (args: Json) => unknown)(call.arguments)))) return true;
  const required = settings?.required;
  if (required === undefined) return false;
  if (typeof required === "function") return !saysNo(() => required(call));
  return required.includes(call.name);
}

function saysNo(predicate: () => unknown): boolean {
  try {
    return predicate() === false;
  } catch {
    return false;
  }
}

/** @internal Why a decision is not one of the three shapes, or undefined when it is. */
export function decisionProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return "a decision must be an object";
  const d = value as Record<string, unknown>;
  if (d.by !== undefined && typeof d.by !== "string") return "by must be a string";
  if (d.pause === true && d.approved === undefined) return undefined;
  if (d.approved === true) return undefined;
  if (d.approved === false) return typeof d.reason === "string" ? undefined : "a denial needs a string reason";
  return "expected { approved: true }, { approved: false, reason } or { pause: true }";
}

/**
 * Marks a handler of a plain `capabilities` map as needing approval: `true` (the default), or a predicate
 * over the arguments as the body sent them (a throw or anything but `false` means "needs approval").
 * Returns a new handler that calls `handler`; the original is not changed.
 *
 * @example
 * const capabilities = {
 *   send_email: requireApproval(sendEmail),
 *   pay: requireApproval(pay, (args) => (args as { amount: number }).amount > 100),
 * };
 */
export function requireApproval(
  handler: (args: never, ctx: CapabilityContext) => unknown,
  rule: ApprovalRule = true,
): Capability & { requiresApproval: ApprovalRule } {
  if (typeof handler !== "function") throw new TypeError("requireApproval: the handler must be a function (args, ctx) => answer");
  if (typeof rule !== "boolean" && typeof rule !== "function") {
    throw new TypeError("requireApproval: the rule must be a boolean or a function (args) => boolean");
  }
  return Object.assign((args: Json, ctx: CapabilityContext) => handler(args as never, ctx), { requiresApproval: rule });
}
