import type { Ears, Json, Outcome } from "../../../src/index.js";

/** Turns a vector's `program` steps into a guest program (see wire/vectors/README.md). */
export function vectorProgram(
  steps: readonly Record<string, unknown>[],
  runtime: { Outcome: typeof Outcome },
): (ears: Ears, input: Json) => Promise<unknown>;
