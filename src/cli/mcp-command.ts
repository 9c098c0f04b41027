/**
 * `ears mcp`: ears as an MCP server (stdio) with one tool, `run_code`, that runs a code body sandboxed
 * against the capabilities the options give (MCP servers of --mcp-config, fetch, --capabilities,
 * built-ins). Any MCP client (Claude Desktop, Cursor, an agent framework) then has a code tool whose
 * description carries the TypeScript declarations of what a body may call.
 */
import { createRunPool, resumeCode, runCode, type HostLimits, type RunPool, type RunReport, type SandboxSetting } from "../host/index.js";
import { boundedToolLogs, CODE_TOOL_MAX_RESULT_BYTES, codeToolDescription } from "../code-tool/text.js";
import { escapeControls } from "../code-tool/output.js";
import { createSession, type Session } from "../host/workspace/index.js";
import { DEFAULT_POOL_SIZE, MAX_POOL_SIZE, poolLimitsOf } from "../host/code/run-pool.js";
import { DEFAULT_MAX_QUEUED_RUNS } from "../host/engine/admission.js";
import type { Json } from "../protocol/json.js";
import { isMissingMcpSdk, missingMcpSdk } from "../host/connectors/mcp.js";
import { SDK } from "../protocol/version.js";
import { describeError } from "../protocol/errors.js";
import { MCP_HELP } from "./help.js";
import { ExitStatus, type CliIo } from "./report-output.js";
import { contractOf, hostOptionsOf, inFlagTerms, printSandboxNote, RUN_OPTIONS } from "./run-command.js";
import { parseSize, subcommand, UsageError } from "./usage.js";
import { McpStdioTransport, MAX_SEND_BYTES } from "./mcp-transport.js";
import { mcpAdmission, MCP_RUN_TIMEOUT_MS } from "./mcp-admission.js";
import { mcpApprovals, pausedText, RESUME_CODE_TOOL } from "./mcp-approval.js";
import { attachmentsOf, listResources, readResource, type FileContent } from "./mcp-workspace.js";
import { durableSession, workspaceSizeOf } from "./workspace-option.js";

const { input: _input, record: _record, json: _json, verbose: _verbose, ...SHARED } = RUN_OPTIONS;
const MCP_OPTIONS = {
  ...SHARED,
  typecheck: { type: "boolean" },
  pool: { type: "string" },
  "max-result": { type: "string" },
  "max-runs": { type: "string" },
  "session-dir": { type: "string" },
  "workspace-size": { type: "string" },
  "no-session": { type: "boolean" },
} as const;

/** The largest result of a body `ears mcp` passes on, by default: every code tool's ({@link CODE_TOOL_MAX_RESULT_BYTES}). */
export const MCP_MAX_RESULT_BYTES = CODE_TOOL_MAX_RESULT_BYTES;

/** The limits only `ears mcp` sets from its command line, as a failure message names them. */
const MCP_LIMIT_FLAGS = [["(limits.maxResultBytes)", "(--max-result)"]] as const;

/** The name of the one tool `ears mcp` serves. */
export const RUN_CODE_TOOL = "run_code";

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

