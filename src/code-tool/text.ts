/**
 * What every code tool tells a model, and its defaults, shared by `ears mcp` (src/cli) and the framework
 * adapters (src/frameworks): one description generator ({@link codeToolDescription}: how to write a body,
 * the run's limits and the `fetch` origins, the files, what is left out, the tools), so a model neither
 * guesses URLs nor writes a body that cannot finish, and the body's logs bounded to what belongs in a
 * model's context.
 */
import { byteSize } from "../protocol/text.js";
import { DEFAULT_HOST_LIMITS } from "../host/settings.js";
import type { HostLimits } from "../host/api/types.js";

export { boundedToolLogs, MAX_TOOL_LOG_CHARS, MAX_TOOL_LOG_LINES } from "../host/report/tool-logs.js";

/**
 * Each body's run time in every code tool unless its `limits.runTimeoutMs` (ears mcp: `--timeout`) says
 * otherwise: a body that never ends (a busy loop) would hold a runner for good. Under the MCP SDK client's
 * own request timeout (60 s), so a stopped body reaches the model as a RunTimeout it can act on.
 */
export const CODE_TOOL_RUN_TIMEOUT_MS = 50_000;

/**
 * The largest result of a body every code tool passes on, by default (ears mcp: `--max-result`): well
 * under what MCP clients read in one message (the MCP SDK's client: 10 MiB), and already a lot of a
 * model's context.
 */
export const CODE_TOOL_MAX_RESULT_BYTES = 1024 * 1024;

/** A code tool's limits: the caller's, over the code tool's defaults (run time and result size). */
export function codeToolLimits(limits: HostLimits | undefined): HostLimits {
  return { runTimeoutMs: CODE_TOOL_RUN_TIMEOUT_MS, maxResultBytes: CODE_TOOL_MAX_RESULT_BYTES, ...limits };
}

/**
 * How to write a body: the one paragraph every code tool's description starts with. `input` says whether
 * the tool takes an `input` argument the body reads (ears mcp's does).
 */
export function bodyText(input: boolean): string {
  return (
    "Runs `code`, the body of an async function in TypeScript, in a sandbox; `return` gives this tool's result (any JSON value). " +
    "Call the tools below with `await ears.call(name, args)`, independent calls together with Promise.all. A call never " +
    'throws: it resolves to { status: "success", content, structured } (the tool\'s output is `structured`) or ' +
    '{ status: "failure", code, content }; check `status` first. ' +
    (input ? "`input` is this tool's input argument. " : "") +
    "console.log lines come back with the result. No import or require: reach Node's modules with " +
    '`process.getBuiltinModule("node:fs")` (and the like). A compile error names code.ts:LINE:COLUMN.'
  );
}

/** The parts of a code tool's description; see {@link codeToolDescription}. */
export interface DescriptionParts {
  /** The tools' declarations (`contract.declarations()`); only the tools' part is shown (see {@link toolDeclarations}). */
  declarations: string;
  typecheck: boolean;
  /** The run's limits as the tool runs bodies (after {@link codeToolLimits}). */
  limits: HostLimits | undefined;
  fetchOrigins?: readonly string[];
  /** The tool takes an `input` argument. */
  input?: boolean;
  /** The session's files: given, {@link codeToolFilesText} says they persist; `false` says each call starts empty; absent, nothing. */
  session?: { workspaceBytes: number } | false;
  /** Tools a body cannot call, and why (named so the model calls them as tools of their own). */
  leftOut?: readonly { name: string; why: string }[];
}

/**
 * The one description of every code tool: how to write a body ({@link bodyText}), whether types are
 * checked, the run's limits, the files, what is left out, then the tools' declarations.
 */
