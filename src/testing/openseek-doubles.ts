/**
 * Loopback HTTP doubles of OpenSeek hosts, for testing scripts that use `@posoco/ears/openseek` the way
 * the upstream SDK tests do: a real `node:http` server on 127.0.0.1 that records every request and
 * answers with scripted replies.
 *
 * ```ts
 * const host = await startPtcHost({ tools: { edit: () => ({ content: "applied", data: { outcome: "applied" } }) } });
 * const restore = host.install(); // sets OPENSEEK_PTC
 * try {
 *   const result = await call("edit", { path: "a.txt", old_string: "a", new_string: "b", start_line: 1 });
 *   // host.requests[0].body is {"version":1,"name":"edit","arguments":{...}}
 * } finally {
 *   restore();
 *   await host.close();
 * }
 * ```
 */
import { isObject } from "../openseek/catalog.js";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One request the double received, recorded once its body was read. */
export interface RecordedHttpRequest {
  method: string;
  /** The request target, e.g. `/call`. */
  path: string;
  /** Which connection carried it: 1 for the double's first connection, 2 for the next, ... */
  connection: number;
  /** Header names are lower-cased (Node's parsing); `rawHeaders` keeps names and order as sent. */
  headers: IncomingHttpHeaders;
  /** Alternating names and values exactly as sent, so duplicates and case can be checked. */
  rawHeaders: string[];
  /** The body as text (UTF-8). */
  rawBody: string;
  /** The body parsed as JSON, or `undefined` when it was not JSON. */
  body: unknown;
}

/** A reply the double sends for one request. Build them with {@link hostReplies}. */
export type OpenSeekReply =
  | {
      type: "json";
      /** Sent as `JSON.stringify(value)`. */
      value: unknown;
      status?: number;
      delayMs?: number;
    }
  | {
      type: "raw";
      body: string | Uint8Array;
      status?: number;
      contentType?: string;
      delayMs?: number;
    }
  /** Never answers; the connection stays open until the client gives up or the double closes. */
  | { type: "hang" }
  /** Destroys the connection without answering. */
  | { type: "drop"; delayMs?: number }
  /**
   * Sends HTTP 200 headers promising more bytes than `body`, then `body`, then hangs or drops the
   * connection: a reply that never completes.
   */
  | { type: "partial"; body: string; then: "hang" | "drop"; delayMs?: number };

/** Computes the reply for a recorded request (it may be async, e.g. to wait for a test's signal). */
export type OpenSeekResponder = (request: RecordedHttpRequest) => OpenSeekReply | Promise<OpenSeekReply>;

/** What a tool handler of {@link startPtcHost} or {@link startMcpHost} returns: a result, or any raw {@link OpenSeekReply}. */
export type OpenSeekToolReply =
  | {
      content: string;
      isError?: boolean;
      /** Sent as `data` when present (`null` included). */
      data?: unknown;
      /** MCP only: paths of images the host saved. */
      images?: string[];
    }
  | OpenSeekReply;

/** A tool handler: the request's `arguments` (as sent) and the whole recorded request. */
export type OpenSeekToolHandler = (args: unknown, request: RecordedHttpRequest) => OpenSeekToolReply | Promise<OpenSeekToolReply>;