/** Runs `ears mcp` with `argv` (the words after "mcp"); serves until stdin ends or a signal. Throws {@link UsageError}. */
export const mcpCommand = subcommand("mcp", MCP_OPTIONS, MCP_HELP, async ({ values, positionals, sawSeparator }, io) => {
  if (positionals.length > 0 || sawSeparator) {
    throw new UsageError("ears mcp takes no command or words; it serves MCP on stdin and stdout (see ears mcp --help)");
  }
  const sdk = await loadServerSdk();
  const maxResultBytes = maxResultOf(values["max-result"]);
  const wanted = sessionWanted(values);
  // The terminal's approval is not ears mcp's (stdin carries MCP): calls are asked of the client instead.
  const {
    contract,
    closeConnectors,
    recorder: _recorder,
    timeline: _timeline,
    approve,
    approval: _terminal,
    input: _input,
    ...host
  } = await hostOptionsOf(values, io);
  host.limits = { ...host.limits, maxResultBytes, runTimeoutMs: host.limits?.runTimeoutMs ?? MCP_RUN_TIMEOUT_MS };
  host.sandbox = mcpSandboxOf(host.sandbox);
  const notice = host.sandbox === false ? UNCONFINED_NOTICE : undefined;
  const typecheck = values.typecheck ?? false;
  const declarations = (contract ?? contractOf(host.allowed ?? [], {})).declarations();
  // Bodies run on warm runners (a run pool) unless --pool 0: the sandbox and limits every body gets, started ahead.
  // Every body, and every warm runner, holds one of --max-runs slots (issue 28 item 4).
  let pool: RunPool | undefined;
  let session: Session | undefined;
  let admission: ReturnType<typeof mcpAdmission>["admission"];
  try {
    const admitted = mcpAdmission(values["max-runs"], values.pool === undefined ? undefined : poolSizeOf(values.pool));
    admission = admitted.admission;
    let { size } = admitted;
    session = await sessionOf(wanted, host.sandbox, io, values.quiet ?? false);
    // A "copy" workspace (a host that cannot mount) goes into each run's own sandbox: no runner started ahead can take it.
    if (session?.mechanism === "copy" && size > 0) {
      if (!(values.quiet ?? false))
        io.stderr.write(
          "ears mcp: the session's workspace is copied into each run's sandbox (this host cannot mount), so bodies start cold\n",
        );
      size = 0;
    }
    pool = size === 0 ? undefined : createRunPool({ size, sandbox: host.sandbox, limits: poolLimitsOf(host.limits), admission });
  } catch (error) {
    await session?.close();
    await closeConnectors();
    throw error;
  }
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
    { name: "ears", version: SDK.slice(SDK.lastIndexOf("@") + 1) },
    { capabilities: { tools: {}, ...(session === undefined ? {} : { resources: {} }) } },
  );
  const approvals = mcpApprovals(server, approve, host.capabilities ?? {}, host.allowed ?? []);
  server.setRequestHandler(sdk.ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: RUN_CODE_TOOL,
        description: runCodeDescription(declarations, typecheck, host.limits, originsOf(values["fetch-allow"]), session),
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
    const signal = AbortSignal.any([extra.signal, stop.signal]);
    const options = {
      ...host,
      // The connection's session's workspace; without one, as ears exec without --cwd: a private, empty directory.
      cwd: undefined,
      ...(session === undefined ? {} : { session }),
      signal,
      typecheck,
      approval: approvals.approval(extra.requestId),
      ...(contract === undefined ? {} : { contract }),
      ...(pool === undefined ? { admission } : { pool }),
    };
    let report: RunReport;
    let files: { items: FileContent[]; notes: string[] } | undefined;
    try {
      const turn = inTurn(async () => {
        const ran = await (resume === undefined
          ? runCode({ ...options, code: args.code as string, input: (args.input ?? null) as Json })
          : resumeCode(resume.token, { ...options, decisions: resume.decisions }));
        return [ran, session === undefined ? undefined : await namedFiles(session, ran, maxResultBytes)] as const;
      });
      if (turn === undefined) return { content: [{ type: "text" as const, text: SESSION_BUSY }], isError: true };
      [report, files] = await turn;
    } catch (error) {
      // A token that is not this server's, or was changed (ApprovalTokenError), or decisions that do not fit it.
      if (resume !== undefined && error instanceof Error && (error.name === "ApprovalTokenError" || error instanceof TypeError)) {
        return { content: [{ type: "text" as const, text: `${RESUME_CODE_TOOL}: ${error.message}` }], isError: true };
      }
      // A missing optional peer (amaro, typescript): the client's model cannot fix that, its user can.
      return { content: [{ type: "text" as const, text: (error as Error).message }], isError: true };
    }
    printSandboxNote(report, io, values.quiet ?? false);
    // A limit is named as the ears mcp user sets it (--timeout), as ears exec names it, not as runCode's option.
    const result = toolResult(inFlagTerms(report, MCP_LIMIT_FLAGS), notice);
    if (files === undefined) return result;
    const text = files.notes.length === 0 ? result.content[0]!.text : `${result.content[0]!.text}\n\n${files.notes.join("\n")}`;
    return { content: [{ type: "text" as const, text }, ...files.items], isError: result.isError };
  });
  if (session !== undefined) {
    const workspace = session;
    // A refusal (ResourceRefusal) carries its JSON-RPC code, which the SDK's server sends with its message.
    server.setRequestHandler(sdk.ListResourcesRequestSchema, (request) => listResources(workspace, request.params?.cursor));
    server.setRequestHandler(sdk.ReadResourceRequestSchema, (request) => readResource(workspace, request.params.uri));
  }
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  const log = (line: string) => io.stderr.write(`${line}\n`);
  const transport = new McpStdioTransport(process.stdin, io.stdout, { parse: (value) => sdk.JSONRPCMessageSchema.parse(value), log });
  // A signal (the client stopping ears, or a user's Ctrl-C) ends the server; a running body is stopped, not orphaned.
  const onSignal = () => void transport.close();
  io.signal?.addEventListener("abort", onSignal, { once: true });
  try {
    await server.connect(transport);
    await closed;
  } finally {
    io.signal?.removeEventListener("abort", onSignal);
    stop.abort(new Error("the MCP session ended"));
    await pool?.close();
    await session?.close();
    await closeConnectors();
  }
  // Who ended the session, on stderr and in the exit status: the client (0), or ears itself (2).
  const ended = transport.ended ?? { by: "server" as const, reason: "the MCP server closed" };
  const signalled = io.signal?.aborted === true ? ` (${describeError(io.signal.reason)})` : "";
  if (ended.by === "ears") {
    log(`ears mcp: stopped: ${ended.reason}`);
    return ExitStatus.SessionError;
  }
  if (!(values.quiet ?? false) || ended.by !== "client") {
    log(`ears mcp: ${ended.by === "client" ? "the client ended the session" : "stopped"}: ${ended.reason}${signalled}`);
  }
  return ExitStatus.Success;
});

