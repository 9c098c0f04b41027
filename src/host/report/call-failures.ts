/**
 * Every failure reply the host gives one call (a `failure` outcome with a {@link HostReplyCode}): the
 * wording a guest reads when its call did not get an answer from a handler lives here, in one file.
 * Run-level failures are in failures.ts.
 */
import { describeError } from "../../protocol/errors.js";
import { notAllowedMessage, Outcome } from "../../protocol/outcome.js";
import { quotedExcerpt } from "../../protocol/text.js";
import { HostReplyCode } from "./codes.js";

/** The name is not in the run's allow-list (quoted in at most 64 characters: it is guest text). */
export function capabilityDenied(name: string, allowed: readonly string[]): Outcome {
  return Outcome.failure(HostReplyCode.CapabilityDenied, `${notAllowedMessage(name, allowed)}; it did not run`);
}

/** Allowed, but the host has no handler by that name. */
export function capabilityMissing(name: string): Outcome {
  return Outcome.failure(
    HostReplyCode.CapabilityMissing,
    `capability ${quotedExcerpt(name, 64)} is allowed but the host has no handler for it; it did not run`,
  );
}

/** `limits.maxInFlight` calls are already running or waiting. */
export function tooManyCalls(name: string, maxInFlight: number): Outcome {
  return Outcome.failure(
    HostReplyCode.TooManyCalls,
    `the host is already running ${maxInFlight} calls (limits.maxInFlight); ` +
      `${JSON.stringify(name)} did not run, try again when earlier calls have finished`,
  );
}

/** The handler did not answer within `limits.callTimeoutMs`. */
export function callTimedOut(name: string, ms: number): Outcome {
  return Outcome.failure(
    HostReplyCode.CallTimedOut,
    `the host did not answer ${JSON.stringify(name)} within ${ms} ms (limits.callTimeoutMs); ` +
      "the call may have run, so its effects are unknown",
  );
}

/** The reason the call's abort signal gives its handler when the call times out. */
export function callTimeoutReason(name: string, ms: number): DOMException {
  return new DOMException(`the call to ${JSON.stringify(name)} timed out after ${ms} ms`, "TimeoutError");
}

/** The handler's answer could not be encoded, or its reply line is over `limits.maxReplyBytes`. */
export function answerNotSent(name: string, encodedBytes: number | undefined, maxReplyBytes: number): Outcome {
  const why =
    encodedBytes === undefined
      ? "could not be encoded (it is too large for JSON.stringify)"
      : `is ${encodedBytes} bytes, over the ${maxReplyBytes}-byte limit (limits.maxReplyBytes)`;
  return Outcome.failure(HostReplyCode.CapabilityFailed, `the answer to ${JSON.stringify(name)} ${why}; it was not sent`);
}

/** The handler threw or rejected. */
export function handlerFailed(error: unknown): Outcome {
  return Outcome.failure(HostReplyCode.CapabilityFailed, describeError(error));
}

/** The handler answered with a value JSON would alter (`inOutcome`: the structured value of an outcome it returned). */
export function answerNotJson(name: string, inOutcome: boolean, problem: string): Outcome {
  const what = inOutcome ? "an outcome whose structured value" : "a value that";
  return Outcome.failure(
    HostReplyCode.CapabilityFailed,
    `the host's handler for ${JSON.stringify(name)} answered with ${what} cannot be sent as JSON unchanged: ${problem}`,
  );
}

/** The call needed approval and was denied (`reason` is the decider's, shown to the body as it is). */
export function approvalDenied(name: string, reason: string): Outcome {
  return Outcome.failure(HostReplyCode.ApprovalDenied, `${JSON.stringify(name)} was not approved: ${reason}; it did not run`);
}

/** No decision within `approval.timeoutMs`. */
export function approvalTimedOut(name: string, ms: number): Outcome {
  return Outcome.failure(
    HostReplyCode.ApprovalTimedOut,
    `no one approved ${JSON.stringify(name)} within ${ms} ms (approval.timeoutMs); it did not run`,
  );
}
