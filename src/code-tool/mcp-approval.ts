/**
 * Approvals in `ears mcp` (docs/approvals.md, "In ears mcp"): `--approve NAME,...` marks capabilities, and
 * each call that needs approval is asked of the MCP client by elicitation when the client declared it.
 * Without elicitation the run pauses: run_code answers with the signed token and the pending calls, and
 * the `resume_code` tool goes on from it (resumeCode). The token key is random per `ears mcp` process and
 * never shown, so a token from another process, or changed, is refused by resumeCode's own checks; a token
 * resumed once is refused the second time (the process's ledger).
 */
import { randomBytes } from "node:crypto";
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  memoryLedger,
  type ApprovalCall,
  type ApprovalDecision,
  type ApprovalOptions,
  type Capabilities,
  type PausedRun,
  type ResumeDecision,
} from "../host/index.js";
import { describeError } from "../protocol/errors.js";

/** How a call is shown to a person (its name and arguments on one line, control characters escaped): the CLI's. */
export type CallText = (call: ApprovalCall) => string;

/** The name of the tool that resumes a paused run. */
export const RESUME_CODE_TOOL = "resume_code";

/** The `by` of a decision the MCP client's user gave through elicitation. */
export const MCP_CLIENT_BY = "mcp-client";

/** The `by` of a decision given in a resume_code call. */
export const RESUME_CODE_BY = "resume_code";

/** What of the MCP SDK's Server an approval needs. */
export interface ElicitingServer {
  getClientCapabilities(): { elicitation?: { form?: object } } | undefined;
  elicitInput(
    params: {
      mode: "form";
      message: string;
      requestedSchema: {
        type: "object";
        properties: Record<string, { type: "boolean"; title?: string; description?: string }>;
        required?: string[];
      };
    },
    options: { signal: AbortSignal; timeout: number; relatedRequestId?: string | number },
  ): Promise<{ action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> }>;
}

/** A tool result, as ears mcp answers. */
export type ToolText = { content: { type: "text"; text: string }[]; isError: boolean };

/** Approvals for one `ears mcp` server. */
export interface McpApprovals {
  /** The extra tools to list: resume_code when a call can need approval, else none. */
  tools: { name: string; description: string; inputSchema: { type: "object"; properties: Record<string, object>; required: string[] } }[];
  /** The approval options of one run (run_code or resume_code), for the tools/call request `requestId`. */
  approval(requestId: string | number): ApprovalOptions;
  /**
   * resume_code's arguments checked: the token as given, and the decisions with `by` set to
   * {@link RESUME_CODE_BY}; or the error result to answer (nothing runs then).
   */
  resumeArguments(args: Record<string, unknown>): { token: unknown; decisions: Record<string, ResumeDecision> } | ToolText;
}

/**
 * The approvals of an `ears mcp` server: `required` are the --approve names; `capabilities` and `allowed`
 * tell whether any call can need approval at all (a handler marked with requireApproval), which decides
 * whether resume_code is listed.
 */
export function mcpApprovals(
  server: ElicitingServer,
  required: readonly string[],
  capabilities: Capabilities,
  allowed: readonly string[],
  callText: CallText,
): McpApprovals {
  // Per process, never shown: only this server's tokens pass resumeCode's signature check.
  const tokenKey = randomBytes(32);
  // A token resumes once: a second resume_code of it is refused (AlreadyResumed) and nothing runs. The key is this
  // process's, so no other process could resume its tokens anyway: a ledger in memory is all it takes.
  const ledger = memoryLedger();
  const possible =
    required.length > 0 ||
    allowed.some(
      (name) => Object.hasOwn(capabilities, name) && (capabilities[name] as { requiresApproval?: unknown }).requiresApproval !== undefined,
    );
  const timeoutMs = DEFAULT_APPROVAL_TIMEOUT_MS;
  // One question open at a time in the session (a body cannot open a dialog per call at once), and at most
  // MAX_PENDING_APPROVALS calls waiting for one: a call past it is denied at once, saying why.
  let questions: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  const ask = (call: ApprovalCall, signal: AbortSignal, requestId: string | number): ApprovalDecision | Promise<ApprovalDecision> => {
    if (waiting >= MAX_PENDING_APPROVALS) return tooMany(MCP_CLIENT_BY);
    waiting++;
    const turn = questions.then(() =>
      signal.aborted
        ? { approved: false as const, reason: "the question was withdrawn before it was asked", by: MCP_CLIENT_BY }
        : elicit(server, call, signal, timeoutMs, requestId, callText),
    );
    questions = turn.catch(() => undefined);
    return turn.finally(() => waiting--);
  };
  return {
    tools: possible ? [RESUME_TOOL] : [],
    approval: (requestId) => {
      // Without elicitation the run pauses: its token lists the pending calls, at most MAX_PENDING_APPROVALS of them.
      let paused = 0;
      return {
        required,
        tokenKey,
        ledger,
        timeoutMs,
        decide: (call, { signal }) => {
          if (server.getClientCapabilities()?.elicitation?.form !== undefined) return ask(call, signal, requestId);
          if (paused >= MAX_PENDING_APPROVALS) return tooMany(RESUME_CODE_BY);
          paused++;
          return { pause: true };
        },
      };
    },
    resumeArguments,
  };
}