/** run_code calls of one session waiting for the one running, at most: as many as a run admission queues. */
const MAX_SESSION_WAITING = DEFAULT_MAX_QUEUED_RUNS;

/** The answer to a call past {@link MAX_SESSION_WAITING}. */
const SESSION_BUSY =
  `RunQueueFull: ${MAX_SESSION_WAITING} run_code calls are already waiting for the one running: this conversation's calls ` +
  "share one workspace, so they run one at a time. Nothing ran; wait for their results before sending more.";

/** The session `ears mcp` was asked for: none (--no-session), the connection's own (default), or --session-dir's. */
type SessionWanted =
  { kind: "none" } | { kind: "temporary"; bytes: number | undefined } | { kind: "durable"; dir: string; bytes: number | undefined };

/** --session-dir, --workspace-size and --no-session, checked against each other and --no-sandbox. Throws {@link UsageError}. */
function sessionWanted(values: {
  "session-dir"?: string;
  "workspace-size"?: string;
  "no-session"?: boolean;
  "no-sandbox"?: boolean;
}): SessionWanted {
  const bytes = workspaceSizeOf(values["workspace-size"]);
  const dir = values["session-dir"];
  if (values["no-session"]) {
    if (dir !== undefined || bytes !== undefined)
      throw new UsageError(
        `--no-session turns off the session that ${dir !== undefined ? "--session-dir" : "--workspace-size"} sets up; ` +
          "give one or the other",
      );
    return { kind: "none" };
  }
  if (dir === "") throw new UsageError("--session-dir needs a directory, e.g. --session-dir ./session");
  if (values["no-sandbox"] && (dir !== undefined || bytes !== undefined)) {
    throw new UsageError(
      `${dir !== undefined ? "--session-dir" : "--workspace-size"} sets up a session, whose runs are sandboxed; drop --no-sandbox`,
    );
  }
  return dir === undefined ? { kind: "temporary", bytes } : { kind: "durable", dir, bytes };
}

/**
 * The connection's session. --session-dir's is opened or created (a UsageError when it cannot be); the
 * default one is made when it can be, and otherwise (a host that cannot mount its tmpfs: not root; or
 * --no-sandbox) ears mcp serves without one, as before sessions, saying so on stderr unless --quiet.
 */
async function sessionOf(wanted: SessionWanted, sandbox: SandboxSetting, io: CliIo, quiet: boolean): Promise<Session | undefined> {
  if (wanted.kind === "none") return undefined;
  if (wanted.kind === "durable") return durableSession("--session-dir", wanted.dir, wanted.bytes, io.cwd);
  const without = (why: string) => {
    if (!quiet)
      io.stderr.write(`ears mcp: no session, so each body works in a private empty directory and no file is kept between calls: ${why}\n`);
    return undefined;
  };
  if (sandbox === false) return without("--no-sandbox, and a session's runs are sandboxed");
  try {
    return await createSession(wanted.bytes === undefined ? {} : { workspaceBytes: wanted.bytes });
  } catch (error) {
    // Asked for with --workspace-size: then not having one is an error, not a note.
    const why = (error as Error).message.replace(/^createSession: /, "");
    if (wanted.bytes !== undefined) throw new UsageError(`--workspace-size: ${why}`);
    return without(why);
  }
}

/** The files a successful or failed outcome names, as content items, within what --max-result leaves after the text. */
async function namedFiles(session: Session, report: RunReport, maxResultBytes: number) {
  if (report.failure !== undefined || report.paused !== undefined || report.outcome === undefined) return undefined;
  const text = toolResult(report).content[0]!.text;
  const { content, structured } = report.outcome;
  return attachmentsOf(session, content, structured, maxResultBytes - Buffer.byteLength(text), maxResultBytes);
}

