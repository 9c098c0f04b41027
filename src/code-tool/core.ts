/**
 * What the framework adapters (`@posoco/ears/ai`, `@posoco/ears/openai-agents`) share: a framework's
 * tools as capabilities with a contract (so `declarations()` and `typecheck: true` see them), MCP
 * connections beside them, the code tool's description, and one run of a body with `runCode` mapped to
 * what a model can act on. Each adapter only reads its framework's tool shape and calls its tools.
 * This file imports no framework: it is the part both entries load.
 */
import { composeContracts } from "../contract/compose.js";
import type { CapabilityContext, CapabilitySpec, Contract } from "../contract/contract.js";
import type { Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import { clip } from "../protocol/text.js";
import { boundedToolLogs as boundedLogs, codeToolDescription, codeToolLimits } from "./text.js";
import { escapeControls, escapeJson } from "./output.js";
import { namedImages } from "./files.js";
import { CODE_TOOL_MAX_RESULT_BYTES } from "./text.js";
import { describeError } from "../protocol/errors.js";
import { isSession, type Session } from "../host/workspace/index.js";
import { randomUUID } from "node:crypto";
import { isStore, memoryStore, type ApprovalStore } from "./store.js";
import { poolLimitsOf } from "../host/code/run-pool.js";
import { requireTypeScript } from "../host/code/typecheck.js";
import { approvalSettings } from "../host/approvals/approval.js";
import type { McpConnection } from "../host/connectors/mcp.js";
import {
  createRunPool,
  ApprovalTokenError,
  memoryLedger,
  requireApproval,
  resumeCode,
  runCode,
  type ApprovalLedger,
  type CodeOptions,
  type ApprovalCall,
  type ApprovalDecision,
  type Capabilities,
  type HostLimits,
  type ResumeDecision,
  type RunPool,
  type RunReport,
} from "../host/index.js";
import type { SandboxSetting } from "../host/sandbox/types.js";

/** Options every framework's code tool takes besides its tools. */
export interface CodeToolOptions {
  /**
   * MCP servers' tools, from `connectMcpServers` (one connection or several): callable from a body as
   * `<server>.<tool>`, declared from their JSON Schemas. The caller keeps the connection and closes it.
   */
  mcp?: McpConnection | readonly McpConnection[];
  /**
   * The run pool bodies run on (`createRunPool`; the caller closes it), or `false` to start each body
   * cold. Default: the tool starts its own pool (2 runners, with `sandbox` and the pool's part of
   * `limits`) on its first run; its runners never keep the process alive and end with it.
   */
  pool?: RunPool | false;
  /**
   * runCode's limits for each body (`runTimeoutMs`, `memoryBytes`, ...), over the code tool's defaults:
   * 50 s of run time and a result of at most 1 MiB (as `ears mcp`); the limits are named in the description.
   */
  limits?: HostLimits;
  /**
   * Check each body's types against the tools' declarations before it runs (default false, as runCode):
   * a type error comes back as `CompileError` with its `code.ts:LINE:COLUMN`. Needs `typescript`.
   */
  typecheck?: boolean;
  /** runCode's sandbox (default "auto"). */
  sandbox?: SandboxSetting;
  /** Called with each run's full report (usage, calls, logs, pid), after the result is made. A throw is ignored. */
  onReport?: (report: RunReport) => void;
  /**
   * The live decision on a body's call to a tool with `needsApproval` (docs/frameworks.md, "Approvals"):
   * runCode's `approval.decide` and `approval.timeoutMs`. The framework's policy is asked first (with the
   * body's arguments and the code tool call's options); only a call it holds is given to `decide`, while
   * the body waits. Approve: the tool runs. Deny: the body's call is an `ApprovalDenied` failure with
   * the reason, and the tool does not run. Without this option, such a call is denied, saying so.
   */
  approval?: CodeToolApproval;
}

/**
 * How a code tool gets a decision on a call that needs approval (docs/frameworks.md, "Approvals"): live
 * (`decide` approves or denies while the body waits), or durable (`decide` answers `{ pause: true }`, or
 * there is no `decide` but a `tokenKey`): the run stops, its signed token stays in `store` on the host, the
 * model reads `{ status: "paused", resumeId, pending }`, and `code.resume(resumeId, { decisions })` goes on
 * later, in this or another process, once.
 */
export interface CodeToolApproval {
  /**
   * Asked once for each call the tool's `needsApproval` holds (`call`: its `id` in the run, the tool's
   * `name`, the `arguments` the body sent). `signal` aborts when the answer is no longer wanted (the
   * decision deadline passed, the run ended). A throw, a rejection or a malformed decision denies the call.
   * `{ pause: true }` pauses the run (needs `tokenKey`). Default with `tokenKey`: pause on every held call.
   */
  decide?: (call: ApprovalCall, context: { signal: AbortSignal }) => ApprovalDecision | PromiseLike<ApprovalDecision>;
  /** How long one decision may take (runCode's, default 10 minutes; Infinity for none): past it the call is `ApprovalTimedOut`. */
  timeoutMs?: number;
  /**
   * The key paused runs' tokens are signed with (at least 32 bytes): the same in the process that resumes.
   * Without it a run cannot pause, and `{ pause: true }` denies the call.
   */
  tokenKey?: string | Uint8Array;
  /** Where a paused run's token waits, by its `resumeId` (default `memoryStore()`; `fileStore(dir)` for another process). */
  store?: ApprovalStore;
  /** Where a resume is claimed, so each paused run resumes once (default `memoryLedger()`; see docs/approvals.md). */
  ledger?: ApprovalLedger;
}

/** What a paused code tool call answers (the model reads it): the run waits for a person's decisions on `pending`. */
export interface CodeToolPaused {
  status: "paused";
  /** The id the app resumes the run by: `code.resume(resumeId, { decisions })`. */
  resumeId: string;
  /** The calls waiting for a decision; `decisions` are keyed by their `id`. */
  pending: { id: number; name: string; arguments: Json }[];
  /** What the model is told. */
  content: string;
  logs?: string[];
}

/**
 * What the model sees as the code tool's result: the body's outcome (what it returned, or a failure a
 * call or the body made), or the run's failure (`CompileError` with `code.ts:LINE:COLUMN`, `GuestFailed`,
 * `RunTimeout`, `MemoryLimit`, `Aborted`, ...), with the body's log lines. While a body runs, a framework
 * that streams tool results gets the same shape with `status: "running"` and the log lines so far.
 */
export interface CodeToolOutput {
  status: "success" | "failure" | "running" | "paused";
  /** A failure's code: the body's own, a tool's, or the run's (CompileError, RunTimeout, ...). */
  code?: string;
  /** The outcome's text; for a run that failed, the message saying why. */
  content: string;
  /** What the body returned (any JSON value). */
  structured?: Json;
  /** The body's log lines (`console.*`, `ears.log`) as `[level] text`, at most 50 lines and 10,000 characters. */
  logs?: string[];
  /** While running: how many tool calls the body has made so far. */
  calls?: number;
  /**
   * With a session, the images the result names (a string of it that is the workspace-relative path of an
   * image file), base64, for the adapter to hand back as its framework's image parts (the AI SDK's
   * `image-data`); within the result bound, at most 20.
   */
  files?: CodeToolFile[];
  /** Paused: the id `code.resume` takes. */
  resumeId?: string;
  /** Paused: the calls waiting for a decision. */
  pending?: CodeToolPaused["pending"];
}

/** An image a body's result named, read from the session's workspace. */
export interface CodeToolFile {
  /** Its workspace-relative path, as the result named it. */
  path: string;
  /** image/png, image/jpeg, image/gif or image/webp, by its first bytes. */
  mediaType: string;
  /** Its bytes, base64. */
  data: string;
}

/** How an adapter's code tool finds the session of a call: one session for every call, or one per conversation. */
export type SessionOf<CallOptions> = (callOptions: CallOptions) => Session | PromiseLike<Session>;

/** One of the user's tools as a capability: its spec, and how to call it with the framework's options of the code tool's call. */
export interface FrameworkTool<CallOptions> {
  spec: CapabilitySpec;
  call(args: Json, ctx: CapabilityContext, options: CallOptions): unknown;
  /**
   * The framework's approval policy for one call, when the tool has one: asked with the body's arguments
   * and the code tool call's options; `false` lets the call through unasked, a {@link PolicyVerdict} is the
   * decision itself (the policy approved or denied it), anything else (a throw too) means the call needs
   * a decision.
   */
  needsApproval?: (args: Json, options: CallOptions) => unknown;
}

/** A framework policy's own decision on a call (the AI SDK 7's `toolApproval` answering "approved" or "denied"). */
export class PolicyVerdict {
  constructor(readonly decision: ResumeDecision) {}
}

/** A tool that cannot be called from a body, and why (it is named in the description). */
export interface LeftOutTool {
  name: string;
  why: string;
}

/** A code tool's shared part: its description, contract and runs. */
export interface CodeToolCore<CallOptions> {
  readonly description: string;
  readonly contract: Contract;
  /**
   * Runs a body; `onProgress` gets the log lines and the number of calls so far as they change. Rejects
   * only for a setup mistake (a missing peer).
   */
  run(
    code: unknown,
    callOptions: CallOptions,
    signal: AbortSignal | undefined,
    onProgress?: (progress: CodeToolOutput) => void,
  ): Promise<CodeToolOutput>;
  /**
   * Resumes a paused run by its `resumeId` with `decisions` keyed by the pending calls' ids: resolves with
   * what the code tool call would have returned (it may pause again). Claimed in the ledger first: a second
   * resume of an id, an unknown id or decisions that do not fit resolve to a failure and nothing runs.
   */
  resume(resumeId: unknown, decisions: unknown, callOptions: CallOptions, signal?: AbortSignal): Promise<CodeToolOutput>;
}

/**
 * The shared part of a code tool over `tools` (by the name a body calls), with `leftOut` named in the
 * description. Throws a TypeError for bad options or a name two sources declare, and what to install
 * when `typecheck` is asked for without `typescript`.
 */
export function codeToolCore<CallOptions>(
  entry: string,
  tools: ReadonlyMap<string, FrameworkTool<CallOptions>>,
  leftOut: readonly LeftOutTool[],
  options: CodeToolOptions,
  sessionOf?: SessionOf<CallOptions>,
): CodeToolCore<CallOptions> {
  const { pool, typecheck = false, sandbox, onReport } = options;
  if (options.limits !== undefined && (typeof options.limits !== "object" || options.limits === null)) {
    throw new TypeError(`${entry}: options.limits must be an object of runCode's limits`);
  }
  const limits = codeToolLimits(options.limits);
  const approval = approvalOf(entry, options.approval);
  if (pool !== undefined && pool !== false && (typeof pool !== "object" || pool === null)) {
    throw new TypeError(`${entry}: options.pool must be a run pool (createRunPool) or false`);
  }
  if (typeof typecheck !== "boolean") throw new TypeError(`${entry}: options.typecheck must be a boolean`);
  if (onReport !== undefined && typeof onReport !== "function") throw new TypeError(`${entry}: options.onReport must be a function`);
  if (typecheck) requireTypeScript();
  const connections = mcpConnectionsOf(entry, options.mcp);
  const own: Record<string, CapabilitySpec> = Object.create(null);
  for (const [name, tool] of tools) own[name] = tool.spec;
  let contract: Contract;
  try {
    contract = composeContracts(own, ...connections.map((connection) => connection.contract));
  } catch (error) {
    throw new TypeError(`${entry}: ${(error as Error).message.replace(/^composeContracts: /, "")} (a tool and an MCP server's tool?)`);
  }
  const description = codeToolDescription({ declarations: contract.declarations(), typecheck, limits, leftOut });
  let kept: RunPool | undefined;
  const poolOfRun = (): RunPool | undefined => {
    if (pool === false) return undefined;
    if (pool !== undefined) return pool;
    kept ??= createRunPool({ sandbox, limits: poolLimitsOf(limits) });
    return kept;
  };

  const store = approval?.store ?? memoryStore();
  const ledger = approval?.ledger ?? memoryLedger();

  /** One run of a body, or the resume of a paused one, shaped for the model. */
  const execute = async (
    start: { code: string } | { token: unknown; decisions: Record<string, ResumeDecision> },
    callOptions: CallOptions,
    signal: AbortSignal | undefined,
    onProgress?: (progress: CodeToolOutput) => void,
  ): Promise<CodeToolOutput> => {
    const logs: string[] = [];
    let calls = 0;
    const progress = () => onProgress?.({ status: "running", content: "", logs: boundedLogs(logs).map(escapeControls), calls });
    const capabilities: Capabilities = Object.create(null);
    // Each tool's policy as the run starts: an adapter may drop one between runs (a static policy found to answer false).
    const policies = new Map<string, NonNullable<FrameworkTool<CallOptions>["needsApproval"]>>();
    for (const [name, tool] of tools) {
      const capability = (args: Json, ctx: CapabilityContext) => {
        calls += 1;
        progress();
        return tool.call(args, ctx, callOptions);
      };
      // Every call of a tool with a policy goes through runCode's approval gate; `decide` below asks the policy first.
      const policy = tool.needsApproval;
      if (policy !== undefined) policies.set(name, policy);
      capabilities[name] = policy === undefined ? capability : requireApproval(capability);
    }
    for (const connection of connections) {
      for (const [name, capability] of Object.entries(connection.capabilities)) {
        capabilities[name] = (args, ctx) => {
          calls += 1;
          progress();
          return capability(args, ctx);
        };
      }
    }
    let session: Session | undefined;
    if (sessionOf !== undefined) {
      try {
        session = await sessionOf(callOptions);
      } catch (error) {
        return {
          status: "failure",
          code: "SessionUnavailable",
          content: escapeControls(`the code tool's session: ${describeError(error)}`),
        };
      }
      if (!isSession(session)) {
        throw new TypeError(`${entry}: options.session must be a session (createSession, openSession) or a function returning one`);
      }
    }
    const runPool = poolOfRun();
    const options = {
      capabilities,
      allowed: contract.names,
      contract,
      typecheck,
      limits,
      ...(sandbox === undefined || runPool !== undefined ? {} : { sandbox }),
      ...(signal === undefined ? {} : { signal }),
      ...(runPool === undefined ? {} : { pool: runPool }),
      ...(session === undefined ? {} : { session }),
      approval: {
        decide: (call: ApprovalCall, context: { signal: AbortSignal }) =>
          decision(entry, policies.get(call.name), call, callOptions, approval, context),
        ...(approval?.timeoutMs === undefined ? {} : { timeoutMs: approval.timeoutMs }),
        ...(approval?.tokenKey === undefined ? {} : { tokenKey: approval.tokenKey }),
        ledger,
      },
      onLog: (entry: { level: string; content: string }) => {
        logs.push(`[${entry.level}] ${entry.content}`);
        progress();
      },
    };
    const ran = await runBody(start, options);
    if ("refused" in ran) {
      const error = ran.refused;
      return {
        status: "failure",
        code: error instanceof ApprovalTokenError ? error.problem : "InvalidArguments",
        content: escapeControls(error.message),
      };
    }
    const report = ran.report;
    try {
      onReport?.(report);
    } catch {
      // The caller's observer; the model's result does not depend on it.
    }
    if (report.paused !== undefined) {
      const resumeId = randomUUID();
      await store.set(resumeId, JSON.stringify(report.paused.token));
      return pausedOutput(resumeId, report.paused.pending, logs);
    }
    const output = outputOf(report, logs);
    if (session === undefined || report.outcome === undefined) return output;
    const budget = (limits.maxResultBytes ?? CODE_TOOL_MAX_RESULT_BYTES) - Buffer.byteLength(JSON.stringify(output));
    const files = await namedImages(session, report.outcome.content, report.outcome.structured, budget);
    return files.length === 0 ? output : { ...output, files };
  };

  const run: CodeToolCore<CallOptions>["run"] = async (code, callOptions, signal, onProgress) => {
    if (typeof code !== "string") {
      return { status: "failure", code: "InvalidArguments", content: 'the code tool takes { "code": "<the body of an async function>" }' };
    }
    return execute({ code }, callOptions, signal, onProgress);
  };

  const resume: CodeToolCore<CallOptions>["resume"] = async (resumeId, decisions, callOptions, signal) => {
    const refused = (code: string, content: string): CodeToolOutput => ({
      status: "failure",
      code,
      content: `${content}; nothing was run`,
    });
    if (typeof resumeId !== "string" || resumeId === "")
      return refused("InvalidArguments", "resume: resumeId must be the paused output's resumeId");
    if (typeof decisions !== "object" || decisions === null || Array.isArray(decisions)) {
      return refused("InvalidArguments", "resume: decisions must be an object keyed by the pending calls' ids");
    }
    const token = await store.get(resumeId);
    if (token === undefined) {
      return refused(
        "UnknownResumeId",
        `resume: no paused run ${JSON.stringify(resumeId)} in this code tool's store (resumed already, or another store)`,
      );
    }
    const output = await execute({ token, decisions: decisions as Record<string, ResumeDecision> }, callOptions, signal);
    // Claimed in the ledger: the token cannot run again, so it is not kept. Refused before the claim (decisions that do
    // not fit, a token this key did not sign), it is kept for a right resume.
    if (!(output.status === "failure" && output.code !== undefined && KEPT_ON.has(output.code))) await store.delete(resumeId);
    return output;
  };
  return { description, contract, run, resume };
}

/** What a body run starts from: a body (and its `input`), or a paused run's token and the decisions on its pending calls. */
export type BodyStart = { code: string; input?: Json } | { token: unknown; decisions: Record<string, ResumeDecision> };

/** A body run's end: its report, or a resume refused before anything ran. */
export type BodyRun = { report: RunReport } | { refused: ApprovalTokenError | TypeError };

/**
 * The run every code tool makes (the AI SDK's, the Agents SDK's and `ears mcp`'s): `runCode` for a body,
 * `resumeCode` for a paused run's token, with the tool's options. A resume refused before anything ran (a
 * token claimed before, not signed with this key, or decisions that do not fit it) resolves to `refused`,
 * for the adapter to answer its model with; any other rejection (a missing peer) is the caller's.
 */
export async function runBody(start: BodyStart, options: Omit<CodeOptions, "code" | "input">): Promise<BodyRun> {
  if ("code" in start) {
    return { report: await runCode({ ...options, code: start.code, ...(start.input === undefined ? {} : { input: start.input }) }) };
  }
  try {
    return { report: await resumeCode(start.token, { ...options, decisions: start.decisions }) };
  } catch (error) {
    if (error instanceof ApprovalTokenError || error instanceof TypeError) return { refused: error };
    throw error;
  }
}

/** The failures of a resume refused before its claim: the token stays in the store. */
const KEPT_ON = new Set(["InvalidArguments", "NotAToken", "UnsupportedVersion", "BadSignature", "Malformed"]);

/** The paused output: what waits, for the model (which cannot resume it: the app does, after a person's answer). */
function pausedOutput(resumeId: string, pending: readonly ApprovalCall[], logs: readonly string[]): CodeToolOutput {
  const count = pending.length;
  return {
    status: "paused",
    resumeId,
    pending: pending.map(({ id, name, arguments: args }) => ({ id, name: escapeControls(name), arguments: escapeJson(args) })),
    content:
      `The run is paused: ${count} call${count === 1 ? " waits" : "s wait"} for a person's approval. The app resumes it after ` +
      "their answer and you get its result then; do not run the body again.",
    ...(logs.length === 0 ? {} : { logs: boundedLogs(logs).map(escapeControls) }),
  };
}

/** Checks the `approval` option: decide, timeoutMs, tokenKey, store, ledger. */
function approvalOf(entry: string, approval: unknown): CodeToolApproval | undefined {
  if (approval === undefined) return undefined;
  if (typeof approval !== "object" || approval === null)
    throw new TypeError(`${entry}: options.approval must be an object { decide?, timeoutMs?, tokenKey?, store?, ledger? }`);
  const { decide, timeoutMs, tokenKey, store, ledger, ...rest } = approval as CodeToolApproval & Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    throw new TypeError(
      `${entry}: options.approval takes decide, timeoutMs, tokenKey, store and ledger, not ${extra.join(", ")} ` +
        "(which calls need approval is each tool's needsApproval)",
    );
  }
  if (decide === undefined && tokenKey === undefined) {
    throw new TypeError(`${entry}: options.approval needs decide (a live decision) or tokenKey (to pause), or both`);
  }
  if (decide !== undefined && typeof decide !== "function")
    throw new TypeError(`${entry}: options.approval.decide must be a function (call, { signal }) => decision`);
  if (store !== undefined && !isStore(store)) {
    throw new TypeError(`${entry}: options.approval.store must have get, set and delete (memoryStore(), fileStore(dir))`);
  }
  // runCode checks these (and says what is wrong) on each run; a code tool's mistake belongs to its maker.
  approvalSettings(
    {
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(tokenKey === undefined ? {} : { tokenKey }),
      ...(ledger === undefined ? {} : { ledger }),
    },
    entry,
  );
  return {
    decide: decide ?? (() => ({ pause: true })),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(tokenKey === undefined ? {} : { tokenKey }),
    ...(store === undefined ? {} : { store }),
    ...(ledger === undefined ? {} : { ledger }),
  };
}