/**
 * The most calls of one `ears mcp` session that wait for approval at once (asked, or queued to be asked,
 * one question at a time); in a paused run, the most pending calls. A call past it is denied.
 */
export const MAX_PENDING_APPROVALS = 32;

function tooMany(by: string): ApprovalDecision {
  return {
    approved: false,
    reason:
      `${MAX_PENDING_APPROVALS} calls already wait for approval in this session (the most ears mcp lets wait; the user is asked ` +
      "one question at a time): this call was not asked about and did not run. Make calls that need approval a few at a time",
    by,
  };
}

/** Asks the client's user: accepted with approve true approves; anything else denies, saying which. */
async function elicit(
  server: ElicitingServer,
  call: ApprovalCall,
  signal: AbortSignal,
  timeoutMs: number,
  requestId: string | number,
  callText: CallText,
): Promise<ApprovalDecision> {
  let result;
  try {
    result = await server.elicitInput(
      {
        mode: "form",
        message: `A code body run by ears calls ${callText(call)}\nApprove this call?`,
        requestedSchema: {
          type: "object",
          properties: { approve: { type: "boolean", title: "Approve", description: `Let ${call.name} run with these arguments` } },
          required: ["approve"],
        },
      },
      // The SDK's own request deadline (60 s by default) outlasts ears' decision deadline, which aborts `signal`.
      { signal, timeout: timeoutMs + 60_000, relatedRequestId: requestId },
    );
  } catch (error) {
    return { approved: false, reason: `the MCP client did not answer the approval question: ${describeError(error)}`, by: MCP_CLIENT_BY };
  }
  if (result.action === "accept" && result.content?.approve === true) return { approved: true, by: MCP_CLIENT_BY };
  const reason =
    result.action === "accept"
      ? "the MCP client's user did not approve it"
      : result.action === "decline"
        ? "the MCP client's user declined it"
        : "the MCP client's user cancelled the question";
  return { approved: false, reason, by: MCP_CLIENT_BY };
}

const RESUME_TOOL: McpApprovals["tools"][number] = {
  name: RESUME_CODE_TOOL,
  description:
    "Goes on with a run_code run that paused because a call needs approval. Ask the user about each pending call " +
    "first: this call is the approval. Give the token exactly as run_code returned it, and a decision for each " +
    'pending call by its id: {"approved": true} or {"approved": false, "reason": "..."}. The body runs again from ' +
    "the start: the calls it made before the pause are answered as before (not repeated), the approved calls run, " +
    "the denied ones resolve to an ApprovalDenied failure. A token resumes once. The result is run_code's (it may pause again).",
  inputSchema: {
    type: "object",
    properties: {
      token: { description: "The token from run_code's paused answer (the JSON object, or its text)" },
      decisions: {
        type: "object",
        description: 'A decision for each pending call, keyed by its id, e.g. {"3": {"approved": true}}',
        additionalProperties: {
          type: "object",
          properties: { approved: { type: "boolean" }, reason: { type: "string" } },
          required: ["approved"],
        },
      },
    },
    required: ["token", "decisions"],
  },
};

function resumeArguments(args: Record<string, unknown>): { token: unknown; decisions: Record<string, ResumeDecision> } | ToolText {
  const error = (text: string): ToolText => ({
    content: [{ type: "text", text: `${RESUME_CODE_TOOL}: ${text}; nothing was run` }],
    isError: true,
  });
  if (args.token === undefined) return error('"token" is missing: give the token from run_code\'s paused answer');
  const given = args.decisions;
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    return error('"decisions" must be an object keyed by the pending calls\' ids, e.g. {"3": {"approved": true}}');
  }
  const decisions: Record<string, ResumeDecision> = {};
  for (const [id, value] of Object.entries(given)) {
    const { approved, reason } = (typeof value === "object" && value !== null ? value : {}) as { approved?: unknown; reason?: unknown };
    if (typeof approved !== "boolean" || (reason !== undefined && typeof reason !== "string")) {
      return error(`decisions[${JSON.stringify(id)}] must be {"approved": true} or {"approved": false, "reason": "..."}`);
    }
    decisions[id] = approved
      ? { approved: true, by: RESUME_CODE_BY }
      : {
          approved: false,
          reason: typeof reason === "string" && reason !== "" ? reason : `denied through ${RESUME_CODE_TOOL}`,
          by: RESUME_CODE_BY,
        };
  }
  return { token: args.token, decisions };
}

/** A paused run as text a model can act on: what waits, and how to go on (the token, as JSON). */
export function pausedText(paused: PausedRun, callText: CallText): string {
  const count = paused.pending.length;
  const example = Object.fromEntries(paused.pending.map((call) => [String(call.id), { approved: true }]));
  return (
    `The run paused: ${count} call${count === 1 ? " waits" : "s wait"} for approval, and the body stopped there.\n` +
    `Pending:\n${paused.pending.map((call) => `  id ${call.id}: ${callText(call)}`).join("\n")}\n` +
    `Ask the user whether to allow ${count === 1 ? "it" : "each"}; then call ${RESUME_CODE_TOOL} with this token and their ` +
    `decisions, e.g. "decisions": ${JSON.stringify(example)} (a denial: {"approved": false, "reason": "..."}).\n` +
    `Token:\n${JSON.stringify(paused.token)}`
  );
}
