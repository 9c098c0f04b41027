/**
 * @posoco/ears/ai: code mode for the Vercel AI SDK (`ai` 6 or 7, an optional peer dependency loaded by
 * this entry alone). `createCodeTool({ tools })` turns a `ToolSet` into one AI SDK tool whose input is a
 * code body: the body calls the tools with `ears.call`, runs sandboxed with runCode, and each call runs
 * that tool's own `execute` in the host. See docs/frameworks.md.
 */
import * as aiSdk from "ai";
import { asSchema, jsonSchema as aiJsonSchema, type Tool, type ToolExecutionOptions, type ToolSet } from "ai";
import { isSession, type Session } from "../host/workspace/index.js";
import type { ResumeDecision } from "../host/index.js";
import { jsonSchema } from "../contract/json-schema.js";
import type { CapabilitySpec } from "../contract/contract.js";
import type { Json } from "../protocol/json.js";
import {
  answerOf,
  codeToolCore,
  invalidArguments,
  PolicyVerdict,
  type CodeToolOptions,
  type CodeToolOutput,
  type FrameworkTool,
  type LeftOutTool,
  type SessionOf,
} from "../code-tool/core.js";

export type { CodeToolApproval, CodeToolFile, CodeToolOptions, CodeToolOutput, CodeToolPaused } from "../code-tool/core.js";
export { fileStore, memoryStore, type ApprovalStore } from "../code-tool/store.js";
export { fileLedger, memoryLedger, redisLedger, type ApprovalLedger } from "../host/approvals/ledger.js";

/** Options for {@link createCodeTool}. */
export interface AiCodeToolOptions extends CodeToolOptions {
  /**
   * The AI SDK tools a body may call, by the name it calls them (`ears.call("getWeather", …)`): made
   * with `tool({ description, inputSchema, outputSchema?, execute })`, zod or `jsonSchema()` schemas,
   * or from the AI SDK's MCP client (`await mcpClient.tools()`). A tool with `needsApproval` is
   * callable, each call it holds decided by `approval.decide` (without `approval`, such a call is
   * denied; a tool with `needsApproval: true` is then left out). A tool without `execute` (a
   * client-side tool) and a provider-executed tool are left out of the body's reach and named in the
   * description, so the model calls them as tools of their own.
   */
  tools: ToolSet;
  /**
   * The session bodies run in (docs/frameworks.md, "Sessions"): a `createSession`/`openSession` session for
   * every call, or a function of the code tool call's options (`experimental_context`, `messages`,
   * `toolCallId`) returning the conversation's, so one code tool serves many conversations. Files persist
   * between the calls of a session; an image the result names comes back to the model as an image part.
   * The caller closes its sessions.
   */
  session?: Session | ((options: ToolExecutionOptions) => Session | PromiseLike<Session>);
  /**
   * Which of `tools` need approval when a body calls them, as the AI SDK 7's `toolApproval` option of
   * `generateText` / `streamText` says it for the model's own calls (that option never sees a body's calls:
   * give the code tool the same entries). By tool name: `"not-applicable"` (runs unasked), `"approved"`,
   * `"denied"` (the body's call is an `ApprovalDenied` failure, the tool does not run), `"user-approval"`
   * (decided by `approval`), an object `{ type, reason? }` of these, or a function `(input, { toolCallId,
   * messages, toolContext })` returning one (`undefined`: not-applicable; a throw: user-approval). An entry
   * takes precedence over the tool's own `needsApproval`, as in the AI SDK 7. Works with the AI SDK 6 too.
   */
  toolApproval?: Record<string, ToolApprovalEntry>;
}

/** A status of the AI SDK 7's `toolApproval`, as {@link AiCodeToolOptions.toolApproval} takes it. */
export type ToolApprovalStatus =
  | "not-applicable"
  | "approved"
  | "denied"
  | "user-approval"
  | { type: "not-applicable" }
  | { type: "approved" | "denied" | "user-approval"; reason?: string };

/** One tool's entry of {@link AiCodeToolOptions.toolApproval}: a status, or a function of the call returning one. */
export type ToolApprovalEntry =
  | ToolApprovalStatus
  | ((
      input: never,
      options: { toolCallId: string; messages: ToolExecutionOptions["messages"]; toolContext: unknown },
    ) => ToolApprovalStatus | undefined | PromiseLike<ToolApprovalStatus | undefined>);

