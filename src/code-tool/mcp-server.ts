/**
 * The MCP server behind `ears mcp`: the code-tool core's third adapter, beside the AI SDK's and the Agents
 * SDK's. It lists `run_code` (and `resume_code` when a call can need approval) with the core's description,
 * runs each call through the core's run step ({@link runBody}), one at a time per session, and answers with
 * one text: the outcome, the run's failure, or a paused run with its token. The CLI (src/cli/mcp-command.ts)
 * parses the flags, opens the session, the pool and the connectors, and wires this server to stdio.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourcesResult,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  ReadResourceResult,
} from "@modelcontextprotocol/sdk/types.js";
import type { CodeOptions, HostLimits, RunAdmission, RunPool, RunReport } from "../host/index.js";
import type { Session } from "../host/workspace/index.js";
import { DEFAULT_MAX_QUEUED_RUNS } from "../host/engine/admission.js";
import type { Json } from "../protocol/json.js";
import { runBody, type BodyRun } from "./core.js";
import { mcpApprovals, pausedText, RESUME_CODE_TOOL, type CallText } from "./mcp-approval.js";
import { escapeControls } from "./output.js";
import { boundedToolLogs, CODE_TOOL_MAX_RESULT_BYTES, codeToolDescription } from "./text.js";

/** The name of the one tool `ears mcp` serves. */
export const RUN_CODE_TOOL = "run_code";

/** What of the MCP SDK the server needs (the CLI loads it, an optional peer). */
export interface McpServerSdk {
  Server: typeof Server;
  ListToolsRequestSchema: typeof ListToolsRequestSchema;
  CallToolRequestSchema: typeof CallToolRequestSchema;
  ListResourcesRequestSchema: typeof ListResourcesRequestSchema;
  ReadResourceRequestSchema: typeof ReadResourceRequestSchema;
}

/** An MCP content item a tool result carries for a file its body named. */
export type McpFileContent =
  { type: "image"; data: string; mimeType: string } | { type: "resource_link"; uri: string; name: string; mimeType?: string; size: number };

/** How the server hands a session's files to the client (src/cli/mcp-workspace.ts, which docs/cli.md describes). */
export interface McpSessionFiles {
  /** The content items for the files a result names, and the sentences on what was not sent, within `budget` bytes. */
  attachments(
    session: Session,
    content: string,
    structured: unknown,
    budget: number,
    maxResultBytes: number,
  ): Promise<{ items: McpFileContent[]; notes: string[] }>;
  /** `resources/list` of the workspace. */
  list(session: Session, cursor: string | undefined): Promise<ListResourcesResult>;
  /** `resources/read` of one workspace file. */
  read(session: Session, uri: string): Promise<ReadResourceResult>;
}

/** The server's settings, as `ears mcp`'s flags gave them. */
export interface McpCodeToolServerOptions {
  sdk: McpServerSdk;
  /** The server's version, as it introduces itself. */
  version: string;
  /**
   * runCode's options every body gets: capabilities, allowed, contract, limits (with `maxResultBytes`, the
   * result bound, and `runTimeoutMs`), sandbox, fetch and the rest; the server adds the session, the pool or
   * admission, the signal and the approvals.
   */
  run: Omit<CodeOptions, "code" | "input" | "signal" | "session" | "approval" | "typecheck" | "pool" | "admission">;
  /** The declarations of what a body may call, for the description. */
  declarations: string;
  typecheck: boolean;
  /** The origins fetch may reach, named in the description. */
  fetchOrigins: readonly string[];
  /** The capabilities whose every call needs approval (`--approve`). */
  approve: readonly string[];
  /** How a call is shown in an approval question and a paused answer. */
  callText: CallText;
  /** The connection's session: its runs go one at a time, and the files a result names go back. */
  session?: { session: Session; files: McpSessionFiles };
  /** The warm runners bodies run on; without one, each body starts cold through `admission`. */
  pool?: RunPool;
  admission?: RunAdmission;
  /** A line every tool result ends with (that bodies run unconfined). */
  notice?: string;
  /** The report as the model is told about it (the CLI names a limit by its flag). */
  forModel?: (report: RunReport) => RunReport;
  /** Called with each run's report once its answer is made (the CLI's sandbox note). */
  onReport?: (report: RunReport) => void;
}

/** The server, and how to stop the runs still going when the connection ends. */
export interface McpCodeToolServer {
  server: Server;
  /** Stops every running body (its run ends `Aborted`) and every call still waiting for its turn. */
  stop(reason: Error): void;
}

/**
 * The run_code tool's description: every code tool's ({@link codeToolDescription}), with `input`, the
 * fetch origins and the connection's session (or that each call starts empty).
 */
