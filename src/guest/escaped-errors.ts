import { describeError } from "../protocol/errors.js";

/**
 * A wire that owns the process (the stdio wire) can watch for errors that escape the program: an
 * exception thrown from a timer or event callback, or a rejected promise nobody handled. Node would
 * crash with no result frame; `serve` instead ends the run with a `GuestFailed` result.
 */
export const watchEscapes = Symbol("ears.watchEscapes");

/** Implemented by wires that can report escaped errors; the promise rejects with the first one. */
export interface WatchesEscapes {
  [watchEscapes](): Promise<never>;
}

/** The error a run fails with when something escaped the program (keeps the original's stack). */
export function escapedError(error: unknown, origin: "uncaughtException" | "unhandledRejection"): Error {
  const how = origin === "unhandledRejection" ? "a promise rejection nobody handled" : "an uncaught exception";
  const escaped = new Error(`${how} escaped the program: ${describeError(error)}`, { cause: error });
  if (error instanceof Error && error.stack) escaped.stack = error.stack;
  return escaped;
}