/**
 * The AI SDK tool {@link createCodeTool} returns, with `resume`: goes on with a run that paused for
 * approval (its output `{ status: "paused", resumeId, pending }`), with `decisions` keyed by the pending
 * calls' ids; resolves with what the tool call would have returned. `callOptions` are the tools' call
 * options on the resume (default: no messages, a toolCallId naming the resume). A second resume of an id
 * resolves to a failure (`AlreadyResumed`, or `UnknownResumeId` once the store forgot it) and nothing runs.
 */
export type AiCodeTool = Tool<CodeToolInput, CodeToolOutput> & {
  resume(
    resumeId: string,
    options: { decisions: Record<string, ResumeDecision>; callOptions?: ToolExecutionOptions },
  ): Promise<CodeToolOutput>;
};

/** The code tool's input: the body. */
export interface CodeToolInput {
  code: string;
}

const ENTRY = "createCodeTool";

/**
 * One AI SDK tool that runs a code body calling `tools` (and the MCP servers of `mcp`), for
 * `generateText`, `streamText` or an `Agent`. Its description holds the tools' TypeScript declarations
 * (the generator of `contract.declarations()`); its `execute` runs the body with runCode (sandboxed, on
 * `pool` or a pool it keeps, with `limits` and `typecheck`), each `ears.call` running that tool's own
 * `execute` in the host with the code tool call's options (`abortSignal`, `messages`, `toolCallId`, the
 * context) passed through. The model gets a {@link CodeToolOutput}: what the body returned, or the
 * failure with its code and position; a body's mistake never throws. `execute` yields the log lines
 * while the body runs (preliminary results in `streamText`), the result last. Throws a TypeError for
 * bad options.
 *
 * @example
 * const codeTool = createCodeTool({ tools: { getWeather, getTime }, limits: { runTimeoutMs: 30_000 } });
 * const { text } = await generateText({ model, tools: { code: codeTool }, stopWhen: stepCountIs(5), prompt });
 */
export function createCodeTool(options: AiCodeToolOptions): AiCodeTool {
  if (typeof options !== "object" || options === null) throw new TypeError(`${ENTRY}: options must be an object with tools`);
  const { tools } = options;
  if (typeof tools !== "object" || tools === null || Array.isArray(tools)) {
    throw new TypeError(`${ENTRY}: options.tools must be an AI SDK ToolSet (an object of tools by name)`);
  }
  const toolApproval = toolApprovalOf(options.toolApproval, tools);
  const own = new Map<string, FrameworkTool<ToolExecutionOptions>>();
  const leftOut: LeftOutTool[] = [];
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool !== "object" || tool === null) throw new TypeError(`${ENTRY}: tools.${name} is not an AI SDK tool`);
    const entry = toolApproval?.[name];
    const why = leftOutBecause(tool, entry, options.approval !== undefined);
    if (why !== undefined) leftOut.push({ name, why });
    else own.set(name, callable(name, tool, entry));
  }
  const core = codeToolCore(ENTRY, own, leftOut, options, sessionOf(ENTRY, options.session));
  return {
    resume: (resumeId, { decisions, callOptions = { toolCallId: `resume-${String(resumeId)}`, messages: [] } } = { decisions: {} }) =>
      core.resume(resumeId, decisions, callOptions, callOptions.abortSignal),
    description: core.description,
    inputSchema: aiJsonSchema<CodeToolInput>({
      type: "object",
      properties: { code: { type: "string", description: "The body of an async function, in TypeScript" } },
      required: ["code"],
      additionalProperties: false,
    }),
    execute: (input: CodeToolInput, callOptions: ToolExecutionOptions) => streamRun(core.run, input, callOptions),
    toModelOutput: modelOutput,
  };
}

/**
 * What the model reads: the output as JSON, or, when the result named images of the session, the output
 * without them as text and each image as the SDK's file part: the AI SDK 7's `file` part with inline data
 * (its `image-data` is deprecated, and warned about on every call), the AI SDK 6's `image-data`.
 */
type ModelOutput = Awaited<ReturnType<NonNullable<Tool<CodeToolInput, CodeToolOutput>["toModelOutput"]>>>;

/** Whether the `ai` loaded is the AI SDK 7 or later: `isStepCount` is 7's name for `stepCountIs`. */
const FILE_PARTS = "isStepCount" in aiSdk;

function modelOutput({ output }: { output: CodeToolOutput }): ModelOutput {
  if (output?.files === undefined || output.files.length === 0) return { type: "json", value: output as never };
  const { files, ...rest } = output;
  const part = (file: { data: string; mediaType: string }) =>
    FILE_PARTS
      ? { type: "file", mediaType: file.mediaType, data: { type: "data", data: file.data } }
      : { type: "image-data", data: file.data, mediaType: file.mediaType };
  return { type: "content", value: [{ type: "text", text: JSON.stringify(rest) }, ...files.map(part)] as never };
}