export function codeToolDescription(parts: DescriptionParts): string {
  const { declarations, typecheck, limits, fetchOrigins, input = false, session, leftOut = [] } = parts;
  const left =
    leftOut.length === 0
      ? ""
      : ` Not callable from code (call them as tools of their own): ${leftOut.map(({ name, why }) => `${name} (${why})`).join(", ")}.`;
  const files = session === undefined ? "" : ` ${codeToolFilesText(session === false ? undefined : session)}`;
  return (
    `${bodyText(input)} ${typecheck ? "Types are checked before the body runs." : "Types are stripped, not checked."} ` +
    `${codeToolLimitsText(limits, fetchOrigins)}${files}${left}\n` +
    "Tools (`args`: what a call takes; `result`: what it resolves to; TypedSuccess<T> is a success whose `structured` is a T; " +
    "UntypedResult is a success with `content` text and any `structured`, or a failure):\n" +
    "```ts\n" +
    toolDeclarations(declarations) +
    "```"
  );
}

/**
 * The part of `contract.declarations()` a model needs: the types the tools' schemas named and the
 * `Capabilities` interface, without the prelude every contract repeats (`Json`, `Outcome`, `ears`, ...,
 * which {@link bodyText} says in words). The whole text when it does not have the expected shape.
 */
export function toolDeclarations(declarations: string): string {
  const start = declarations.indexOf(PRELUDE_END);
  const doc = declarations.indexOf(CAPABILITIES_DOC);
  const end = declarations.indexOf(CAPABILITIES_END, doc);
  if (start === -1 || doc === -1 || end === -1 || doc < start) return declarations;
  return declarations.slice(start + PRELUDE_END.length, doc) + declarations.slice(doc + CAPABILITIES_DOC.length, end + 3);
}

/** The last line of the declarations' prelude (Outcome's builder), the `Capabilities` doc line, and what follows the interface. */
const PRELUDE_END = '(outcome: O): outcome is Extract<O, { readonly status: "failure" }>;\n};\n';
const CAPABILITIES_DOC = "/** The capabilities the host offers: what each takes (`args`) and what calling it resolves to (`result`). */\n";
const CAPABILITIES_END = "\n}\n/** What follows a capability's name";

/**
 * One paragraph for a code tool's description: the limits of each run (run time, CPU time, memory,
 * result size; each the host's default where `limits` sets none) and, when `fetchOrigins` is given, the
 * only origins `fetch` reaches. Empty strings nowhere: every part is a full sentence.
 */
export function codeToolLimitsText(limits: HostLimits | undefined, fetchOrigins?: readonly string[]): string {
  const settings = { ...DEFAULT_HOST_LIMITS, ...limits };
  const parts = [
    Number.isFinite(settings.runTimeoutMs) ? `${seconds(settings.runTimeoutMs)} of run time` : "no deadline of its own",
    ...(Number.isFinite(settings.cpuTimeMs) ? [`${seconds(settings.cpuTimeMs)} of CPU time`] : []),
    `${byteSize(settings.memoryBytes)} of memory`,
    `a result of at most ${byteSize(settings.maxResultBytes)} as JSON`,
  ];
  const text =
    `Each run has ${parts.join(", ")}: a body past one is stopped and its result lost, so do large work in steps ` +
    "and return a summary rather than everything.";
  if (fetchOrigins === undefined || fetchOrigins.length === 0) return text;
  return (
    `${text} \`fetch\` reaches only ${fetchOrigins.map((origin) => JSON.stringify(origin)).join(", ")} ` +
    "(any other origin is refused with FetchRefused): build URLs on these, do not guess others."
  );
}

function seconds(ms: number): string {
  const value = ms / 1000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} s`;
}

/**
 * One paragraph for `ears mcp`'s run_code description on the files a body sees: with a session, that they
 * persist between calls and how to hand one back (its relative path in the result, docs/cli.md "Sessions
 * in ears mcp"); without, that each call starts empty.
 */
export function codeToolFilesText(session: { workspaceBytes: number } | undefined): string {
  if (session === undefined) return "Each call starts in an empty private directory, removed after it: no file is kept between calls.";
  return (
    "Files persist between calls: every call works in this conversation's workspace (the working directory; use " +
    `relative paths; ${byteSize(session.workspaceBytes)} in all, past it a write fails with ENOSPC), so a call can read ` +
    'what an earlier one wrote (fs: `process.getBuiltinModule("node:fs")`). To hand a file back, put its relative ' +
    'path as a string in the result (e.g. `return { chart: "chart.png" }`): a PNG, JPEG, GIF or WebP image comes ' +
    "back as an image, any other file as a resource link the client can read."
  );
}
