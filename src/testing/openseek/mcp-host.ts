// The MCP host double: a catalog of servers and tools, and tool calls answered by their handlers.
import { isObject } from "../../openseek/catalog.js";
import { startOpenSeekHost, type OpenSeekHostDouble, type OpenSeekHostOptions } from "./loopback-host.js";
import { hostReplies, toHostReply, type OpenSeekToolHandler } from "./replies.js";

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
        if (page < 0 || page * pageSize > items.length)
          return hostReplies.result(`MCP list: unknown cursor ${JSON.stringify(cursor)}`, { isError: true });
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