function sessionOf(entry: string, session: AiCodeToolOptions["session"]): SessionOf<ToolExecutionOptions> | undefined {
  if (session === undefined) return undefined;
  if (typeof session === "function") return session;
  if (!isSession(session))
    throw new TypeError(`${entry}: options.session must be a session (createSession, openSession) or a function returning one`);
  return () => session;
}

/**
 * Why a tool cannot be called from a body, or undefined when it can. A tool that always needs approval
 * is left out when the code tool has no way to ask (every call would be denied).
 */
function leftOutBecause(tool: ToolSet[string], entry: ToolApprovalEntry | undefined, canAsk: boolean): string | undefined {
  if ((tool as { type?: string }).type === "provider") return "its provider runs it";
  if (typeof tool.execute !== "function") return "it has no execute: the client runs it";
  const always = entry === undefined ? tool.needsApproval === true : statusType(entry) === "user-approval";
  if (always && !canAsk) return "it needs approval";
  return undefined;
}

/** The type of a static `toolApproval` status (undefined for a function, decided per call). */
function statusType(entry: ToolApprovalEntry): string | undefined {
  if (typeof entry === "function") return undefined;
  return typeof entry === "string" ? entry : entry.type;
}

const STATUSES = new Set(["not-applicable", "approved", "denied", "user-approval"]);

/** Checks the `toolApproval` option: an object of statuses or functions, by the name of a tool of `tools`. */
function toolApprovalOf(toolApproval: unknown, tools: ToolSet): Record<string, ToolApprovalEntry> | undefined {
  if (toolApproval === undefined) return undefined;
  if (typeof toolApproval !== "object" || toolApproval === null || Array.isArray(toolApproval)) {
    throw new TypeError(
      `${ENTRY}: options.toolApproval must be an object of approval statuses by tool name (the AI SDK 7's per-tool toolApproval form)`,
    );
  }
  const entries: Record<string, ToolApprovalEntry> = Object.create(null);
  for (const [name, entry] of Object.entries(toolApproval)) {
    if (!Object.hasOwn(tools, name)) throw new TypeError(`${ENTRY}: options.toolApproval.${name} names no tool of options.tools`);
    const type =
      typeof entry === "string" ? entry : typeof entry === "object" && entry !== null ? (entry as { type?: unknown }).type : undefined;
    if (typeof entry !== "function" && (typeof type !== "string" || !STATUSES.has(type))) {
      throw new TypeError(
        `${ENTRY}: options.toolApproval.${name} must be "not-applicable", "approved", "denied", "user-approval", ` +
          "{ type, reason? } or a function",
      );
    }
    entries[name] = entry as ToolApprovalEntry;
  }
  return entries;
}

/**
 * A `toolApproval` status as the code tool's policy answer: not-applicable lets the call through, approved
 * and denied decide it (by "toolApproval", with the status's reason), user-approval (and anything it does
 * not know: fail closed) hands it to the code tool's `approval`.
 */
function verdictOf(status: unknown): unknown {
  const type = typeof status === "string" ? status : (status as { type?: unknown } | null | undefined)?.type;
  const reason = typeof (status as { reason?: unknown } | null)?.reason === "string" ? (status as { reason: string }).reason : undefined;
  if (status === undefined || type === "not-applicable") return false;
  if (type === "approved") return new PolicyVerdict({ approved: true, by: "toolApproval" });
  if (type === "denied") {
    return new PolicyVerdict({ approved: false, reason: reason ?? "denied by the code tool's toolApproval", by: "toolApproval" });
  }
  return true;
}

/** A tool's description for its declaration: the text, or what a description function gives without a context. */
function descriptionOf(description: unknown): string | undefined {
  if (typeof description === "string") return description;
  if (typeof description !== "function") return undefined;
  // The AI SDK 7 lets a description depend on the tool's context; the declarations are made once, with none.
  try {
    const text: unknown = description({ context: undefined });
    return typeof text === "string" ? text : undefined;
  } catch {
    return undefined; // it needs a context: the tool is declared without its description
  }
}

