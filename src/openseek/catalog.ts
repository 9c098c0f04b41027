/**
 * The MCP host's catalog of servers and tools, built from the `items` of its list replies. Pure: the
 * download loop (catalog-download.ts) feeds it one reply's `data` at a time.
 */
import type { Json } from "../protocol/json.js";
import { SearchError } from "./search-error.js";

/** A tool of an MCP server, with the raw JSON Schemas its server declared. */
export interface McpTool {
  /** The server's name, as `mcp.call` takes it. */
  server: string;
  /** The tool's own name on its server. */
  name: string;
  description: string;
  /** JSON Schema of the tool's arguments. */
  inputSchema: Json;
  /** JSON Schema of the result's `data`, when the server declared one. */
  outputSchema?: Json;
}

/** A server of the catalog. A server with an `error` is unavailable and has no tools. */
export interface McpServer {
  name: string;
  instructions?: string;
  error?: string;
}

/** Every server and tool the MCP host listed, in configuration order. */
export interface Catalog {
  servers: McpServer[];
  tools: McpTool[];
}

/** One list reply's `data`: its items and the cursor of the next reply (absent or null ends the listing). */
export interface CatalogPage {
  items: unknown[];
  nextCursor?: string;
}

/** Checks one list reply's `data` (`{"items":[...],"next_cursor"?}`). Throws {@link SearchError} when malformed. */
export function parseCatalogPage(data: unknown): CatalogPage {
  if (!isObject(data)) throw malformed(`its data is ${describe(data)}, not an object with "items"`);
  const items = data["items"];
  if (!Array.isArray(items)) throw malformed(`"items" is ${describe(items)}, not an array`);
  const cursor = data["next_cursor"];
  if (cursor === undefined || cursor === null) return { items };
  if (typeof cursor !== "string") throw malformed(`"next_cursor" is ${describe(cursor)}, not a string`);
  return { items, nextCursor: cursor };
}

/** Accumulates items over the list replies; a tool must follow its (available) server's item. */
export class CatalogBuilder {
  private readonly servers: McpServer[] = [];
  private readonly byName = new Map<string, McpServer>();
  private readonly tools: McpTool[] = [];

  /** Adds the items of one reply, in order. Throws {@link SearchError} on a malformed item. */
  add(items: readonly unknown[]): void {
    for (const item of items) {
      if (!isObject(item)) throw malformed(`an item is ${describe(item)}, not an object`);
      if ("tool" in item) this.addTool(item);
      else this.addServer(item);
    }
  }

  /**
   * The catalog so far, frozen: it is cached for the process and searches cache each tool's words, so
   * nothing may change it (pages hand out copies).
   */
  build(): Catalog {
    return deepFreeze({ servers: [...this.servers], tools: [...this.tools] });
  }

  private addServer(item: Record<string, unknown>): void {
    const name = item["server"];
    if (typeof name !== "string") throw malformed(`a server item's "server" is ${describe(name)}, not a string`);
    if (this.byName.has(name)) throw malformed(`server ${JSON.stringify(name)} is listed twice`);
    const server: McpServer = { name };
    const instructions = optionalString(item, "instructions", `server ${JSON.stringify(name)}`);
    const error = optionalString(item, "error", `server ${JSON.stringify(name)}`);
    if (instructions !== undefined) server.instructions = instructions;
    if (error !== undefined) server.error = error;
    this.servers.push(server);
    this.byName.set(name, server);
  }

  private addTool(item: Record<string, unknown>): void {
    const serverName = item["server"];
    if (typeof serverName !== "string") throw malformed(`a tool item's "server" is ${describe(serverName)}, not a string`);
    const server = this.byName.get(serverName);
    if (server === undefined) throw malformed(`a tool of server ${JSON.stringify(serverName)} comes before that server's item`);
    if (server.error !== undefined) throw malformed(`unavailable server ${JSON.stringify(serverName)} lists tools`);
    const tool = item["tool"];
    if (!isObject(tool)) throw malformed(`a tool of server ${JSON.stringify(serverName)} is ${describe(tool)}, not an object`);
    const name = tool["name"];
    if (typeof name !== "string")
      throw malformed(`a tool of server ${JSON.stringify(serverName)} has a "name" that is ${describe(name)}, not a string`);
    const where = `tool ${JSON.stringify(name)} of server ${JSON.stringify(serverName)}`;
    const inputSchema = tool["input_schema"];
    if (!isObject(inputSchema))
      throw malformed(`${where} has an "input_schema" that is ${describe(inputSchema)}, not a JSON Schema object`);
    const record: McpTool = {
      server: serverName,
      name,
      description: optionalString(tool, "description", where) ?? "",
      inputSchema: inputSchema as Json,
    };
    const outputSchema = tool["output_schema"];
    if (outputSchema !== undefined && outputSchema !== null) {
      if (!isObject(outputSchema))
        throw malformed(`${where} has an "output_schema" that is ${describe(outputSchema)}, not a JSON Schema object`);
      record.outputSchema = outputSchema as Json;
    }
    this.tools.push(record);
  }
}

function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== "object" || node === null || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const child of Object.values(node)) pending.push(child);
  }
  return value;
}

function optionalString(object: Record<string, unknown>, key: string, where: string): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw malformed(`${where} has a "${key}" that is ${describe(value)}, not a string`);
  return value;
}

function malformed(reason: string): SearchError {
  return new SearchError(`MCP catalog could not be downloaded: the host's listing is malformed: ${reason}`);
}

/** A plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A short description of a JSON value for messages. */
export function describe(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  return `${typeof value} ${String(value)}`;
}
