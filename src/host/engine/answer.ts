import type { Json } from "../../protocol/json.js";
import { Outcome, returnedOutcome } from "../../protocol/outcome.js";
import * as replies from "../report/call-failures.js";
import type { Capability, CapabilityContext } from "../api/types.js";

/**
 * Runs a handler and turns whatever it does into the reply outcome: it never throws and its promise never
 * rejects. A synchronous throw is caught like a rejection. Values JSON would alter are refused with a reply
 * that says why, never sent altered. The outcome comes back itself, not in a promise, when the handler
 * answered synchronously with a value that cannot be a thenable (a primitive, or a plain object or array with
 * no own `then`; found without running any getter): its reply can then be written in the turn its request
 * was read, without the three microtask hops an `await` takes (issue 33: a fresh runner's calls wait for
 * each). A promise, a thenable or a class instance is awaited, once, as `await` does.
 */
export function answer(handler: Capability, args: Json, ctx: CapabilityContext): Outcome | Promise<Outcome> {
  let value: unknown;
  try {
    value = handler(args, ctx);
  } catch (error) {
    return replies.handlerFailed(error);
  }
  return settledValue(value) ? outcomeOf(value, ctx.name) : answerLater(value, ctx.name);
}

/** Whether `value` is surely not a thenable, found without reading any property (a getter could run). */
function settledValue(value: unknown): boolean {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return true;
  if (typeof value === "function") return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return (prototype === Object.prototype || prototype === Array.prototype || prototype === null) && !Object.hasOwn(value, "then");
}

/** The outcome of a handler's asynchronous answer (or of a thenable it returned). */
async function answerLater(value: unknown, name: string): Promise<Outcome> {
  try {
    return outcomeOf(await value, name);
  } catch (error) {
    return replies.handlerFailed(error);
  }
}

/** The reply for a handler's return value (see {@link Capability}). */
export function outcomeOf(value: unknown, name: string): Outcome {
  if (typeof value === "string") return Outcome.success(value);
  const reply = returnedOutcome(value);
  if (!("problem" in reply)) return reply;
  return replies.answerNotJson(name, reply.inOutcome, reply.problem);
}
