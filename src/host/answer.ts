import { describeError } from "../protocol/errors.js";
import { jsonProblem, type Json } from "../protocol/json.js";
import { isMadeOutcome, Outcome } from "../protocol/outcome.js";
import { HostReplyCode } from "./codes.js";
import type { Capability, CapabilityContext } from "./types.js";

/**
 * Runs a handler and turns whatever it does into the reply outcome: it never throws and never
 * rejects. A synchronous throw is caught like a rejection. Values JSON would alter are refused with a
 * reply that says why, never sent altered.
 */
export async function answer(handler: Capability, args: Json, ctx: CapabilityContext): Promise<Outcome> {
  let value: unknown;
  try {
    value = await handler(args, ctx);
  } catch (error) {
    return Outcome.failure(HostReplyCode.CapabilityFailed, describeError(error));
  }
  return outcomeOf(value, ctx.name);
}

/** The reply for a handler's return value (see {@link Capability}). */
export function outcomeOf(value: unknown, name: string): Outcome {
  if (value === undefined) return Outcome.success();
  if (typeof value === "string") return Outcome.success(value);
  if (isMadeOutcome(value)) {
    const problem = value.structured === undefined ? undefined : jsonProblem(value.structured);
    if (problem === undefined) return value;
    return Outcome.failure(
      HostReplyCode.CapabilityFailed,
      `the host's handler for ${JSON.stringify(name)} answered with an outcome whose structured value cannot be sent as JSON unchanged: structured${problem.slice(1)}`,
    );
  }
  const problem = jsonProblem(value);
  if (problem !== undefined) {
    return Outcome.failure(
      HostReplyCode.CapabilityFailed,
      `the host's handler for ${JSON.stringify(name)} answered with a value that cannot be sent as JSON unchanged: ${problem}`,
    );
  }
  return Outcome.success("", value as Json);
}