/** Builders for {@link OpenSeekReply}. */
export const hostReplies = {
  /**
   * A v1 result envelope `{"version":1,"content","is_error","data"?,"images"?}` with HTTP 200. `data` is
   * sent only when the key is present in `options` (so `data: null` is sent as null).
   */
  result(content: string, options: { isError?: boolean; data?: unknown; images?: string[]; delayMs?: number } = {}): OpenSeekReply {
    const envelope: Record<string, unknown> = { version: 1, content, is_error: options.isError ?? false };
    if ("data" in options) envelope["data"] = options.data;
    if (options.images !== undefined) envelope["images"] = options.images;
    return withDelay({ type: "json", value: envelope }, options.delayMs);
  },
  /** Any JSON value as the body (e.g. a wrong envelope), with HTTP 200 unless `status` says otherwise. */
  json(value: unknown, options: { status?: number; delayMs?: number } = {}): OpenSeekReply {
    return withDelay({ type: "json", value, ...(options.status === undefined ? {} : { status: options.status }) }, options.delayMs);
  },
  /** A status code with an optional body, e.g. `hostReplies.status(503)`. */
  status(status: number, body: string = ""): OpenSeekReply {
    return { type: "raw", status, body };
  },
  /** A body sent verbatim (malformed JSON, invalid UTF-8 bytes, ...), HTTP 200 unless `status` says otherwise. */
  raw(body: string | Uint8Array, options: { status?: number; contentType?: string; delayMs?: number } = {}): OpenSeekReply {
    const reply: OpenSeekReply = { type: "raw", body };
    if (options.status !== undefined) reply.status = options.status;
    if (options.contentType !== undefined) reply.contentType = options.contentType;
    return withDelay(reply, options.delayMs);
  },
  /** Never answers. */
  hang(): OpenSeekReply {
    return { type: "hang" };
  },
  /** Closes the connection without answering (after `delayMs`, if given). */
  drop(delayMs?: number): OpenSeekReply {
    return delayMs === undefined ? { type: "drop" } : { type: "drop", delayMs };
  },
  /** The start of a reply (`body`), after which the double hangs or drops the connection. */
  partial(body: string, then: "hang" | "drop" = "hang"): OpenSeekReply {
    return { type: "partial", body, then };
  },
  /** `reply` sent after `delayMs` milliseconds. */
  delayed(delayMs: number, reply: OpenSeekReply): OpenSeekReply {
    return reply.type === "hang" ? reply : { ...reply, delayMs };
  },
  /** An MCP list reply: `data` is `{"items":[...],"next_cursor"?}` (`nextCursor: null` is sent as null). */
  catalogPage(items: unknown[], nextCursor?: string | null): OpenSeekReply {
    const data: Record<string, unknown> = { items };
    if (nextCursor !== undefined) data["next_cursor"] = nextCursor;
    return hostReplies.result("", { data });
  },
};

function withDelay(reply: OpenSeekReply, delayMs: number | undefined): OpenSeekReply {
  return delayMs === undefined || reply.type === "hang" ? reply : { ...reply, delayMs };
}

/** Options of {@link startOpenSeekHost}. */
export interface OpenSeekHostOptions {
  /** The environment variable {@link OpenSeekHostDouble.install} sets. Default `OPENSEEK_PTC`. */
  variable?: string;
  /** Bearer token the double accepts. Default: 64 random hex characters, like a real host. */
  token?: string;
  /** Request path in the capability's URL. Default `/call`. */
  path?: string;
  /** Sent as `approval_tools` in {@link OpenSeekHostDouble.capability} when given. */
  approvalTools?: string[];
  /** Replies to requests that no {@link OpenSeekHostDouble.enqueue}d reply is waiting for. Default: HTTP 500. */
  respond?: OpenSeekResponder;
  /**
   * Like a real host, refuse with HTTP 403 (empty body) a request whose `Authorization` is not exactly
   * `Bearer <token>` or that carries an `Origin`, and answer a wrong method or path with 404. Default true.
   */
  authenticate?: boolean;
}

/** A running loopback host double. Close it when done. */
export interface OpenSeekHostDouble {
  /** The capability URL, `http://127.0.0.1:<port><path>`. */
  readonly url: string;
  readonly token: string;
  /** The variable {@link install} sets. */
  readonly variable: string;
  /** Every request received, in arrival order (appended once its body was read). */
  readonly requests: RecordedHttpRequest[];
  /**
   * The capability JSON for the environment variable: `{"version":1,"url","token","approval_tools"?}`.
   * `overrides` replace or add keys (e.g. `{ version: 2 }`) for tests of invalid handoffs.
   */
  capability(overrides?: Record<string, unknown>): string;
  /** Sets `env[variable]` to {@link capability} and returns a function that restores the previous value. */
  install(env?: NodeJS.ProcessEnv): () => void;
  /** Queues replies (or responders) for the next requests, in order, ahead of the default responder. */
  enqueue(...replies: (OpenSeekReply | OpenSeekResponder)[]): void;
  /** Replaces the default responder. */
  respondWith(responder: OpenSeekResponder): void;
  /** Stops listening, ends every open connection (hanging ones included) and cancels delayed replies. */
  close(): Promise<void>;
}

