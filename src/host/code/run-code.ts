/**
 * runCode: runs a code body a model wrote (TypeScript or JavaScript) as a guest child process, through
 * the same host and sandbox as runGuest. The host strips types and checks syntax (and types, when
 * asked) before any process starts; the child loads only the guest runtime and gets the compiled body
 * in one frame (wire/PROTOCOL.md, "The code runner"). With a `pool`, a runner started ahead serves it.
 */
import { performance } from "node:perf_hooks";
import type { Contract, StandardSchemaV1 } from "../../contract/contract.js";
import { encodeBodyFrame } from "../../protocol/code-body.js";
import { describeError } from "../../protocol/errors.js";
import * as failures from "../report/failures.js";
import { admitted, GUEST_COMMAND_OPTIONS, refuseUnknownOptions, runLaunch } from "../run-guest.js";
import { notStartedReport } from "../report/report.js";
import { traced } from "../observe/tracing.js";
import type { GuestCommand, RunReport } from "../api/types.js";
import { codeLaunch, withWorkDir } from "./code-launch.js";
import { compileBody, DEFAULT_MAX_CODE_BYTES, requireStripper } from "./compile.js";
import { checkDeclarations, requireTypeScript, typecheckBody } from "./typecheck.js";
import { poolRun, runPooled, type RunPool } from "./run-pool.js";
import { workspaceIdentity } from "./pool-session.js";
import { sessionRun } from "../workspace/index.js";
import type { CheckedLaunch } from "../run-guest.js";
import type { PausedState, Replay } from "../approvals/approval.js";
import { sealToken } from "../approvals/token.js";
import { recordedRun } from "../observe/record.js";

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
  /**
   * The most UTF-8 bytes the body may have, default 256 KiB: a longer body fails as `CompileError` (saying
   * to write less, and to take data from `input` or `ears.call`) before anything else is done with it.
   */
  maxCodeBytes?: number;
  /** The schema of `input`, for `typecheck: true`; without it `input` is any JSON. */
  inputSchema?: StandardSchemaV1;
  /**
   * Added: a run pool (`createRunPool`) whose runner, started ahead and already sandboxed, runs the
   * body; the report then has `pooled: true`. The options that decide the sandbox and the limits (`sandbox`,
   * `cwd`, `env`, `limits.memoryBytes`, `processes`, `cpuTimeMs`, `tmpBytes`, `maxFrameBytes`,
   * `maxStderrBytes`) are the pool's: left out they are taken from it, given they must equal it, else
   * runCode throws a TypeError, and so does an `admission` other than the pool's. `limits.helloTimeoutMs` bounds
   * the wait for a free runner (the admission's `queueTimeoutMs` while the pool waits for a slot). A closed pool
   * throws. With `session`, the session's workspace is bound onto the runner's own working directory
   * when the run takes it (a pool made with `cwd`, `remote` or `sandbox: false` throws); see docs/host.md,
   * "Sessions". See docs/code.md, "Warm runs".
   */
  pool?: RunPool;
}

/** A body past its deadline is told so in words a model can act on (runGuest's name the host's setting). */
function inCodeWords(report: RunReport, runTimeoutMs: number): RunReport {
  if (report.failure?.code !== "RunTimeout") return report;
  // Only the failure's words change: a report with a failure stays the member it was.
  return { ...report, failure: failures.codeRunTimedOut(runTimeoutMs) } as RunReport;
}

/**
 * Runs a code body as a guest: `ears`, `input` and `Outcome` are in scope, top-level `await` works and
 * `return` gives the result. Resolves with the same {@link RunReport} as runGuest and never rejects. A
 * body that does not compile fails with `CompileError` (its message names `code.ts:LINE:COLUMN` in the
 * submitted code) and no process is started. The body runs sandboxed by the same default as runGuest
 * ("auto"); the sandbox shows it only this package's runner and its working directory: a private,
 * empty, writable directory removed when the run ends, unless `cwd` names one (then shown read-only, its
 * secrets masked, as runGuest shows a working directory). The body reaches the runner in a frame on its
 * stdin, never in a file. With `pool`, a runner started ahead runs it (see `createRunPool`).
 * Invalid options throw synchronously, as runGuest's do, and so does a missing `amaro` package (an
 * optional peer dependency: `npm install amaro`).
 *
 * @example
 * const report = await runCode({
 *   code: 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;',
 *   capabilities: tools.implement({ add: ({ a, b }) => ({ sum: a + b }) }),
 * });
 */
export function runCode(options: CodeOptions): Promise<RunReport> {
  return runCodeWith(options, undefined);
}