/**
 * The decision on a call the approval gate holds: the tool's own policy first (`false` lets the call
 * through unasked, as the framework would), then the caller's `decide`; without one, a denial the model
 * can act on.
 */
async function decision<CallOptions>(
  entry: string,
  policy: FrameworkTool<CallOptions>["needsApproval"],
  call: ApprovalCall,
  callOptions: CallOptions,
  approval: CodeToolApproval | undefined,
  context: { signal: AbortSignal },
): Promise<ApprovalDecision> {
  let needed: unknown = true;
  try {
    if (policy !== undefined) needed = await policy(call.arguments, callOptions);
  } catch {
    // Fail closed, as runCode's own predicates: a policy that throws holds the call.
  }
  if (needed === false) return { approved: true, by: "needsApproval" };
  if (needed instanceof PolicyVerdict) return needed.decision;
  if (approval === undefined) {
    return {
      approved: false,
      reason:
        `"${call.name}" needs a person's approval for this call, and this code tool was made without a way to ask (its approval option); ` +
        `the tool did not run. Call ${call.name} as a tool of its own.`,
      by: entry,
    };
  }
  return approval.decide!(call, context);
}

/** The model's view of a finished run (see {@link CodeToolOutput}). */
export function outputOf(report: RunReport, logs: readonly string[]): CodeToolOutput {
  const shown = logs.length === 0 ? {} : { logs: boundedLogs(logs).map(escapeControls) };
  if (report.failure !== undefined) {
    return { status: "failure", code: escapeControls(report.failure.code), content: escapeControls(report.failure.message), ...shown };
  }
  // The run function shapes a paused run itself (its token goes to the store first).
  if (report.paused !== undefined) throw new Error("outputOf: a paused run's output is made by the code tool");
  const outcome = report.outcome;
  return {
    status: outcome.status,
    ...(outcome.status === "failure" ? { code: escapeControls(outcome.code) } : {}),
    content: escapeControls(outcome.content),
    ...(outcome.structured === undefined ? {} : { structured: escapeJson(outcome.structured) }),
    ...shown,
  };
}

function mcpConnectionsOf(entry: string, mcp: CodeToolOptions["mcp"]): readonly McpConnection[] {
  if (mcp === undefined) return [];
  const list = Array.isArray(mcp) ? (mcp as readonly McpConnection[]) : [mcp as McpConnection];
  for (const connection of list) {
    if (typeof connection !== "object" || connection === null || typeof connection.capabilities !== "object" || !connection.contract) {
      throw new TypeError(`${entry}: options.mcp must be what connectMcpServers resolves with (or an array of those)`);
    }
  }
  return list;
}

/**
 * A framework tool's output as the answer to a body's call: the output is the success's `structured`,
 * whatever its JSON type (a string too), so a body reads every tool's output the same way; `undefined`
 * is a success without it. A value JSON would alter is refused by the host, as any handler's.
 */
export function answerOf(output: unknown): Outcome {
  return output === undefined ? Outcome.success() : Outcome.success("", output as Json);
}

/** A tool's failure the body reads: its arguments did not match the tool's schema, so it did not run. */
export function invalidArguments(name: string, problem: string): Outcome {
  return Outcome.failure(
    "InvalidArguments",
    `arguments for "${name}" do not match its schema: ${clip(problem, 1000)}; the tool did not run`,
  );
}
