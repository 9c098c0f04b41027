import type { Json } from "../../protocol/json.js";
import { Outcome, returnedOutcome } from "../../protocol/outcome.js";
import * as replies from "../report/call-failures.js";
import type { Capability, CapabilityContext } from "../types.js";

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
    return replies.handlerFailed(error);
  }
  return outcomeOf(value, ctx.name);
}

/** The reply for a handler's return value (see {@link Capability}). */
export function outcomeOf(value: unknown, name: string): Outcome {
  if (typeof value === "string") return Outcome.success(value);
  const reply = returnedOutcome(value);
  if (!("problem" in reply)) return reply;
  return replies.answerNotJson(name, reply.inOutcome, reply.problem);
}