/** Starts a generic double on 127.0.0.1 with an ephemeral port. */
export async function startOpenSeekHost(options: OpenSeekHostOptions = {}): Promise<OpenSeekHostDouble> {
  const token = options.token ?? randomBytes(32).toString("hex");
  const path = options.path ?? "/call";
  const variable = options.variable ?? "OPENSEEK_PTC";
  const authenticate = options.authenticate ?? true;
  const requests: RecordedHttpRequest[] = [];
  const queue: (OpenSeekReply | OpenSeekResponder)[] = [];
  const sockets = new Set<Socket>();
  const connectionIds = new WeakMap<Socket, number>();
  let connectionCount = 0;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let responder: OpenSeekResponder = options.respond ?? (() => hostReplies.status(500, "the host double has no reply for this request"));

  const send = (response: ServerResponse, reply: OpenSeekReply) => {
    const deliver = () => {
      if (response.destroyed) return;
      switch (reply.type) {
        case "hang":
          return;
        case "drop":
          response.socket?.destroy();
          return;
        case "json": {
          const body = Buffer.from(JSON.stringify(reply.value) ?? "", "utf8");
          response.writeHead(reply.status ?? 200, { "Content-Type": "application/json", "Content-Length": body.length });
          response.end(body);
          return;
        }
        case "raw": {
          const body = typeof reply.body === "string" ? Buffer.from(reply.body, "utf8") : Buffer.from(reply.body);
          response.writeHead(reply.status ?? 200, {
            "Content-Type": reply.contentType ?? "application/json",
            "Content-Length": body.length,
          });
          response.end(body);
          return;
        }
        case "partial": {
          const body = Buffer.from(reply.body, "utf8");
          response.writeHead(200, { "Content-Type": "application/json", "Content-Length": body.length + 1024 });
          response.write(body);
          if (reply.then === "drop") response.socket?.destroy();
        }
      }
    };
    const delayMs = reply.type === "hang" ? undefined : reply.delayMs;
    if (delayMs === undefined) {
      deliver();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      deliver();
    }, delayMs);
    timers.add(timer);
  };

  const handle = async (message: IncomingMessage, response: ServerResponse, rawBody: Buffer) => {
    const text = rawBody.toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const recorded: RecordedHttpRequest = {
      method: message.method ?? "",
      path: message.url ?? "",
      connection: connectionIds.get(message.socket) ?? 0,
      headers: message.headers,
      rawHeaders: message.rawHeaders,
      rawBody: text,
      body,
    };
    requests.push(recorded);
    if (authenticate) {
      if (message.method !== "POST" || message.url !== path) return send(response, hostReplies.status(404));
      if (message.headers.authorization !== `Bearer ${token}` || message.headers.origin !== undefined) {
        return send(response, hostReplies.status(403));
      }
    }
    const next = queue.shift() ?? responder;
    let reply: OpenSeekReply;
    try {
      reply = typeof next === "function" ? await next(recorded) : next;
    } catch (error) {
      reply = hostReplies.status(500, `the host double's responder failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    send(response, reply);
  };

  const server: Server = createServer((message, response) => {
    const chunks: Buffer[] = [];
    message.on("data", (chunk: Buffer) => chunks.push(chunk));
    message.on("end", () => void handle(message, response, Buffer.concat(chunks)));
  });
  server.on("connection", (socket) => {
    connectionIds.set(socket, ++connectionCount);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;

  const capability = (overrides: Record<string, unknown> = {}) => {
    const fields: Record<string, unknown> = { version: 1, url, token };
    if (options.approvalTools !== undefined) fields["approval_tools"] = options.approvalTools;
    return JSON.stringify({ ...fields, ...overrides });
  };

  return {
    url,
    token,
    variable,
    requests,
    capability,
    install(env: NodeJS.ProcessEnv = process.env) {
      const had = Object.prototype.hasOwnProperty.call(env, variable);
      const previous = env[variable];
      env[variable] = capability();
      return () => {
        if (had) env[variable] = previous;
        else delete env[variable];
      };
    },
    enqueue(...items) {
      queue.push(...items);
    },
    respondWith(next) {
      responder = next;
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

/** Options of {@link startPtcHost}. */
export interface PtcHostOptions extends Omit<OpenSeekHostOptions, "respond" | "variable"> {
  /** Tool handlers by name. A name without a handler gets the host's "PTC tool unavailable" error result. */
  tools?: Record<string, OpenSeekToolHandler>;
}

/**
 * Starts a double of the PTC host (`OPENSEEK_PTC`). It answers `{"version":1,"name","arguments"}` by
 * calling `tools[name]`; like the real host, an envelope it cannot read and an unknown tool are error
 * results (HTTP 200, `is_error: true`), not HTTP failures.
 */
export function startPtcHost(options: PtcHostOptions = {}): Promise<OpenSeekHostDouble> {
  const tools = options.tools ?? {};
  return startOpenSeekHost({
    ...options,
    variable: "OPENSEEK_PTC",
    respond: async (request) => {
      const body = request.body as Record<string, unknown> | undefined;
      if (!isObject(body) || body["version"] !== 1 || typeof body["name"] !== "string" || !("arguments" in body)) {
        return hostReplies.result("PTC requires version=1, name, and arguments", { isError: true });
      }
      const handler = Object.prototype.hasOwnProperty.call(tools, body["name"]) ? tools[body["name"]] : undefined;
      if (handler === undefined) return hostReplies.result(`PTC tool unavailable: ${body["name"]}`, { isError: true });
      return toHostReply(await handler(body["arguments"], request));
    },
  });
}

/** A tool of an MCP server double. */
export interface McpToolDouble {
  name: string;
  description?: string;
  /** Default `{"type":"object"}`. */
  inputSchema?: unknown;
  outputSchema?: unknown;
  /** Answers `mcp.call` for this tool. Default: an empty successful result. */
  handler?: OpenSeekToolHandler;
}

/** A server of an MCP host double. One with an `error` is unavailable and lists no tools. */
export interface McpServerDouble {
  name: string;
  instructions?: string;
  error?: string;
  tools?: McpToolDouble[];
}

/** Options of {@link startMcpHost}. */
export interface McpHostOptions extends Omit<OpenSeekHostOptions, "respond" | "variable" | "approvalTools"> {
  servers?: McpServerDouble[];
  /** Items per list reply; more items continue with `next_cursor`. Default: every item in one reply. */
  pageSize?: number;
}

/**
 * The catalog items an MCP host lists for `servers`: each server `{"server","instructions"?,"error"?}`
 * followed by its tools `{"server","tool":{"name","description","input_schema","output_schema"?}}`.
 */
export function mcpCatalogItems(servers: readonly McpServerDouble[]): unknown[] {
  const items: unknown[] = [];
  for (const server of servers) {
    const item: Record<string, unknown> = { server: server.name };
    if (server.instructions !== undefined) item["instructions"] = server.instructions;
    if (server.error !== undefined) item["error"] = server.error;
    items.push(item);
    for (const tool of server.tools ?? []) {
      const record: Record<string, unknown> = {
        name: tool.name,
        description: tool.description ?? "",
        input_schema: tool.inputSchema ?? { type: "object" },
      };
      if (tool.outputSchema !== undefined) record["output_schema"] = tool.outputSchema;
      items.push({ server: server.name, tool: record });
    }
  }
  return items;
}

/**
 * Starts a double of the MCP host (`OPENSEEK_MCP`). It lists the catalog of `servers` in replies of
 * `pageSize` items (cursors `"page-1"`, `"page-2"`, ...) and answers `{"version":1,"call":{...}}` with the
 * tool's handler; an unknown server or tool, or an envelope it cannot read, is an error result.
 */
export function startMcpHost(options: McpHostOptions = {}): Promise<OpenSeekHostDouble> {
  const servers = options.servers ?? [];
  const items = mcpCatalogItems(servers);
  const pageSize = options.pageSize ?? Math.max(items.length, 1);
  return startOpenSeekHost({
    ...options,
    variable: "OPENSEEK_MCP",
    respond: async (request) => {
      const body = request.body;
      if (!isObject(body) || body["version"] !== 1) return hostReplies.result("MCP requires version=1", { isError: true });
      const list = body["list"];
      if (isObject(list)) {
        const cursor = list["cursor"];
        const page = cursor === undefined ? 0 : typeof cursor === "string" && /^page-[1-9]\d*$/.test(cursor) ? Number(cursor.slice(5)) : -1;
        if (page < 0 || page * pageSize > items.length) return hostReplies.result(`MCP list: unknown cursor ${JSON.stringify(cursor)}`, { isError: true });
        const end = (page + 1) * pageSize;
        return hostReplies.catalogPage(items.slice(page * pageSize, end), end < items.length ? `page-${page + 1}` : undefined);
      }
      const call = body["call"];
      if (!isObject(call) || typeof call["server"] !== "string" || typeof call["tool"] !== "string") {
        return hostReplies.result("MCP requires a call {server, tool, arguments} or a list {cursor?}", { isError: true });
      }
      const server = servers.find((candidate) => candidate.name === call["server"]);
      const tool = server?.error === undefined ? server?.tools?.find((candidate) => candidate.name === call["tool"]) : undefined;
      if (tool === undefined) {
        return hostReplies.result(`MCP tool unavailable: ${call["server"]}/${call["tool"]}`, { isError: true });
      }
      if (tool.handler === undefined) return hostReplies.result("");
      return toHostReply(await tool.handler(call["arguments"], request));
    },
  });
}

function toHostReply(reply: OpenSeekToolReply): OpenSeekReply {
  if ("type" in reply) return reply;
  const options: { isError?: boolean; data?: unknown; images?: string[] } = {};
  if (reply.isError !== undefined) options.isError = reply.isError;
  if ("data" in reply) options.data = reply.data;
  if (reply.images !== undefined) options.images = reply.images;
  return hostReplies.result(reply.content, options);
}