/**
 * @internal runCode, or resumeCode's run with the paused run's steps to replay. `claim`, when given, is
 * awaited after every option is checked and before anything else (resumeCode's claim in its ledger): its
 * rejection is the call's, and nothing runs.
 */
export function runCodeWith(options: CodeOptions, replay: Replay | undefined, claim?: () => Promise<void>): Promise<RunReport> {
  if (typeof options !== "object" || options === null) throw new TypeError("runCode: options must be an object with code");
  const recording = recordedRun(options, "runCode");
  const { code, typecheck = false, contract, inputSchema, pool, maxCodeBytes = DEFAULT_MAX_CODE_BYTES, ...rest } = recording.options;
  if (typeof code !== "string") throw new TypeError("runCode: options.code must be a string (the body of an async function)");
  if (!(Number.isSafeInteger(maxCodeBytes) && maxCodeBytes > 0))
    throw new RangeError(`runCode: options.maxCodeBytes must be a positive integer (bytes), got ${String(maxCodeBytes)}`);
  if (typeof typecheck !== "boolean") throw new TypeError("runCode: options.typecheck must be a boolean");
  if ("command" in rest || "args" in rest)
    throw new TypeError("runCode: options.command and options.args are runGuest's; runCode runs its own runner");
  refuseUnknownOptions(rest, "runCode", GUEST_COMMAND_OPTIONS);
  // Every option is checked here, once, before any compiling: the cold and the pooled run use the result as it is.
  const launch = resumable(pool === undefined ? codeLaunch(rest, "runCode") : poolRun(pool, rest), code, replay);
  if (typecheck) requireTypeScript();
  const declarations = typecheck ? checkDeclarations(contract, inputSchema, rest.allowed) : undefined;
  const { trace, input, signal } = launch.settings;
  const startedAt = performance.now();
  const refused = (problem: string) => notStartedReport(failures.codeNotCompiled(problem), performance.now() - startedAt);
  // Looked for before tracing starts: a missing amaro must throw synchronously, as documented.
  requireStripper();
  recording.begin(code);
  const run = () =>
    traced(trace, { api: "runCode", input, code }, async (observer) => {
      const compiled = await compileBody(code, maxCodeBytes);
      if (!compiled.ok) return refused(compiled.message);
      // The type check is a span of its own ("ears.typecheck"): a first check that starts the checker shows where its time went.
      const checkEnded = declarations !== undefined ? observer?.step?.("ears.typecheck") : undefined;
      const checked =
        declarations !== undefined
          ? typecheckBody(code, declarations, signal)
              .catch((error: unknown) => `typecheck could not run: ${describeError(error)}`)
              .then((problem) => {
                checkEnded?.(problem);
                return problem;
              })
          : Promise.resolve(undefined);
      return checked.then((problem): RunReport | Promise<RunReport> => {
        // Aborted while tsc ran: the launch reports Aborted (and starts nothing), not a type error.
        if (problem !== undefined && signal?.aborted !== true) return refused(problem);
        // A pooled session's run: the runner checks that the workspace bound onto its directory is this one (pool-session.ts).
        const workspace = pool !== undefined && launch.session !== undefined ? workspaceIdentity(launch.session) : undefined;
        const body = encodeBodyFrame(compiled.javascript, workspace);
        const ran = (report: RunReport) => inCodeWords(report, launch.settings.limits.runTimeoutMs);
        if (pool !== undefined) return runPooled(pool, launch, observer, body).then(ran);
        // The slot first: a run waiting in the queue has no working directory (a tmpfs mount) yet.
        return admitted(launch, async () => {
          const own = await withWorkDir(launch);
          if ("failure" in own) return notStartedReport(own.failure, performance.now() - startedAt);
          return runLaunch(own.launch, observer, body).finally(own.remove);
        }).then(ran);
      });
    });
  const start = () => (launch.session === undefined ? run() : sessionRun(launch.session, run, "runCode"));
  return (claim === undefined ? start() : claim().then(start)).then(recording.finish);
}

/**
 * A launch whose run can pause (its approval has a token key: a pause seals the body, its input and the
 * calls so far into a token) and, for resumeCode, replays the paused run's steps.
 */
function resumable(launch: CheckedLaunch, code: string, replay: Replay | undefined): CheckedLaunch {
  const { approval, input } = launch.settings;
  if (approval === undefined) return launch;
  const key = approval.tokenKey;
  const seal = key === undefined ? undefined : (state: PausedState) => sealToken({ code, input, ...state }, key);
  return { ...launch, settings: { ...launch.settings, approval: { ...approval, ...(seal && { seal }), ...(replay && { replay }) } } };
}
