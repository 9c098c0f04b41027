/**
 * The guest program that runs a code body (started by `runCode` as `node runner.js <body file>`): it
 * reads the JavaScript the host compiled, compiles it under the name `code.ts` with the body's own line
 * and column numbers, and serves it. Loads only the guest runtime and Node's built-ins.
 */
import { readFileSync } from "node:fs";
import { Script } from "node:vm";
import { describeError } from "../../protocol/errors.js";
import { FailureCode, Outcome } from "../../protocol/outcome.js";
import { serve } from "../../guest/serve.js";
import { stdio } from "../../wires/stdio.js";
import { CODE_FILENAME, CODE_PREFIX, NO_MODULES_HINT, wrapBody } from "./wrapper.js";

type Body = (ears: unknown, input: unknown, outcome: typeof Outcome) => Promise<unknown>;

const file = process.argv[2];
if (file === undefined) throw new Error("usage: node runner.js <file of the compiled code body>");
const body = new Script(wrapBody(readFileSync(file, "utf8")), {
  filename: CODE_FILENAME,
  // No importModuleDynamically: on Node 20 it needs --experimental-vm-modules, so a body has no import();
  // it works through `ears` and Node's globals (docs/code.md).
  columnOffset: -CODE_PREFIX.length,
}).runInThisContext() as Body;

await serve({
  wire: stdio(),
  run: async (ears, input) => {
    try {
      return await body(ears, input, Outcome);
    } catch (error) {
      // The stack goes to the log; the result names where in the body it was thrown.
      if (error instanceof Error && error.stack) await ears.log(bodyStack(error.stack), "error");
      return Outcome.failure(FailureCode.GuestFailed, `${describeError(error)}${placeIn(error)}${moduleAdvice(error)}`);
    }
  },
});

/** " (at code.ts:LINE:COLUMN)" for the innermost frame in the body, or "" when the body is not on the stack. */
function placeIn(error: unknown): string {
  const stack = error instanceof Error ? String(error.stack) : "";
  const frame = /\bcode\.ts:(\d+):(\d+)/.exec(stack);
  return frame === null ? "" : ` (at ${CODE_FILENAME}:${frame[1]}:${frame[2]})`;
}

/** The stack down to the body's outermost frame: the runner's and serve's frames below it say nothing about the body. */
function bodyStack(stack: string): string {
  const lines = stack.split("\n");
  const last = lines.findLastIndex((line) => line.includes(`${CODE_FILENAME}:`));
  return last < 0 ? stack : lines.slice(0, last + 1).join("\n");
}

/** The way in for a body that reached for `require` or `import()`, which a script compiled here does not have. */
function moduleAdvice(error: unknown): string {
  const { name, message, code } = (error ?? {}) as { name?: unknown; message?: unknown; code?: unknown };
  const requireMissing = name === "ReferenceError" && message === "require is not defined";
  const importMissing = typeof code === "string" && code.startsWith("ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING");
  return requireMissing || importMissing ? `: ${NO_MODULES_HINT}` : "";
}