/**
 * `ears mcp`'s sandbox: required unless `--no-sandbox` (issue 28 item 5). A client's model writes the
 * bodies and nobody reads a note on ears' stderr, so "auto" falling back to an unconfined run is no
 * option here: without a sandbox each body is refused (SandboxUnavailable) instead.
 */
export function mcpSandboxOf(setting: SandboxSetting | undefined): SandboxSetting {
  return setting === undefined || setting === "auto" ? true : setting;
}

/** The line every tool result of `ears mcp --no-sandbox` ends with: the model and its user see it, not only ears' stderr. */
export const UNCONFINED_NOTICE =
  "Note: ears mcp runs bodies without a sandbox (--no-sandbox): this body ran with the rights of the user who started ears.";

/** `--pool <n>`: runners kept started ahead, default {@link DEFAULT_POOL_SIZE}; 0 starts one per body instead. */
export function poolSizeOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_POOL_SIZE;
  const size = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!(Number.isSafeInteger(size) && size <= MAX_POOL_SIZE)) {
    throw new UsageError(`--pool takes a whole number from 0 (no pool) to ${MAX_POOL_SIZE}, got ${JSON.stringify(text)}`);
  }
  return size;
}

/** `--max-result <size>`: the largest result passed on, default {@link MCP_MAX_RESULT_BYTES}, at most what a message may carry. */
export function maxResultOf(text: string | undefined): number {
  const bytes = parseSize("max-result", text) ?? MCP_MAX_RESULT_BYTES;
  if (bytes > MAX_SEND_BYTES / 2) {
    throw new UsageError(
      `--max-result is at most ${MAX_SEND_BYTES / 2 / 1024 / 1024}M ` +
        "(a result must fit, with its escaping, in one message an MCP client reads), " +
        `got ${JSON.stringify(text)}`,
    );
  }
  return bytes;
}

/**
 * A run's report as a tool result: one text, the outcome (its content, then `structured` as JSON, then
 * the logs) or the run's failure, with `isError` unless it succeeded. The value is sent once: no
 * `structuredContent` repeating it (a 6 MB result went out as 18 MB that way, and the client hung up).
 * `structured` is pretty-printed when that keeps it small, else sent compact.
 */
export function toolResult(report: RunReport, notice?: string): { content: { type: "text"; text: string }[]; isError: boolean } {
  // Control characters reach the client as \uXXXX (in the JSON parts, the token's too, that is JSON's own escape).
  const result = rawToolResult(report, notice);
  return { ...result, content: result.content.map((part) => ({ ...part, text: escapeControls(part.text) })) };
}

function rawToolResult(report: RunReport, notice?: string): { content: { type: "text"; text: string }[]; isError: boolean } {
  const logs = logText(report) + (notice === undefined ? "" : `\n\n${notice}`);
  if (report.failure !== undefined) {
    const { code, message } = report.failure;
    return { content: [{ type: "text", text: `${code}: ${message}${logs}` }], isError: true };
  }
  // The token ends a paused result, so that it can be taken from "Token:" to the end: logs and the note go first.
  if (report.paused !== undefined)
    return {
      content: [{ type: "text", text: `${logs.slice(2)}${logs === "" ? "" : "\n\n"}${pausedText(report.paused)}` }],
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

/** `--fetch-allow`'s origins as fetch compares them (`https://api.github.com/` -> `https://api.github.com`). */
function originsOf(allow: readonly string[] | undefined): string[] {
  return (allow ?? []).map((origin) => (URL.canParse(origin) ? new URL(origin).origin : origin));
}

async function loadServerSdk() {
  try {
    const [server, types] = await Promise.all([
      import("@modelcontextprotocol/sdk/server/index.js"),
      import("@modelcontextprotocol/sdk/types.js"),
    ]);
    return {
      Server: server.Server,
      ListToolsRequestSchema: types.ListToolsRequestSchema,
      JSONRPCMessageSchema: types.JSONRPCMessageSchema,
      CallToolRequestSchema: types.CallToolRequestSchema,
      ListResourcesRequestSchema: types.ListResourcesRequestSchema,
      ReadResourceRequestSchema: types.ReadResourceRequestSchema,
    };
  } catch (error) {
    if (isMissingMcpSdk(error)) throw new UsageError(missingMcpSdk(error).message);
    throw error;
  }
}
