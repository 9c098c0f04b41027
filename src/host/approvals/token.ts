/**
 * The pause token of a run that paused for approval (docs/approvals.md, "The token"): plain JSON whose
 * `payload` is JSON text (the body, its input, the answered calls, the pending ones) and whose `signature`
 * is an HMAC-SHA256 of the format, the version and the payload under the host's `approval.tokenKey`.
 * Reading one checks, in order: that it is a token at all, its version, its signature (in constant
 * time), then the payload's shape; anything else is refused with an {@link ApprovalTokenError}.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { jsonProblem, type Json } from "../../protocol/json.js";
import { Outcome, outcomeProblem } from "../../protocol/outcome.js";
import type { ApprovalCall, ApprovalToken, JournalCall, PausedState } from "./approval.js";

/** The `format` field of every token. */
export const TOKEN_FORMAT = "ears-approval-token";
/** The token version this ears writes and reads. Older tokens are refused (docs/approvals.md says why). */
export const TOKEN_VERSION = 1;

/** Why a token was refused. */
export type ApprovalTokenProblem = "NotAToken" | "UnsupportedVersion" | "BadSignature" | "Malformed" | "AlreadyResumed";

/** A pause token that cannot be resumed: `problem` says which check refused it; nothing was run. */
export class ApprovalTokenError extends Error {
  override name = "ApprovalTokenError";
  constructor(
    readonly problem: ApprovalTokenProblem,
    message: string,
  ) {
    super(message);
  }
}

/** @internal What a token holds. */
export interface TokenContent extends PausedState {
  code: string;
  input: Json;
}

function signature(payload: string, key: Uint8Array): string {
  return createHmac("sha256", key).update(`${TOKEN_FORMAT}\n${TOKEN_VERSION}\n${payload}`).digest("base64url");
}

/** @internal Signs a paused run's content into a token. */
export function sealToken(content: TokenContent, key: Uint8Array): ApprovalToken {
  // The nonce makes every pause's token its own, so that two runs pausing alike are claimed apart in a ledger.
  const payload = JSON.stringify({
    nonce: randomBytes(16).toString("base64url"),
    code: content.code,
    input: content.input,
    calls: content.calls.map(({ id, name, arguments: args, outcome }) => ({ id, name, arguments: args, outcome })),
    pending: content.pending.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
  });
  return { format: TOKEN_FORMAT, version: TOKEN_VERSION, payload, signature: signature(payload, key) };
}

/**
 * @internal Checks a token (the object, or its JSON text) and returns what it holds. Throws an
 * {@link ApprovalTokenError} naming the first check it fails.
 */
export function openToken(token: unknown, key: Uint8Array): TokenContent {
  let value = token;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      throw new ApprovalTokenError(
        "NotAToken",
        "resumeCode: the token is a string but not JSON; pass the report's paused.token (or its JSON text)",
      );
    }
  }
  if (typeof value !== "object" || value === null || (value as { format?: unknown }).format !== TOKEN_FORMAT) {
    throw new ApprovalTokenError("NotAToken", `resumeCode: this is not an ears pause token (no format "${TOKEN_FORMAT}"); nothing was run`);
  }
  const { version, payload, signature: signed } = value as Record<string, unknown>;
  if (version !== TOKEN_VERSION) {
    throw new ApprovalTokenError(
      "UnsupportedVersion",
      `resumeCode: the token has version ${JSON.stringify(version) ?? "undefined"}; this ears reads version ${TOKEN_VERSION} only ` +
        "(tokens are not migrated: resume a token with the ears that made it); nothing was run",
    );
  }
  if (typeof payload !== "string" || typeof signed !== "string") {
    throw new ApprovalTokenError("Malformed", "resumeCode: the token's payload and signature must be strings; nothing was run");
  }
  const expected = Buffer.from(signature(payload, key));
  const given = Buffer.from(signed);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ApprovalTokenError(
      "BadSignature",
      "resumeCode: the token's signature does not match: it was changed, or signed with another approval.tokenKey; nothing was run",
    );
  }
  let content: unknown;
  try {
    content = JSON.parse(payload);
  } catch {
    throw new ApprovalTokenError("Malformed", "resumeCode: the token's payload is not JSON; nothing was run");
  }
  const problem = contentProblem(content);
  if (problem !== undefined)
    throw new ApprovalTokenError("Malformed", `resumeCode: the token's payload is malformed: ${problem}; nothing was run`);
  const c = content as TokenContent;
  try {
    return { ...c, calls: c.calls.map((call) => ({ ...call, outcome: Outcome.fromJson(call.outcome) })) };
  } catch (error) {
    throw new ApprovalTokenError("Malformed", `resumeCode: the token's payload is malformed: ${(error as Error).message}; nothing was run`);
  }
}

/**
 * @internal The id a token is claimed under in a ledger: a digest of its signature, which covers the
 * payload and its nonce (so it names this one pause), and of nothing the token's holder could vary
 * without failing the signature check.
 */
export function tokenClaimId(token: unknown): string {
  const value = typeof token === "string" ? (JSON.parse(token) as { signature: string }) : (token as { signature: string });
  return `token:${createHash("sha256").update(value.signature).digest("base64url")}`;
}

/** Why a signed payload is not a token's content (a key shared with another program could sign anything). */
function contentProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "not an object";
  const c = value as Record<string, unknown>;
  if (typeof c.code !== "string") return "code must be a string";
  if (c.nonce !== undefined && typeof c.nonce !== "string") return "nonce must be a string";
  const inputProblem = jsonProblem(c.input);
  if (inputProblem !== undefined) return `input: ${inputProblem}`;
  if (!Array.isArray(c.calls) || !Array.isArray(c.pending)) return "calls and pending must be arrays";
  if (c.pending.length === 0) return "no pending call";
  const ids = new Set<number>();
  for (const call of [...c.calls, ...c.pending] as unknown[]) {
    const problem = callProblem(call);
    if (problem !== undefined) return problem;
    const id = (call as ApprovalCall).id;
    if (ids.has(id)) return `call id ${id} appears twice`;
    ids.add(id);
  }
  for (const call of c.calls as JournalCall[]) {
    const problem = outcomeProblem(call.outcome);
    if (problem !== undefined) return `the outcome of call ${call.id}: ${problem}`;
  }
  return undefined;
}

function callProblem(call: unknown): string | undefined {
  if (typeof call !== "object" || call === null) return "a call must be an object";
  const { id, name, arguments: args } = call as Record<string, unknown>;
  if (!(typeof id === "number" && Number.isSafeInteger(id) && id >= 1)) return "a call id must be a positive integer";
  if (typeof name !== "string") return `call ${id}: name must be a string`;
  const problem = jsonProblem(args);
  return problem === undefined ? undefined : `call ${id}: arguments: ${problem}`;
}
