/**
 * `mcp.search(...)`: finds MCP tools in the host's catalog and returns one page of them, as text for the
 * model and as records for the script. Glue only: ranking, paging and rendering are their own modules.
 */
import type { Catalog, McpServer, McpTool } from "./catalog.js";
import { describe } from "./catalog.js";
import { loadCatalog } from "./catalog-download.js";
import { DEFAULT_LIMIT, paginate } from "./paging.js";
import type { ClientSettings } from "./ptc.js";
import { rankTools } from "./ranking.js";
import { renderEntry, renderHeading, renderPage, renderUnavailableServer } from "./render.js";
import { SearchError } from "./search-error.js";
import { tokenize } from "./tokens.js";

/** What to search for. Every field is optional; a blank string is the same as leaving it out. */
export interface SearchOptions {
  /** Words to rank tools by (BM25). Without it, tools come in catalog order. */
  query?: string;
  /** Only this server's tools (its exact name). */
  server?: string;
  /** Most tools on the page, an integer of at least 1 (default 8). */
  limit?: number;
  /** Index of the first match on the page, an integer from 0 to `total` (default 0). */
  offset?: number;
}

/** One page of search results. */
export interface SearchPage {
  /** The page rendered for a model: print it so the next model request sees the tools and schemas. */
  text: string;
  /** The page's tools with their raw JSON Schemas, for the script to pick from. */
  tools: McpTool[];
  /** How many tools match in all (over every page). */
  total: number;
  /** The `offset` of the next page; absent on the last page. */
  nextOffset?: number;
  /** The named server's instructions, on a server search's first page. */
  instructions?: string;
}

/** Search options after checking: blank strings removed, defaults filled in. */
export interface SearchRequest {
  query?: string;
  server?: string;
  limit: number;
  offset: number;
}

/** `mcp.search` with explicit settings. */
export async function searchWithSettings(options: SearchOptions | undefined, settings: ClientSettings): Promise<SearchPage> {
  const request = readOptions(options);
  const catalog = await loadCatalog(settings);
  return searchCatalog(catalog, request);
}

/** Runs a checked search over a downloaded catalog. Pure. */
export function searchCatalog(catalog: Catalog, request: SearchRequest): SearchPage {
  const { query, limit, offset } = request;
  let server: McpServer | undefined;
  if (request.server !== undefined) {
    server = catalog.servers.find((candidate) => candidate.name === request.server);
    if (server === undefined) throw unknownServer(request.server, catalog);
    if (server.error !== undefined) {
      checkOffset(offset, 0);
      return { text: renderUnavailableServer(server), tools: [], total: 0 };
    }
  }
  const candidates = server === undefined ? catalog.tools : catalog.tools.filter((tool) => tool.server === server.name);
  const matches = query === undefined ? candidates : rankTools(candidates, query);
  const total = matches.length;
  checkOffset(offset, total);
  const slice = paginate(total, offset, limit, (index) => renderEntry(matches[index]!));
  const shown = slice.entries.length;
  const page: SearchPage = { text: "", tools: matches.slice(offset, offset + shown).map((tool) => structuredClone(tool)), total };
  if (slice.nextOffset !== undefined) page.nextOffset = slice.nextOffset;
  const instructions = server !== undefined && offset === 0 && server.instructions?.trim() ? server.instructions : undefined;
  if (instructions !== undefined) page.instructions = instructions;
  const listsEverything = query === undefined && server === undefined;
  const unavailable = listsEverything && slice.nextOffset === undefined ? catalog.servers.filter((s) => s.error !== undefined) : [];
  const summary = {
    total,
    offset,
    shown,
    ...(query === undefined ? {} : { query }),
    ...(server === undefined ? {} : { server: server.name }),
  };
  page.text = renderPage({
    ...(instructions === undefined ? {} : { instructions: { server: server!.name, text: instructions } }),
    heading: renderHeading(slice.nextOffset === undefined ? summary : { ...summary, nextOffset: slice.nextOffset }),
    entries: slice.entries,
    unavailable,
  });
  return page;
}

const OPTION_NAMES = ["query", "server", "limit", "offset"];

/** Checks the options before any download. Throws {@link SearchError} with the reason. */
export function readOptions(options: unknown): SearchRequest {
  if (options === undefined) return { limit: DEFAULT_LIMIT, offset: 0 };
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new SearchError(`search options must be an object like { query, server, limit, offset }, got ${describe(options)}`);
  }
  const fields = options as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!OPTION_NAMES.includes(key)) {
      throw new SearchError(`Unknown search option ${JSON.stringify(key)}; the options are ${OPTION_NAMES.join(", ")}`);
    }
  }
  const request: SearchRequest = {
    limit: readInteger(fields["limit"], "limit", DEFAULT_LIMIT),
    offset: readInteger(fields["offset"], "offset", 0),
  };
  if (request.limit < 1) throw new SearchError(`limit must be at least 1, got ${request.limit}`);
  if (request.offset < 0) throw new SearchError(`offset must not be negative, got ${request.offset}`);
  const query = readString(fields["query"], "query");
  // A query with no searchable words (blank, or only punctuation) is the same as no query.
  if (query !== undefined && tokenize(query).length > 0) request.query = query;
  const server = readString(fields["server"], "server");
  if (server !== undefined && server.trim() !== "") request.server = server;
  return request;
}

function readInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value)) throw new SearchError(`${name} must be an integer, got ${describe(value)}`);
  return value;
}

function readString(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new SearchError(`${name} must be a string, got ${describe(value)}`);
  return value;
}

function checkOffset(offset: number, total: number): void {
  if (offset > total) {
    throw new SearchError(
      `offset ${offset} is past the end: ${total === 1 ? "1 tool matches" : `${total} tools match`}, ` +
        `so the last page starts at most at offset ${total}`,
    );
  }
}

function unknownServer(name: string, catalog: Catalog): SearchError {
  const known = catalog.servers.map((server) => JSON.stringify(server.name)).join(", ");
  return new SearchError(
    `Unknown MCP server ${JSON.stringify(name)}; ${known === "" ? "the catalog has no servers" : `known servers: ${known}`}`,
  );
}
