/**
 * @posoco/ears/openai-agents: code mode for the OpenAI Agents SDK (`@openai/agents`, an optional peer
 * dependency loaded by this entry alone). `codeTool({ tools })` turns function tools into one function
 * tool whose input is a code body: the body calls them with `ears.call`, runs sandboxed with runCode,
 * and each call runs that tool's own `invoke` in the host. See docs/frameworks.md.
 */
import { RunContext, tool, type FunctionTool, type Tool } from "@openai/agents";
import { jsonSchema } from "../contract/json-schema.js";
import { isSession, type Session } from "../host/workspace/index.js";
import type { ResumeDecision } from "../host/index.js";
import type { CapabilityContext, CapabilitySpec } from "../contract/contract.js";
import type { Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import {
  answerOf,
  codeToolCore,
  type CodeToolOptions,
  type CodeToolOutput,
  type FrameworkTool,
  type LeftOutTool,
} from "../code-tool/core.js";

export type { CodeToolApproval, CodeToolFile, CodeToolOptions, CodeToolOutput, CodeToolPaused } from "../code-tool/core.js";
export { fileStore, memoryStore, type ApprovalStore } from "../code-tool/store.js";
export { fileLedger, memoryLedger, redisLedger, type ApprovalLedger } from "../host/approvals/ledger.js";

/**
 * The function tool {@link codeTool} returns, with `resume`: goes on with a run that paused for approval
 * (its output `{ status: "paused", resumeId, pending }`), with `decisions` keyed by the pending calls' ids;
 * resolves with what the tool call would have returned. `runContext` is the tools' run context on the
 * resume (default a new one). A second resume of an id resolves to a failure (`AlreadyResumed`, or
 * `UnknownResumeId` once the store forgot it) and nothing runs.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- FunctionTool's own parameters type, as tool() returns it
export type AgentsCodeTool = FunctionTool<unknown, any, CodeToolOutput | CodeToolContent[]> & {
  resume(
    resumeId: string,
    options: { decisions: Record<string, ResumeDecision>; runContext?: RunContext<unknown> },
  ): Promise<CodeToolOutput | CodeToolContent[]>;
};

/** Options for {@link codeTool}. */
export interface AgentsCodeToolOptions extends CodeToolOptions {
  /**
   * The tools a body may call, by their names (`ears.call("get_weather", …)`): function tools made with
   * `tool({ name, description, parameters, execute })`. Other kinds (hosted tools, computer, shell,
   * apply-patch) run elsewhere: they are left out of the body's reach and named in the description.
   */
  tools: readonly Tool<any>[]; // eslint-disable-line @typescript-eslint/no-explicit-any -- any Agent context, as Agent's own `tools`
  /** The code tool's name, default "run_code". */
  name?: string;
  /**
   * The session bodies run in (docs/frameworks.md, "Sessions"): a `createSession`/`openSession` session for
   * every call, or a function of the run context (`runContext.context` is yours) returning the
   * conversation's, so one code tool serves many conversations. Files persist between the calls of a
   * session; an image the result names comes back to the model as an image item. The caller closes its sessions.
   */
  session?: Session | ((runContext: RunContext<unknown>) => Session | PromiseLike<Session>);
}

/** What the framework passes a function tool's `execute` besides its input. */
interface CallOptions {
  runContext: RunContext<unknown>;
  details: Parameters<FunctionTool["invoke"]>[2];
}

const ENTRY = "codeTool";

/** The code tool's output when the result named images of its session: the SDK's structured tool output items. */
export type CodeToolContent = { type: "text"; text: string } | { type: "image"; image: { data: string; mediaType: string } };

/**
 * What the Agents SDK's default `errorFunction` answers for a tool that threw (its `defaultToolErrorFunction`,
 * not exported): test/frameworks/openai-agents.test.ts pins it against the SDK.
 */
const SDK_TOOL_ERROR_TEXT = "An error occurred while running the tool. Please try again.";

/**
 * One function tool for an `Agent` that runs a code body calling `tools` (and the MCP servers of `mcp`).
 * Its description holds the tools' TypeScript declarations; its `execute` runs the body with runCode
 * (sandboxed, on `pool` or a pool it keeps, with `limits` and `typecheck`), each `ears.call` running
 * that tool's own `invoke` in the host with the run context and the code tool call's details (its
 * `toolCall`, an abort `signal`) passed through, so the tool's parsing, validation, timeout and
 * `errorFunction` apply as when the model calls it. A call a tool's `needsApproval` policy holds is
 * decided by `approval.decide` (deny: `ApprovalDenied` to the body, the tool did not run; without
 * `approval`, such a call is denied, saying so). The model gets a
 * {@link CodeToolOutput}; a body's mistake never throws. Throws a TypeError for bad options.
 *
 * @example
 * const agent = new Agent({ name: "Assistant", model, tools: [codeTool({ tools: [getWeather, getTime] })] });
 */
export function codeTool(options: AgentsCodeToolOptions): AgentsCodeTool {
  if (typeof options !== "object" || options === null) throw new TypeError(`${ENTRY}: options must be an object with tools`);
  const { tools, name = "run_code" } = options;
  if (!Array.isArray(tools)) throw new TypeError(`${ENTRY}: options.tools must be an array of function tools`);
  if (typeof name !== "string" || name === "") throw new TypeError(`${ENTRY}: options.name must be a non-empty string`);
  const own = new Map<string, FrameworkTool<CallOptions>>();
  const leftOut: LeftOutTool[] = [];
  for (const [index, each] of (tools as readonly Tool<unknown>[]).entries()) {
    if (typeof each !== "object" || each === null) throw new TypeError(`${ENTRY}: tools[${index}] is not a tool`);
    const toolName = (each as { name?: unknown }).name;
    if (each.type !== "function") {
      leftOut.push({ name: typeof toolName === "string" ? toolName : each.type, why: `a ${each.type} tool runs outside the host` });
      continue;
    }
    if (own.has(each.name)) throw new TypeError(`${ENTRY}: two tools are named ${JSON.stringify(each.name)}`);
    own.set(each.name, callable(each));
  }
  const { session } = options;
  if (session !== undefined && typeof session !== "function" && !isSession(session)) {
    throw new TypeError(`${ENTRY}: options.session must be a session (createSession, openSession) or a function returning one`);
  }
  const core = codeToolCore(
    ENTRY,
    own,
    leftOut,
    options,
    session === undefined ? undefined : typeof session === "function" ? ({ runContext }) => session(runContext) : () => session,
  );
  const made = tool({
    name,
    description: core.description,
    parameters: {
      type: "object",
      properties: { code: { type: "string", description: "The body of an async function, in TypeScript" } },
      required: ["code"],
      additionalProperties: false,
    },
    strict: true,
    execute: async (input, runContext, details) =>
      modelOutput(
        await core.run(
          (input as { code?: unknown } | null)?.code,
          { runContext: runContext ?? new RunContext(), details },
          details?.signal,
        ),
      ),
  });
  const resume: AgentsCodeTool["resume"] = async (resumeId, { decisions, runContext = new RunContext() } = { decisions: {} }) =>
    modelOutput(await core.resume(resumeId, decisions, { runContext, details: undefined }));
  return Object.assign(made as unknown as AgentsCodeTool, { resume });
}

/**
 * What the model reads: the output (as JSON), or, when the result named images of the session, the output
 * without them as a text item and each image as an image item (the SDK's structured tool output).
 */
function modelOutput(output: CodeToolOutput): CodeToolOutput | CodeToolContent[] {
  if (output.files === undefined || output.files.length === 0) return output;
  const { files, ...rest } = output;
  return [
    { type: "text", text: JSON.stringify(rest) },
    ...files.map((file) => ({ type: "image" as const, image: { data: file.data, mediaType: file.mediaType } })),
  ];
}

/** A function tool as a capability: its own `invoke` (parsing, validation, errorFunction) with the code tool call's context. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any parameters type: the tool parses its own input
function callable(each: FunctionTool<unknown, any, unknown>): FrameworkTool<CallOptions> {
  const spec: CapabilitySpec = {
    ...(each.description === "" ? {} : { description: each.description }),
    arguments: jsonSchema(each.parameters as Record<string, unknown>),
    ...(each.outputSchema === undefined ? {} : { structured: jsonSchema(each.outputSchema as Record<string, unknown>) }),
  };
  const made: FrameworkTool<CallOptions> = {
    spec,
    // The SDK's policy, asked as the SDK asks it (run context, input, call id: the code tool call's). tool() makes
    // one for every function tool (a static `needsApproval: false` answers false at once: the call goes through unasked).
    ...(typeof each.needsApproval !== "function"
      ? {}
      : {
          needsApproval: (args: Json, { runContext, details }: CallOptions) =>
            each.needsApproval(runContext, args as never, details?.toolCall?.callId ?? ""),
        }),
    async call(args, ctx, { runContext, details }) {
      const output = await each.invoke(runContext, JSON.stringify(args), withLazySignal(details, ctx));
      // The SDK's default errorFunction turns a throw into these words for a model: to a body, that is a failure.
      if (output === SDK_TOOL_ERROR_TEXT) return Outcome.failure("CapabilityFailed", `${each.name} failed: ${output}`);
      return answerOf(output);
    },
  };
  // A static policy that answers false (every tool made without a `needsApproval` function) lets each call through
  // unasked: its calls skip the approval gate, whose per-call work was most of this adapter's own cost per run.
  // Until its answer is known (a microtask after this), calls go through the gate, which asks it: the same outcome.
  if (made.needsApproval !== undefined && isStaticPolicy(each.needsApproval)) {
    Promise.resolve(each.needsApproval(new RunContext(), {} as never, "")).then(
      (needed) => {
        if (needed === false) delete made.needsApproval;
      },
      () => {},
    );
  }
  return made;
}

let staticPolicySource: string | undefined;

/**
 * Whether `policy` is the closure `tool()` makes for a tool without a `needsApproval` function (a boolean or
 * nothing): the SDK does not export its mark of those, and every such closure has the same source text, read
 * here from a tool made without one. Such a closure only returns its constant, so asking it has no effect.
 */
function isStaticPolicy(policy: unknown): boolean {
  if (typeof policy !== "function") return false;
  staticPolicySource ??= Function.prototype.toString.call(
    tool({
      name: "static_policy_probe",
      description: "",
      parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
      strict: true,
      execute: () => "",
    }).needsApproval,
  );
  return Function.prototype.toString.call(policy) === staticPolicySource;
}

/**
 * The code tool call's details for one body call, with `signal` (the call's, and the code tool call's
 * when it has one) made only when read: the SDK reads it only for a timeout or a failure, and most tools
 * never do, while an `AbortSignal.any` per call costs more than the rest of the call's own work.
 */
function withLazySignal(details: CallOptions["details"], ctx: CapabilityContext): NonNullable<CallOptions["details"]> {
  const outer = details?.signal;
  let signal: AbortSignal | undefined;
  return Object.defineProperty({ ...details }, "signal", {
    enumerable: true,
    configurable: true,
    get: () => (signal ??= outer === undefined ? ctx.signal : AbortSignal.any([ctx.signal, outer])),
  }) as NonNullable<CallOptions["details"]>;
}
