// The text of an error that escaped the program while it was served; the stdio wire watches for them
// (wires/wire.ts, watchEscapes) and the session describes them with this.
import { describeError } from "../protocol/errors.js";
import type { EscapeOrigin } from "../wires/wire.js";

/** The error a run fails with when something escaped the program (keeps the original's stack). */
export function escapedError(error: unknown, origin: EscapeOrigin): Error {
  const how = origin === "unhandledRejection" ? "a promise rejection nobody handled" : "an uncaught exception";
  const escaped = new Error(`${how} escaped the program: ${describeError(error)}`, { cause: error });
  if (error instanceof Error && error.stack) escaped.stack = error.stack;
  return escaped;
}
