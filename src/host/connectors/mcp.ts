/**
 * MCP servers as capabilities: connects to the servers of an `mcpServers` configuration (the format MCP
 * clients share), lists their tools, and gives back one capability per tool, named `<server>.<tool>`,
 * with a contract built from each tool's JSON Schemas. The MCP SDK (`@modelcontextprotocol/sdk`, an
 * optional peer dependency) is loaded only here, on the first connection.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Capabilities, CapabilityContext, CapabilitySpec, Contract } from "../../contract/contract.js";
import { defineCapabilities } from "../../contract/contract.js";
import { jsonSchema } from "../../contract/json-schema.js";
import { describeError } from "../../protocol/errors.js";
import { escapeUnsafeText } from "../../protocol/text.js";
import type { Json } from "../../protocol/json.js";
import { FailureCode, Outcome } from "../../protocol/outcome.js";
import { MissingPeerError } from "../code/compile.js";

/**
 * One server of an `mcpServers` configuration: a command to start (stdio), or a URL (Streamable HTTP),
 * with the tools a body may call ({@link McpToolFilter}).
 */
export type McpServerConfig = (
  { command: string; args?: string[]; env?: Record<string, string>; cwd?: string } | { url: string; headers?: Record<string, string> }
) &
  McpToolFilter;

/**
 * Which of a server's tools become capabilities (ears' own fields; MCP clients ignore them). A tool left
 * out is neither declared nor callable: a body's call is refused by the host and never reaches the
 * server. A name the server does not have is refused when connecting (a typo must not leave a tool in).
 */
export interface McpToolFilter {
  /** Only these tools (by the server's names). Default: all of them. */
  allowTools?: string[];
  /** Not these tools, e.g. server-everything's `get-env`, which hands a body the server's environment. */
  denyTools?: string[];
}

/** The configuration format MCP clients share (Claude Desktop, Cursor, ...): servers by name. */
export interface McpConfig {
  mcpServers: Record<string, McpServerConfig>;
}

/** Options of {@link connectMcpServers}. */
export interface McpConnectOptions {
  /**
   * Where images and other binary content of tool results are saved (created if missing, kept on
   * close: it is yours). Default: a fresh private directory under the OS temporary directory, removed
   * by `close()`.
   */
  filesDir?: string;
  /** Receives each line a stdio server writes on stderr. Default: the host's stderr, as `[mcp <server>] <line>`. */
  onServerStderr?: (server: string, line: string) => void;
  /** Deadline of connecting to one server and listing its tools, in milliseconds. Default 30 000. */
  connectTimeoutMs?: number;
  /** Deadline of one tool call, in milliseconds (the MCP SDK's request timeout). Default 60 000. */
  toolTimeoutMs?: number;
}

/**
 * The specs of an MCP connection's contract: its tools are known at run time only, each named
 * `<server>.<tool>`, so the type holds the pattern of their names (a name a body may call, with any JSON
 * arguments and an `Outcome` back), not the names themselves.
 */
export type McpSpecs<Server extends string = string> = { readonly [Name in `${Server}.${string}`]: CapabilitySpec };

/**
 * What {@link connectMcpServers} gives back: the servers' tools as capabilities, their contract, and `close`.
 * `Server` is the configuration's server names, when its type spells them out.
 */
export interface McpConnection<Server extends string = string> {
  /** One handler per tool, named `<server>.<tool>`: pass them to `runCode`/`runGuest` as `capabilities`. */
  readonly capabilities: Capabilities;
  /** The tools' contract, from their `inputSchema` and `outputSchema`: `declarations()` and `typecheck: true` use it. */
  readonly contract: Contract<McpSpecs<Server>>;
  /** The directory tool results' files are saved in. */
  readonly filesDir: string;
  /** Closes every connection (a stdio server's stdin is closed, then SIGTERM, then SIGKILL) and removes a default `filesDir`. */
  close(): Promise<void>;
}

/** The failure code of a tool's own error (`isError: true`): the content is the server's text. */
export const McpFailureCode = { ToolError: "ToolError" } as const;

type Sdk = {
  Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
  StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
  StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
};
type Client = InstanceType<Sdk["Client"]>;

