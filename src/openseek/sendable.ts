/**
 * Refusal of values JSON would alter, before anything is sent (the runtime's policy: refuse, never fix).
 */
import { jsonProblem, type Json } from "../protocol/json.js";

/**
 * Returns `value` typed as JSON, or throws a `TypeError` naming `what` and the problem (for example
 * `$.count is NaN`). Nothing has been sent when it throws, so the call can be fixed and repeated.
 */
export function sendable(value: unknown, what: string): Json {
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new TypeError(`${what} cannot be sent as JSON unchanged: ${problem}; nothing was sent`);
  return value as Json;
}

/** Returns `value` when it is a string, or throws a `TypeError` saying nothing was sent. */
export function requireString(value: unknown, what: string): string {
  if (typeof value !== "string")
    throw new TypeError(`${what} must be a string, got ${value === null ? "null" : typeof value}; nothing was sent`);
  return value;
}