export function runCodeDescription(
  declarations: string,
  typecheck: boolean,
  limits?: HostLimits,
  fetchOrigins?: readonly string[],
  session?: { workspaceBytes: number },
): string {
  return codeToolDescription({ declarations, typecheck, limits, fetchOrigins: fetchOrigins ?? [], input: true, session: session ?? false });
}

/** run_code calls of one session waiting for the one running, at most: as many as a run admission queues. */
const MAX_SESSION_WAITING = DEFAULT_MAX_QUEUED_RUNS;

/** The answer to a call past {@link MAX_SESSION_WAITING}. */
const SESSION_BUSY =
  `RunQueueFull: ${MAX_SESSION_WAITING} run_code calls are already waiting for the one running: this conversation's calls ` +
  "share one workspace, so they run one at a time. Nothing ran; wait for their results before sending more.";

/** The MCP server of one `ears mcp` connection (not yet connected to a transport). */
export function mcpCodeToolServer(options: McpCodeToolServerOptions): McpCodeToolServer {
  const { sdk, run: host, typecheck, callText, pool, admission, notice } = options;
  const session = options.session?.session;
  const files = options.session?.files;
  const maxResultBytes = host.limits?.maxResultBytes ?? CODE_TOOL_MAX_RESULT_BYTES;
  const forModel = options.forModel ?? ((report: RunReport) => report);
  // One session's runs go one at a time (the host queues them anyway); a run and the reading of the files
  // its result names go as one, so a later call's run cannot change them in between.
  // At most MAX_SESSION_WAITING calls wait; one cancelled while it waits starts nothing when its turn comes (its signal).
  let queue: Promise<unknown> = Promise.resolve();
  let waiting = 0;
  const inTurn = <T>(task: () => Promise<T>): Promise<T> | undefined => {
    if (session === undefined) return task();
    if (waiting >= MAX_SESSION_WAITING) return undefined;
    waiting++;
    const turn = queue.then(
      () => (waiting--, task()),
      () => (waiting--, task()),
    );
    queue = turn.catch(() => {});
    return turn;
  };
  const stop = new AbortController();
  const server = new sdk.Server(
    { name: "ears", version: options.version },
    { capabilities: { tools: {}, ...(session === undefined ? {} : { resources: {} }) } },
  );
  const approvals = mcpApprovals(server, options.approve, host.capabilities ?? {}, host.allowed ?? [], callText);
  server.setRequestHandler(sdk.ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: RUN_CODE_TOOL,
        description: runCodeDescription(options.declarations, typecheck, host.limits, options.fetchOrigins, session),
        inputSchema: {
          type: "object" as const,
          properties: {
            code: { type: "string", description: "The body of an async function (TypeScript or JavaScript)" },
            input: { description: "Any JSON value, the body's `input` (default null)" },
          },
          required: ["code"],
        },
      },
      ...approvals.tools,
    ],
  }));
  server.setRequestHandler(sdk.CallToolRequestSchema, async (request, extra) => {
    const resuming = request.params.name === RESUME_CODE_TOOL && approvals.tools.length > 0;
    if (request.params.name !== RUN_CODE_TOOL && !resuming) {
      const tools = approvals.tools.length === 0 ? `tool is ${RUN_CODE_TOOL}` : `tools are ${RUN_CODE_TOOL} and ${RESUME_CODE_TOOL}`;
      return {
        content: [{ type: "text" as const, text: `unknown tool ${JSON.stringify(request.params.name)}; the ${tools}` }],
        isError: true,
      };
    }
    const args = request.params.arguments ?? {};
    const resume = resuming ? approvals.resumeArguments(args) : undefined;
    if (resume !== undefined && "isError" in resume) return resume;
    if (!resuming && typeof args.code !== "string") {
      return { content: [{ type: "text" as const, text: `${RUN_CODE_TOOL} needs "code", the body as a string` }], isError: true };
    }
    const runOptions = {
      ...host,
      // The connection's session's workspace; without one, as ears exec without --cwd: a private, empty directory.
      cwd: undefined,
      ...(session === undefined ? {} : { session }),
      signal: AbortSignal.any([extra.signal, stop.signal]),
      typecheck,
      approval: approvals.approval(extra.requestId),
      ...(pool === undefined ? (admission === undefined ? {} : { admission }) : { pool }),
    };
    let ran: BodyRun;
    let named: { items: McpFileContent[]; notes: string[] } | undefined;
    try {
      const turn = inTurn(async () => {
        const start = resume === undefined ? { code: args.code as string, input: (args.input ?? null) as Json } : resume;
        const result = await runBody(start, runOptions);
        const report = "report" in result ? result.report : undefined;
        return [result, session === undefined || report === undefined ? undefined : await namedFiles(report)] as const;
      });
      if (turn === undefined) return { content: [{ type: "text" as const, text: SESSION_BUSY }], isError: true };
      [ran, named] = await turn;
    } catch (error) {
      // A missing optional peer (amaro, typescript): the client's model cannot fix that, its user can.
      return { content: [{ type: "text" as const, text: (error as Error).message }], isError: true };
    }
    // A token that is not this server's, or was changed, or resumed before (ApprovalTokenError), or decisions that do not fit it.
    if ("refused" in ran)
      return { content: [{ type: "text" as const, text: `${RESUME_CODE_TOOL}: ${ran.refused.message}` }], isError: true };
    const report = ran.report;
    try {
      options.onReport?.(report);
    } catch {
      // The CLI's note; the client's answer does not depend on it.
    }
    const result = toolResult(forModel(report), callText, notice);
    if (named === undefined) return result;
    const text = named.notes.length === 0 ? result.content[0]!.text : `${result.content[0]!.text}\n\n${named.notes.join("\n")}`;
    return { content: [{ type: "text" as const, text }, ...named.items], isError: result.isError };
  });
  if (session !== undefined && files !== undefined) {
    // A refusal carries its JSON-RPC code, which the SDK's server sends with its message.
    server.setRequestHandler(sdk.ListResourcesRequestSchema, (request) => files.list(session, request.params?.cursor));
    server.setRequestHandler(sdk.ReadResourceRequestSchema, (request) => files.read(session, request.params.uri));
  }

  /** The files a successful or failed outcome names, as content items, within what the result bound leaves after the text. */
  async function namedFiles(report: RunReport) {
    if (files === undefined || session === undefined) return undefined;
    if (report.failure !== undefined || report.paused !== undefined || report.outcome === undefined) return undefined;
    const text = toolResult(report, callText).content[0]!.text;
    const { content, structured } = report.outcome;
    return files.attachments(session, content, structured, maxResultBytes - Buffer.byteLength(text), maxResultBytes);
  }

  return { server, stop: (reason) => stop.abort(reason) };
}

