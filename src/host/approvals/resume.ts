/**
 * resumeCode: goes on with a run that paused for approval (docs/approvals.md). The token is checked
 * first (an {@link ApprovalTokenError} when it is not one, not this version, not signed with this key);
 * then the body runs again in a fresh runner: the calls it made before the pause are answered from the
 * token (their handlers do not run again), the pending calls get their decisions, and the run goes on live.
 */
import { decisionProblem, tokenKeyBytes, type ApprovalCall, type Replay, type ResumeDecision } from "./approval.js";
import type { RunReport } from "../api/types.js";
import { ApprovalTokenError, openToken, tokenClaimId } from "./token.js";
import { checkLedger, type ApprovalLedger } from "./ledger.js";
import { describeError } from "../../protocol/errors.js";
import { runCodeWith, type CodeOptions } from "../code/run-code.js";

/** Options for {@link resumeCode}: runCode's, without `code` and `input` (the token has them), plus the decisions. */
export interface ResumeOptions extends Omit<CodeOptions, "code" | "input"> {
  /**
   * A decision for each pending call (`report.paused.pending`), keyed by its `id`. A pending call without
   * one is asked live through `approval.decide`; without `decide` that is an error (nothing runs).
   */
  decisions?: Readonly<Record<string, ResumeDecision>>;
}

/**
 * Resumes a run that paused for approval from its token (the object in `report.paused.token`, or its
 * JSON text), in this or another host process. `options.approval.tokenKey` must be the key the token
 * was signed with. The body runs again in a fresh runner: its calls before the pause are answered from
 * the token without running their handlers, the pending ones as `decisions` say (an approved call's
 * handler runs once, now; a denied one answers `ApprovalDenied`), and what follows runs live, with
 * approvals asked as in runCode (it may pause again). A body that takes another path than before (another
 * capability or other arguments at a step) ends with `ReplayDiverged` and nothing runs for that call.
 *
 * Throws an {@link ApprovalTokenError} for a token that is not one, has another version, or fails its
 * signature check (changed, or signed with another key), and a TypeError for bad options or decisions;
 * nothing runs then. With `approval.ledger`, the token is then claimed there before anything runs: a
 * token claimed before (resumed already, here or by another process sharing the ledger) rejects with an
 * {@link ApprovalTokenError} whose problem is `AlreadyResumed`, and a ledger that cannot answer rejects
 * with its error; nothing runs then either. Otherwise resolves with a report, as runCode does.
 *
 * @example
 * const first = await runCode({ code, capabilities, approval: { decide: () => ({ pause: true }), tokenKey } });
 * if (first.paused) {
 *   const stored = JSON.stringify(first.paused.token); // keep it anywhere
 *   const id = first.paused.pending[0].id;
 *   const report = await resumeCode(stored, { capabilities, approval: { tokenKey }, decisions: { [id]: { approved: true, by: "ada" } } });
 * }
 */
export function resumeCode(token: unknown, options: ResumeOptions): Promise<RunReport> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("resumeCode: options must be an object with approval.tokenKey and decisions");
  }
  if ("code" in options || "input" in options) {
    throw new TypeError("resumeCode: options.code and options.input come from the token; leave them out");
  }
  const { decisions = {}, ...rest } = options;
  const key = options.approval?.tokenKey;
  if (key === undefined) throw new TypeError("resumeCode: options.approval.tokenKey is required (the key the token was signed with)");
  const content = openToken(token, tokenKeyBytes(key, "resumeCode"));
  const replay: Replay = {
    calls: new Map(content.calls.map((call) => [call.id, call])),
    pending: pendingDecisions(content.pending, decisions, options.approval?.decide !== undefined),
  };
  const ledger = checkLedger(options.approval?.ledger, "resumeCode");
  const claim = ledger === undefined ? undefined : () => claimResume(ledger, tokenClaimId(token), "this token");
  return runCodeWith({ ...rest, code: content.code, input: content.input }, replay, claim);
}

/**
 * @internal Claims `id` in `ledger`: resolves when this is its first claim; rejects with an
 * {@link ApprovalTokenError} (`AlreadyResumed`) when it was claimed before, or with an Error saying the
 * ledger failed. `what` names the thing resumed in the message.
 */
export async function claimResume(ledger: ApprovalLedger, id: string, what: string): Promise<void> {
  let first: unknown;
  try {
    first = await ledger.claim(id);
  } catch (error) {
    throw new Error(`resumeCode: approval.ledger could not claim ${what}: ${describeError(error)}; nothing was run`, { cause: error });
  }
  if (first === true) return;
  if (first !== false) throw new TypeError(`resumeCode: approval.ledger's claim must resolve true or false, got ${String(first)}`);
  throw new ApprovalTokenError(
    "AlreadyResumed",
    `resumeCode: ${what} was already resumed (claimed in approval.ledger): a paused run is resumed once; nothing was run`,
  );
}

function pendingDecisions(
  pending: readonly ApprovalCall[],
  decisions: Readonly<Record<string, ResumeDecision>>,
  canAsk: boolean,
): Replay["pending"] {
  if (typeof decisions !== "object" || decisions === null)
    throw new TypeError("resumeCode: options.decisions must be an object keyed by call id");
  const byId = new Map(pending.map((call) => [String(call.id), call]));
  const unknown = Object.keys(decisions).filter((id) => !byId.has(id));
  if (unknown.length > 0) {
    throw new TypeError(
      `resumeCode: options.decisions names ${unknown.map((id) => JSON.stringify(id)).join(", ")}, not pending in the token ` +
        `(pending: ${[...byId.keys()].join(", ")}); nothing was run`,
    );
  }
  const result = new Map<number, { call: ApprovalCall; decision: ResumeDecision | undefined }>();
  for (const [id, call] of byId) {
    const decision = Object.hasOwn(decisions, id) ? decisions[id] : undefined;
    if (decision !== undefined) {
      const problem =
        decisionProblem(decision) ??
        ((decision as { approved?: unknown }).approved === undefined ? "a resumed call is approved or denied, not paused" : undefined);
      if (problem !== undefined) throw new TypeError(`resumeCode: options.decisions[${JSON.stringify(id)}]: ${problem}`);
    } else if (!canAsk) {
      throw new TypeError(
        `resumeCode: no decision for pending call ${id} (${JSON.stringify(call.name)}) and no approval.decide to ask; nothing was run`,
      );
    }
    result.set(call.id, { call, decision });
  }
  return result;
}