/** Loads the MCP SDK, or says what to install. */
async function loadMcpSdk(): Promise<Sdk> {
  try {
    const [client, stdio, http] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/stdio.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    ]);
    return {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    };
  } catch (error) {
    if (isMissingMcpSdk(error)) throw missingMcpSdk(error);
    throw error;
  }
}

/** True when `error` is Node's failure to find the MCP SDK package. */
export function isMissingMcpSdk(error: unknown): boolean {
  return (
    (error as NodeJS.ErrnoException)?.code === "ERR_MODULE_NOT_FOUND" &&
    String((error as Error).message).includes("@modelcontextprotocol/sdk")
  );
}

/** The error that says to install the MCP SDK (the one wording for the connectors and `ears mcp`). */
export function missingMcpSdk(cause: unknown): MissingPeerError {
  return new MissingPeerError(
    "MCP connectors and ears mcp need @modelcontextprotocol/sdk, an optional peer dependency that is not installed: " +
      "npm install @modelcontextprotocol/sdk",
    { cause },
  );
}

/**
 * Checks an `mcpServers` configuration and returns it. Throws a TypeError naming the first mistake:
 * not an object, no `mcpServers`, a server name that is empty or holds a "." (it would make
 * `<server>.<tool>` ambiguous), a server with neither or both of `command` and `url`, or a field of
 * the wrong type.
 */
export function mcpConfig(value: unknown): McpConfig {
  const where = "MCP configuration";
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new TypeError(`${where}: expected an object { "mcpServers": { ... } }`);
  const servers = (value as { mcpServers?: unknown }).mcpServers;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    throw new TypeError(`${where}: "mcpServers" must be an object of servers by name`);
  }
  for (const [name, server] of Object.entries(servers)) {
    const at = `${where}: server ${JSON.stringify(name)}`;
    if (name === "" || name.includes("."))
      throw new TypeError(`${at}: a server name must be non-empty and hold no "." (tools are named <server>.<tool>)`);
    if (typeof server !== "object" || server === null || Array.isArray(server)) throw new TypeError(`${at} must be an object`);
    const { command, url, args, env, headers, cwd, allowTools, denyTools } = server as Record<string, unknown>;
    if ((command === undefined) === (url === undefined))
      throw new TypeError(`${at} needs exactly one of "command" (stdio) and "url" (Streamable HTTP)`);
    if (command !== undefined && (typeof command !== "string" || command === ""))
      throw new TypeError(`${at}: "command" must be a non-empty string`);
    if (url !== undefined) {
      if (typeof url !== "string" || !/^https?:\/\//.test(url) || !URL.canParse(url))
        throw new TypeError(`${at}: "url" must be an http(s) URL`);
    }
    if (args !== undefined && !(Array.isArray(args) && args.every((arg) => typeof arg === "string"))) {
      throw new TypeError(`${at}: "args" must be an array of strings`);
    }
    if (cwd !== undefined && typeof cwd !== "string") throw new TypeError(`${at}: "cwd" must be a string`);
    for (const [field, list] of [
      ["allowTools", allowTools],
      ["denyTools", denyTools],
    ] as const) {
      if (list !== undefined && !(Array.isArray(list) && list.every((tool) => typeof tool === "string" && tool !== ""))) {
        throw new TypeError(`${at}: "${field}" must be an array of tool names`);
      }
    }
    for (const [field, map] of [
      ["env", env],
      ["headers", headers],
    ] as const) {
      if (map === undefined) continue;
      if (typeof map !== "object" || map === null || Array.isArray(map) || !Object.values(map).every((v) => typeof v === "string")) {
        throw new TypeError(`${at}: "${field}" must be an object of strings`);
      }
    }
  }
  return value as McpConfig;
}