/**
 * A run's report as a tool result: one text, the outcome (its content, then `structured` as JSON, then
 * the logs) or the run's failure, with `isError` unless it succeeded. The value is sent once: no
 * `structuredContent` repeating it (a 6 MB result went out as 18 MB that way, and the client hung up).
 * `structured` is pretty-printed when that keeps it small, else sent compact.
 */
export function toolResult(
  report: RunReport,
  callText: CallText,
  notice?: string,
): { content: { type: "text"; text: string }[]; isError: boolean } {
  // Control characters reach the client as \uXXXX (in the JSON parts, the token's too, that is JSON's own escape).
  const result = rawToolResult(report, callText, notice);
  return { ...result, content: result.content.map((part) => ({ ...part, text: escapeControls(part.text) })) };
}

function rawToolResult(
  report: RunReport,
  callText: CallText,
  notice?: string,
): { content: { type: "text"; text: string }[]; isError: boolean } {
  const logs = logText(report) + (notice === undefined ? "" : `\n\n${notice}`);
  if (report.failure !== undefined) {
    const { code, message } = report.failure;
    return { content: [{ type: "text", text: `${code}: ${message}${logs}` }], isError: true };
  }
  // The token ends a paused result, so that it can be taken from "Token:" to the end: logs and the note go first.
  if (report.paused !== undefined)
    return {
      content: [{ type: "text", text: `${logs.slice(2)}${logs === "" ? "" : "\n\n"}${pausedText(report.paused, callText)}` }],
      isError: false,
    };
  const outcome = report.outcome;
  const structured = outcome.structured === undefined ? "" : `${outcome.content === "" ? "" : "\n"}${jsonText(outcome.structured)}`;
  const text = outcome.status === "failure" ? `${outcome.code}: ${outcome.content}${structured}` : `${outcome.content}${structured}`;
  return { content: [{ type: "text", text: `${text}${logs}` }], isError: outcome.status === "failure" };
}

/** Results up to this size are pretty-printed; larger ones compact (indentation can double a result's size). */
const PRETTY_CHARS = 64 * 1024;

function jsonText(value: Json): string {
  const compact = JSON.stringify(value);
  return compact.length > PRETTY_CHARS ? compact : JSON.stringify(value, null, 2);
}

function logText(report: RunReport): string {
  if (report.logs.length === 0) return "";
  return `\n\nLogs:\n${boundedToolLogs(report.logs.map((entry) => `[${entry.level}] ${entry.content}`)).join("\n")}`;
}
