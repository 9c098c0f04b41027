/**
 * runCode: runs a code body a model wrote (TypeScript or JavaScript) as a guest child process, through
 * the same host and sandbox as runGuest. The host strips types and checks syntax (and types, when
 * asked) before any process starts; the child loads only the guest runtime and the compiled body.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { Contract, StandardSchemaV1 } from "../../contract/contract.js";
import { describeError } from "../../protocol/errors.js";
import * as failures from "../failures.js";
import { DEFAULT_KILL_GRACE_MS, launchGuest } from "../run-guest.js";
import { graceMs, hostSettings } from "../settings.js";
import { sandboxRequest } from "../sandbox/index.js";
import { notStartedReport } from "../report.js";
import { traced } from "../tracing.js";
import type { GuestCommand, HostFailure, RunReport } from "../types.js";
import { compileBody } from "./compile.js";
import { checkDeclarations, requireTypeScript, typecheckBody } from "./typecheck.js";

/** Options for {@link runCode}: the body, plus everything {@link runGuest} takes but the command. */
export interface CodeOptions extends Omit<GuestCommand, "command" | "args"> {
  /**
   * The body of an async function, in TypeScript or JavaScript: `ears`, `input` and `Outcome` are in
   * scope, `await` works at its top level, and `return` gives the result with `serve`'s rules (an
   * `Outcome` as it is, `undefined` a success without `structured`, any other JSON value the success's
   * `structured`). A throw is a `GuestFailed` result naming `code.ts:LINE:COLUMN`.
   */
  code: string;
  /**
   * Check the body's types before running it, against `contract` and `inputSchema` (default false:
   * types are stripped, not checked). Type errors fail the run as `CompileError` with their positions.
   * Needs the `typescript` package (an optional peer dependency), loaded only then.
   */
  typecheck?: boolean;
  /**
   * The contract `ears.call` is checked against with `typecheck: true` (see {@link Contract.declarations}):
   * with `allowed`, only the capabilities it names, so a call the run would refuse is a type error.
   */
  contract?: Contract;
  /** The schema of `input`, for `typecheck: true`; without it `input` is any JSON. */
  inputSchema?: StandardSchemaV1;
}

let runnerPath: string | undefined;

/** The runner script in this package's dist/ (this module may be bundled into dist/host or dist/chunks). */
function runner(): string {
  if (runnerPath !== undefined) return runnerPath;
  // dist/host/index.js, dist/chunks/*.js, or the sources run by vitest (src/host/code/): the built runner.
  for (const candidate of ["./code-runner.js", "../host/code-runner.js", "../../../dist/host/code-runner.js"]) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return (runnerPath = path);
  }
  throw new Error("runCode: the code runner (dist/host/code-runner.js) is missing from this installation of @posoco/ears");
}

/**
 * Runs a code body as a guest: `ears`, `input` and `Outcome` are in scope, top-level `await` works and
 * `return` gives the result. Resolves with the same {@link RunReport} as runGuest and never rejects. A
 * body that does not compile fails with `CompileError` (its message names `code.ts:LINE:COLUMN` in the
 * submitted code) and no process is started. The body runs sandboxed by the same default as runGuest
 * ("auto"); the sandbox shows it only this package's runner, the compiled body (read-only) and its
 * working directory: a private, empty, writable directory removed when the run ends, unless `cwd` names
 * one (then shown read-only, its secrets masked, as runGuest shows a working directory). Invalid options
 * throw synchronously, as runGuest's do, and so does
 * a missing `amaro` package (an optional peer dependency: `npm install amaro`).
 *
 * @example
 * const report = await runCode({
 *   code: 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;',
 *   capabilities: tools.implement({ add: ({ a, b }) => ({ sum: a + b }) }),
 * });
 */
export function runCode(options: CodeOptions): Promise<RunReport> {
  if (typeof options !== "object" || options === null) throw new TypeError("runCode: options must be an object with code");
  const { code, typecheck = false, contract, inputSchema, ...rest } = options;
  if (typeof code !== "string") throw new TypeError("runCode: options.code must be a string (the body of an async function)");
  if (typeof typecheck !== "boolean") throw new TypeError("runCode: options.typecheck must be a boolean");
  if ("command" in rest || "args" in rest)
    throw new TypeError("runCode: options.command and options.args are runGuest's; runCode runs its own runner");
  // The same checks runGuest makes, up front, so bad options throw before any compiling.
  const { trace, input } = hostSettings(rest, "runCode");
  graceMs(rest.killGraceMs, DEFAULT_KILL_GRACE_MS, "killGraceMs", "runCode");
  sandboxRequest(rest.sandbox, "runCode");
  if (rest.onStderr !== undefined && typeof rest.onStderr !== "function")
    throw new TypeError("runCode: options.onStderr must be a function");
  if (typecheck) requireTypeScript();
  const declarations = typecheck ? checkDeclarations(contract, inputSchema, rest.allowed) : undefined;
  const script = runner();
  const startedAt = performance.now();
  const notRun = (failure: HostFailure): RunReport => notStartedReport(failure, performance.now() - startedAt);

  const refused = (problem: string) => notRun(failures.codeNotCompiled(problem));
  // Compiled before tracing starts: a missing amaro must throw synchronously, as documented.
  const compiled = compileBody(code);
  return traced(trace, { api: "runCode", input, code }, (observer) => {
    if (!compiled.ok) return Promise.resolve(refused(compiled.message));
    const checked =
      declarations !== undefined
        ? typecheckBody(code, declarations, rest.signal).catch((error: unknown) => `typecheck could not run: ${describeError(error)}`)
        : Promise.resolve(undefined);
    return checked.then((problem): RunReport | Promise<RunReport> => {
      // Aborted while tsc ran: launchGuest reports Aborted (and starts nothing), not a type error.
      if (problem !== undefined && rest.signal?.aborted !== true) return refused(problem);
      let dir: string | undefined;
      const cleanup = () => {
        try {
          if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
        } catch {
          // Best effort: a directory that cannot be removed must not turn the report into a rejection.
        }
      };
      let file: string;
      let work: string;
      try {
        // A private directory (mode 0700, file 0600): only this user, and the guest through a read-only bind.
        dir = mkdtempSync(join(tmpdir(), "ears-code-"));
        file = join(dir, "body.js");
        writeFileSync(file, compiled.javascript, { mode: 0o600, flag: "wx" });
        // The body's working directory, unless the caller names one: private, empty, writable, gone after the run.
        work = join(dir, "work");
        mkdirSync(work, { mode: 0o700 });
      } catch (error) {
        cleanup();
        // A full disk, a missing temporary directory: reported like any other failure to start, never a rejection.
        return notRun(failures.compiledCodeNotWritten(error));
      }
      // The runner needs this package's dist/ and the body; nothing else is looked for (discover: false).
      const own = rest.cwd === undefined;
      return launchGuest({ ...rest, cwd: own ? work : rest.cwd, command: process.execPath, args: [script, file] }, "runCode", {
        readable: [dirname(dirname(script)), file],
        writable: own ? [work] : [],
        scratch: dir,
        discover: false,
        observed: { observer },
      }).finally(cleanup);
    });
  });
}