/** An AI SDK tool as a capability: arguments checked with its own schema, its `execute` run with the code tool call's options. */
function callable(name: string, tool: ToolSet[string], entry: ToolApprovalEntry | undefined): FrameworkTool<ToolExecutionOptions> {
  const input = asSchema(tool.inputSchema);
  const output = tool.outputSchema === undefined ? undefined : asSchema(tool.outputSchema);
  const own = tool.needsApproval === undefined || tool.needsApproval === false ? undefined : tool.needsApproval;
  // As the AI SDK 7's resolveToolApproval: a toolApproval entry takes precedence over the tool's needsApproval.
  const policy = entry === undefined ? own : statusType(entry) === "not-applicable" ? undefined : entry;
  const mayBeDenied = policy !== undefined && !(entry !== undefined && statusType(entry) === "approved");
  const approvalNote = mayBeDenied ? "May need a person's approval: a denied call is an ApprovalDenied failure." : undefined;
  const description = [descriptionOf(tool.description), approvalNote].filter((text) => text !== undefined).join(" ");
  const spec: CapabilitySpec = {
    ...(description === "" ? {} : { description }),
    arguments: jsonSchema(syncJsonSchema(name, "inputSchema", input.jsonSchema)),
    ...(output === undefined ? {} : { structured: jsonSchema(syncJsonSchema(name, "outputSchema", output.jsonSchema)) }),
  };
  const execute = tool.execute!;
  return {
    spec,
    // As the AI SDK asks: on input that passed the tool's schema (input it refuses needs no decision), with the call's options.
    ...(policy === undefined
      ? {}
      : {
          needsApproval: async (args: Json, callOptions: ToolExecutionOptions) => {
            let value: unknown = args;
            if (input.validate !== undefined) {
              const checked = await input.validate(args);
              if (!checked.success) return false;
              value = checked.value;
            }
            if (entry !== undefined) {
              const { toolCallId, messages } = callOptions;
              const context = (callOptions as { context?: unknown }).context;
              return verdictOf(
                typeof entry === "function" ? await entry(value as never, { toolCallId, messages, toolContext: context }) : entry,
              );
            }
            return policy === true ? true : (policy as Exclude<typeof own, true | undefined>)(value as never, callOptions);
          },
        }),
    async call(args, ctx, callOptions) {
      let value: unknown = args;
      if (input.validate !== undefined) {
        const checked = await input.validate(args);
        if (!checked.success) return invalidArguments(name, checked.error.message);
        value = checked.value;
      }
      // The signal is made only when the tool reads it (most never do): an AbortSignal.any per call is costly.
      const outer = callOptions.abortSignal;
      let signal: AbortSignal | undefined;
      const options = Object.defineProperty({ ...callOptions }, "abortSignal", {
        enumerable: true,
        configurable: true,
        get: () => (signal ??= outer === undefined ? ctx.signal : AbortSignal.any([ctx.signal, outer])),
      });
      return answerOf(await lastOf(execute(value as never, options)));
    },
  };
}

function syncJsonSchema(name: string, field: string, schema: unknown): Record<string, unknown> | boolean {
  if (typeof (schema as PromiseLike<unknown> | null)?.then === "function") {
    throw new TypeError(`${ENTRY}: tools.${name}.${field} gives its JSON Schema asynchronously; resolve it before making the code tool`);
  }
  return schema as Record<string, unknown> | boolean;
}

/** A streaming tool's last value (its final output), or a plain result awaited. */
async function lastOf(result: unknown): Promise<unknown> {
  if (typeof result === "object" && result !== null && Symbol.asyncIterator in result) {
    let last: unknown;
    for await (const value of result as AsyncIterable<unknown>) last = value;
    return last;
  }
  return result;
}

/**
 * Runs the body, yielding its progress (log lines, calls) while it runs and the result last. Stopping
 * the iteration early (the caller gave up) aborts the run.
 */
async function* streamRun(
  run: ReturnType<typeof codeToolCore<ToolExecutionOptions>>["run"],
  input: CodeToolInput,
  callOptions: ToolExecutionOptions,
): AsyncGenerator<CodeToolOutput, void, undefined> {
  const stop = new AbortController();
  const signal = callOptions.abortSignal === undefined ? stop.signal : AbortSignal.any([callOptions.abortSignal, stop.signal]);
  let latest: CodeToolOutput | undefined;
  let wake: (() => void) | undefined;
  let settled = false;
  const running = run(input?.code, callOptions, signal, (progress) => {
    latest = progress;
    wake?.();
  });
  const done = () => {
    settled = true;
    wake?.();
  };
  running.then(done, done);
  try {
    for (;;) {
      if (latest !== undefined && !settled) {
        const progress = latest;
        latest = undefined;
        yield progress;
        continue;
      }
      if (settled) break;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
    yield await running;
  } finally {
    if (!settled) {
      stop.abort(new DOMException("the caller stopped reading the code tool's results", "AbortError"));
      await running.catch(() => undefined);
    }
  }
}