/** Reads and checks an `mcpServers` configuration file (JSON). Throws an Error naming the file. */
export function readMcpConfig(path: string): McpConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8").replace(/^\uFEFF/, "");
  } catch (error) {
    throw new Error(`cannot read the MCP configuration ${path}: ${describeError(error)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`the MCP configuration ${path} is not JSON: ${describeError(error)}`);
  }
  try {
    return mcpConfig(value);
  } catch (error) {
    throw new Error(`${path}: ${(error as Error).message}`);
  }
}

/**
 * Starts (stdio) or connects to (Streamable HTTP) every server of `config`, lists their tools and
 * gives back their capabilities and contract. A tool call forwards the arguments unchanged (a call
 * without arguments sends `{}`); its `structuredContent` becomes the outcome's `structured`, its text
 * the `content`; `isError` becomes a `ToolError` failure with the server's text. Images and other
 * binary content are saved to files in `filesDir`, named in `content` and listed in
 * `structured.images` / `structured.files` (when the tool sent no `structuredContent`). A stdio
 * server's stderr goes to `onServerStderr`, never to a guest. When one server cannot be reached, the
 * others are closed and the promise rejects naming it. Throws a `MissingPeerError` when the MCP SDK is
 * not installed.
 */
export async function connectMcpServers<const Server extends string = string>(
  config: McpConfig & { mcpServers: Record<Server, McpServerConfig> },
  options: McpConnectOptions = {},
): Promise<McpConnection<Server>> {
  const servers = Object.entries(mcpConfig(config).mcpServers);
  const sdk = await loadMcpSdk();
  const ownDir = options.filesDir === undefined;
  const filesDir = options.filesDir ?? mkdtempSync(join(tmpdir(), "ears-mcp-"));
  if (!ownDir) mkdirSync(filesDir, { recursive: true, mode: 0o700 });
  const onStderr = options.onServerStderr ?? ((server, line) => process.stderr.write(`[mcp ${server}] ${line}\n`));
  const clients: Client[] = [];
  const close = async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
    if (ownDir) rmSync(filesDir, { recursive: true, force: true });
  };
  const specs: Record<string, CapabilitySpec> = {};
  const capabilities: Capabilities = Object.create(null);
  const files = new FileSaver(filesDir);
  try {
    for (const [server, settings] of servers) {
      const client = new sdk.Client({ name: "ears", version: "1" });
      clients.push(client);
      const transport = transportOf(sdk, server, settings, onStderr);
      const timeout = options.connectTimeoutMs ?? 30_000;
      try {
        await client.connect(transport, { timeout });
        for (const tool of filterTools(server, settings, await listTools(client, timeout))) {
          const name = `${server}.${tool.name}`;
          specs[name] = {
            ...(tool.description === undefined ? {} : { description: tool.description }),
            arguments: jsonSchema(tool.inputSchema as Record<string, unknown>),
            ...(tool.outputSchema === undefined ? {} : { structured: jsonSchema(tool.outputSchema as Record<string, unknown>) }),
          };
          capabilities[name] = (args, ctx) => callTool(client, server, tool.name, args, ctx, files, options.toolTimeoutMs);
        }
      } catch (error) {
        throw new Error(`MCP server ${JSON.stringify(server)} could not be reached: ${describeError(error)}`, { cause: error });
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { capabilities, contract: defineCapabilities(specs as McpSpecs<Server>), filesDir, close };
}

function transportOf(sdk: Sdk, server: string, settings: McpServerConfig, onStderr: (server: string, line: string) => void) {
  if ("url" in settings) {
    return new sdk.StreamableHTTPClientTransport(new URL(settings.url), { requestInit: { headers: { ...settings.headers } } });
  }
  const transport = new sdk.StdioClientTransport({
    command: settings.command,
    args: settings.args ?? [],
    ...(settings.env === undefined ? {} : { env: settings.env }),
    ...(settings.cwd === undefined ? {} : { cwd: settings.cwd }),
    stderr: "pipe",
  });
  let pending = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    const lines = (pending + chunk.toString("utf8")).split("\n");
    pending = lines.pop()!;
    for (const line of lines) onStderr(server, line);
  });
  transport.stderr?.on("end", () => {
    if (pending !== "") onStderr(server, pending);
    pending = "";
  });
  return transport;
}

/** The tools `allowTools` and `denyTools` leave; throws naming a listed tool the server does not have. */
function filterTools<Tool extends { name: string }>(server: string, { allowTools, denyTools }: McpToolFilter, tools: Tool[]): Tool[] {
  const names = new Set(tools.map((tool) => tool.name));
  for (const [field, list] of [
    ["allowTools", allowTools],
    ["denyTools", denyTools],
  ] as const) {
    const unknown = (list ?? []).filter((name) => !names.has(name));
    if (unknown.length > 0) {
      throw new Error(
        `"${field}" names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which server ${JSON.stringify(server)} ` +
          `does not have (its tools: ${[...names].map((name) => escapeUnsafeText(name)).join(", ")})`,
      );
    }
  }
  return tools.filter((tool) => (allowTools === undefined || allowTools.includes(tool.name)) && !(denyTools ?? []).includes(tool.name));
}

async function listTools(client: Client, timeout: number) {
  const tools = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

async function callTool(
  client: Client,
  server: string,
  tool: string,
  args: Json,
  ctx: CapabilityContext,
  files: FileSaver,
  timeout: number | undefined,
): Promise<Outcome> {
  if (args !== null && (typeof args !== "object" || Array.isArray(args))) {
    return Outcome.failure(
      FailureCode.InvalidArguments,
      `the arguments of MCP tool ${JSON.stringify(tool)} on server ${JSON.stringify(server)} must be an object; nothing was sent`,
    );
  }
  const result = await client.callTool({ name: tool, arguments: args ?? {} }, undefined, {
    signal: ctx.signal,
    ...(timeout === undefined ? {} : { timeout }),
  });
  const lines: string[] = [];
  const images: string[] = [];
  const saved: string[] = [];
  for (const item of (result.content ?? []) as ContentItem[]) {
    lines.push(files.describe(item, `${server}.${tool}`, images, saved));
  }
  const content = lines.join("\n");
  let structured = result.structuredContent as Json | undefined;
  if (structured === undefined && (images.length > 0 || saved.length > 0)) {
    structured = { ...(images.length > 0 ? { images } : {}), ...(saved.length > 0 ? { files: saved } : {}) };
  }
  if (result.isError === true) return Outcome.failure(McpFailureCode.ToolError, content, ...(structured === undefined ? [] : [structured]));
  return structured === undefined ? Outcome.success(content) : Outcome.success(content, structured);
}

type ContentItem =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string }
  | { type: string };

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "audio/wav": "wav",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
};

/** Saves binary content to files (mode 0600) with names no tool can steer, and says where. */
class FileSaver {
  private count = 0;
  // Per connection, so two connections sharing a caller's filesDir never pick the same name.
  private readonly prefix = randomBytes(4).toString("hex");
  constructor(private readonly dir: string) {}

  /** The line of `content` for one content item; saves it first when it is binary. */
  describe(item: ContentItem, label: string, images: string[], saved: string[]): string {
    switch (item.type) {
      case "text":
        return (item as { text: string }).text;
      case "image":
      case "audio": {
        const { data, mimeType } = item as { data: string; mimeType: string };
        const path = this.save(data, mimeType, label);
        (item.type === "image" ? images : saved).push(path.path);
        return `[${item.type} saved to ${path.path} (${mimeType}, ${path.bytes} bytes)]`;
      }
      case "resource": {
        const { resource } = item as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } };
        if (typeof resource.text === "string") return `[resource ${resource.uri}]\n${resource.text}`;
        const mimeType = resource.mimeType ?? "application/octet-stream";
        const path = this.save(resource.blob ?? "", mimeType, label);
        (mimeType.startsWith("image/") ? images : saved).push(path.path);
        return `[resource ${resource.uri} saved to ${path.path} (${mimeType}, ${path.bytes} bytes)]`;
      }
      case "resource_link": {
        const link = item as { uri: string; name?: string };
        return `[resource link ${link.uri}${link.name === undefined ? "" : ` (${link.name})`}]`;
      }
      default:
        return `[${String(item.type).slice(0, 40)} content, not shown]`;
    }
  }

  private save(base64: string, mimeType: string, label: string): { path: string; bytes: number } {
    const bytes = Buffer.from(base64, "base64");
    // The name comes from a counter and the capability's name cleaned to safe characters: a server's
    // text never chooses a path.
    const safe = label.replace(/[^\w.-]/g, "_").slice(0, 80);
    const path = join(this.dir, `${safe}-${this.prefix}-${++this.count}.${EXTENSIONS[mimeType] ?? "bin"}`);
    writeFileSync(path, bytes, { mode: 0o600, flag: "wx" });
    return { path, bytes: bytes.length };
  }
}
