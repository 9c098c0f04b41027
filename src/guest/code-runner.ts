/**
 * The guest program that runs a code body (runCode's runner, built with the guest runtime into one CommonJS
 * script, dist/guest/code-runner.cjs, scripts/bundle.mjs, which a Node host loads with its code cache through
 * code-runner-start.ts): it says hello, takes one body
 * frame carrying the JavaScript the host compiled (wire/PROTOCOL.md, "The code runner"), compiles it under
 * the name `code.ts` with the body's own line and column numbers, serves it for the invoke that follows,
 * and exits. Loads only the guest runtime and Node's built-ins. A warm runner of a run pool is this same
 * program, started ahead and waiting for its body frame.
 */
import { statSync } from "node:fs";
import { Script } from "node:vm";
import {
  decodeBodyFrame,
  encodeBodyFrame,
  CODE_FILENAME,
  CODE_PREFIX,
  NO_MODULES_HINT,
  NO_NETWORK_HINT,
  WARM_FRAME,
  wrapBody,
} from "../protocol/code-body.js";
import { describeError, TransportError } from "../protocol/errors.js";
import { FailureCode, Outcome } from "../protocol/outcome.js";
import { stdio } from "../wires/stdio.js";
import type { Wire } from "../wires/wire.js";
import { rehearse } from "./code-rehearsal.js";
import { serve, type ServeReport } from "./serve.js";

type Body = (ears: unknown, input: unknown, outcome: typeof Outcome) => Promise<unknown>;

const callSites = traceFetch();
const wire = stdio();
const receive = wire.receive.bind(wire);
let body: Body | undefined;
// The body frame comes between hello and invoke: serve's first receive (the invoke's) takes it first.
wire.receive = async () => {
  wire.receive = receive;
  let line = await receive();
  // A pool's runner is told it has time before its body: it rehearses a session first (code-rehearsal.ts).
  if (line === WARM_FRAME) {
    await rehearse(rehearsal);
    line = await receive();
  }
  if (line === undefined) return undefined; // serve reports the host closing before the invoke
  const decoded = decodeBodyFrame(line);
  if ("problem" in decoded) throw new TransportError(decoded.problem, { kind: "malformed" });
  if (decoded.workspace !== undefined) enterWorkspace(decoded.workspace);
  body = compile(decoded.javascript);
  return receive();
};

// One body, then out: the runner exits once its result is written (serve settles when it is flushed), so
// timers or handles the body left do not keep it alive until the host stops it; the exit status is serve's.
// No top-level await: the runner is built as a CommonJS script (scripts/bundle.mjs says why).
void serveBody(wire, () => body!).then(() => process.exit());

/** One session on `on`, running the body `take()` gives once the invoke is in: the runner's, and its rehearsal's. */
function serveBody(on: Wire, take: () => Body): Promise<ServeReport> {
  return serve({
    wire: on,
    run: async (ears, input) => {
      try {
        return await take()(ears, input, Outcome);
      } catch (error) {
        // The stack goes to the log; the result names where in the body it was thrown.
        if (error instanceof Error && error.stack) await ears.log(bodyStack(error.stack), "error");
        return Outcome.failure(FailureCode.GuestFailed, `${describeError(error)}${placeIn(error)}${advice(error)}`);
      }
    },
  });
}

/** The rehearsal's session: its body through the body frame's codec and the compiling a real one gets. */
function rehearsal(on: Wire, javascript: string): Promise<ServeReport> {
  const decoded = decodeBodyFrame(encodeBodyFrame(javascript));
  const rehearsed = compile("javascript" in decoded ? decoded.javascript : "");
  return serveBody(on, () => rehearsed);
}

/**
 * A pooled run of a session: the host bound the session's workspace onto this runner's working directory
 * after the runner started, so the directory is entered again (a process's working directory stays on
 * what was there before the mount) and must then be that workspace; anything else (the bind did not
 * reach this sandbox) breaks the session before any code runs, rather than a body writing files no run
 * will see again.
 */
function enterWorkspace(expected: { dev: number; ino: number }): void {
  const path = process.cwd();
  let found: { dev: number; ino: number } | undefined;
  try {
    process.chdir(path);
    found = statSync(".");
  } catch {
    found = undefined;
  }
  if (found?.dev !== expected.dev || found.ino !== expected.ino) {
    throw new TransportError(`the session's workspace is not at the working directory ${path}; no code ran`, { kind: "malformed" });
  }
}

/** The body as a function; one V8 refuses (the host checked it, so this is rare) throws its error when called. */
function compile(javascript: string): Body {
  try {
    return new Script(wrapBody(javascript), {
      filename: CODE_FILENAME,
      // No importModuleDynamically: on Node 20 it needs --experimental-vm-modules, so a body has no import();
      // it works through `ears` and Node's globals (docs/code.md).
      columnOffset: -CODE_PREFIX.length,
    }).runInThisContext() as Body;
  } catch (error) {
    return () => Promise.reject(error);
  }
}

/**
 * " (at code.ts:LINE:COLUMN)" for the innermost frame in the body, or "" when the body is not on the stack.
 * A failed `fetch` is placed where the body called it, on every Node (its own stack names the body's
 * `await` on Node 22, and no frame of the body on Node 24).
 */
function placeIn(error: unknown): string {
  const stack = error instanceof Error ? String(error.stack) : "";
  const site = typeof error === "object" && error !== null ? callSites.get(error) : undefined;
  const frame = /\bcode\.ts:(\d+):(\d+)/.exec(site ?? "") ?? /\bcode\.ts:(\d+):(\d+)/.exec(stack);
  return frame === null ? "" : ` (at ${CODE_FILENAME}:${frame[1]}:${frame[2]})`;
}

/**
 * Wraps the global `fetch` so that an error it rejects with remembers the stack of the call that made it:
 * since Node 24 that error's stack holds only the fetch implementation's frames. The error itself is left as
 * it is (its stack is the body's to read); the call site is kept beside it, in a WeakMap.
 */
function traceFetch(): WeakMap<object, string> {
  const sites = new WeakMap<object, string>();
  const original = globalThis.fetch;
  if (typeof original !== "function") return sites;
  const traced = function fetch(this: unknown, ...args: Parameters<typeof original>): ReturnType<typeof original> {
    const site = new Error();
    return Reflect.apply(original, this, args).catch((error: unknown) => {
      if (typeof error === "object" && error !== null && !sites.has(error)) sites.set(error, String(site.stack));
      throw error;
    });
  };
  Object.defineProperty(traced, "length", { value: original.length });
  globalThis.fetch = traced as typeof original;
  return sites;
}

/** The stack down to the body's outermost frame: the runner's and serve's frames below it say nothing about the body. */
function bodyStack(stack: string): string {
  const lines = stack.split("\n");
  const last = lines.findLastIndex((line) => line.includes(`${CODE_FILENAME}:`));
  return last < 0 ? stack : lines.slice(0, last + 1).join("\n");
}

/**
 * The way in for a body that reached for `require` or `import()`, which a script compiled here does not
 * have, or for the network through the global `fetch`, which a sandboxed body does not have.
 */
function advice(error: unknown): string {
  const { name, message, code } = (error ?? {}) as { name?: unknown; message?: unknown; code?: unknown };
  const requireMissing = name === "ReferenceError" && message === "require is not defined";
  const importMissing = typeof code === "string" && code.startsWith("ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING");
  if (requireMissing || importMissing) return `: ${NO_MODULES_HINT}`;
  return name === "TypeError" && message === "fetch failed" ? `: ${NO_NETWORK_HINT}` : "";
}
