import { quotedExcerpt } from "./text.js";
import { jsonDifference, jsonProblem, type Json } from "./json.js";

/** A capability's answer that worked. `structured` absent and `structured: null` are different. */
export interface Success {
  readonly status: "success";
  readonly content: string;
  readonly structured?: Json;
}

/** A capability's answer that failed: a value to branch on, not an exception. */
export interface Failure {
  readonly status: "failure";
  readonly code: string;
  readonly content: string;
  readonly structured?: Json;
}

/** A success whose `structured` a contract's schema checked (`TypedSuccess<T>` in contract.ts, any `T`). */
interface CheckedSuccess {
  readonly status: "success";
  readonly content: string;
  readonly structured: unknown;
}

/** The wire mirror of a host outcome (protocol 1), discriminated on `status`. */
export type Outcome = Success | Failure;

/** Failure codes the runtime itself produces. Hosts may use any other code. */
export const FailureCode = {
  /** The name is not in the host's `allowed` list; nothing was sent. */
  CapabilityDenied: "CapabilityDenied",
  /** The handle was closed or the run had ended; nothing was sent. */
  ScopeClosed: "ScopeClosed",
  /** The call's arguments cannot be sent as JSON unchanged; nothing was sent. */
  InvalidArguments: "InvalidArguments",
  /** The guest program threw, or returned a value JSON cannot carry unchanged. */
  GuestFailed: "GuestFailed",
  /** The host's input does not match the program's `input` schema; the program did not run. */
  InvalidInput: "InvalidInput",
  /** The host's success does not match the contract's `structured` schema; the request did execute. */
  InvalidReply: "InvalidReply",
} as const;

// Outcomes made by these helpers (or parsed from the wire) are recognised when a program returns one.
// The mark is a private class field stamped onto the outcome object: invisible to JSON, to reflection
// and to equality checks, unforgeable from outside this module, and as cheap as setting a property
// (a WeakSet of every outcome cost about 1 µs per outcome, in adding and in garbage collection).
class Stamp {
  constructor(target: object) {
    return target; // a constructor that returns an object makes the subclass add its fields to it
  }
}
class MadeOutcome extends Stamp {
  readonly #made = true;

  static has(value: object): boolean {
    return #made in value;
  }
}

function brand<T extends Outcome>(outcome: T): T {
  new MadeOutcome(outcome);
  return Object.freeze(outcome);
}

function success(content = "", structured?: Json): Success {
  return brand(structured === undefined ? { status: "success", content } : { status: "success", content, structured });
}

function failure(code: string, content = "", structured?: Json): Failure {
  return brand(structured === undefined ? { status: "failure", code, content } : { status: "failure", code, content, structured });
}

// One signature, wide enough for a typed call's result: overloads would narrow an `any` argument to
// `never` in the else branch.
function isError(outcome: Outcome | CheckedSuccess): outcome is Failure {
  return outcome.status === "failure";
}

/** The plain JSON object of the wire form (not a string). Throws when `structured` is not faithful JSON. */
function toJson(outcome: Outcome): { [key: string]: Json } {
  const json: { [key: string]: Json } =
    outcome.status === "failure"
      ? { status: "failure", code: outcome.code, content: outcome.content }
      : { status: "success", content: outcome.content };
  if (outcome.structured !== undefined) {
    const problem = jsonProblem(outcome.structured);
    if (problem !== undefined) throw new TypeError(`Outcome.toJson: structured${problem.slice(1)}`);
    json.structured = outcome.structured;
  }
  return json;
}

/**
 * Lenient inverse of {@link toJson}: `content` defaults to "" and `structured` to absent, so hosts may
 * omit optional fields; unknown fields are ignored. Throws a TypeError naming the problem when `status`
 * is missing or unknown, a failure has no string `code`, or `content` is present but not a string.
 */
function fromJson(value: unknown): Outcome {
  const problem = outcomeProblem(value);
  if (problem !== undefined) throw new TypeError(`invalid outcome: ${problem}`);
  const structured = (value as { structured?: unknown }).structured;
  const notJson = structured === undefined ? undefined : jsonProblem(structured);
  if (notJson !== undefined) throw new TypeError(`invalid outcome: structured${notJson.slice(1)}`);
  return fromValid(value as Record<string, unknown>);
}

/** Builds an outcome from a value {@link outcomeProblem} accepted. */
export function fromValid(value: Record<string, unknown>): Outcome {
  const content = (value.content as string | undefined) ?? "";
  const structured = value.structured as Json | undefined;
  return value.status === "success" ? success(content, structured) : failure(value.code as string, content, structured);
}

/** Why a parsed JSON value is not an outcome, or `undefined` when it is one. */
export function outcomeProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "an outcome must be an object";
  const o = value as Record<string, unknown>;
  if (o.status !== "success" && o.status !== "failure") return 'status must be "success" or "failure"';
  if (o.status === "failure" && typeof o.code !== "string") return "a failure needs a string code";
  if (o.content !== undefined && typeof o.content !== "string") return "content must be a string";
  return undefined;
}

function equal(a: Outcome, b: Outcome): boolean {
  if (a.status !== b.status || a.content !== b.content) return false;
  if (a.status === "failure" && a.code !== (b as Failure).code) return false;
  return jsonDifference(a.structured, b.structured) === undefined;
}

/** True for outcomes made by the {@link Outcome} helpers or parsed from the wire. */
export function isMadeOutcome(value: unknown): value is Outcome {
  return typeof value === "object" && value !== null && MadeOutcome.has(value);
}

/** Helpers for the {@link Outcome} type: constructors, predicates, JSON conversion and equality. */
export const Outcome = { success, failure, isError, toJson, fromJson, equal } as const;

/**
 * The start of a `CapabilityDenied` message, the same on both sides: the guest refuses locally ("nothing
 * was sent"), the host refuses a request ("it did not run").
 */
export function notAllowedMessage(name: string, allowed: readonly string[]): string {
  const list = allowed.length === 0 ? "none" : allowed.map((n) => JSON.stringify(n)).join(", ");
  // The name is the other side's text, possibly megabytes long: quoted in at most 64 characters.
  return `capability ${quotedExcerpt(name, 64)} is not allowed by the host (allowed: ${list})`;
}

/** A value JSON would alter, found by {@link returnedOutcome}: the problem, and whether it was an outcome's `structured`. */
export interface UnsendableValue {
  problem: string;
  inOutcome: boolean;
}

/**
 * A value a program or handler returned, as the outcome to send: `undefined` is an empty success, a made
 * {@link Outcome} is itself, any other JSON value is a success with it as `structured`. A value JSON would
 * alter is never sent altered: the problem is returned (its path starting at `structured` for an outcome's
 * structured value) for the caller to word as its failure.
 */
export function returnedOutcome(value: unknown): Outcome | UnsendableValue {
  if (value === undefined) return Outcome.success();
  if (isMadeOutcome(value)) {
    const problem = value.structured === undefined ? undefined : jsonProblem(value.structured);
    return problem === undefined ? value : { problem: `structured${problem.slice(1)}`, inOutcome: true };
  }
  const problem = jsonProblem(value);
  return problem === undefined ? Outcome.success("", value as Json) : { problem, inOutcome: false };
}
