/**
 * Text of a search page, ready to print for a model: a heading, each tool's description and the JSON
 * Schemas of its arguments and result data, and the extras (server instructions, unavailable servers).
 * Pure: no I/O, no catalog state.
 */
import { escapeUnsafeJson, escapeUnsafeText, safeQuoted } from "../protocol/text.js";
import type { McpServer, McpTool } from "./catalog.js";

// Everything here but the words of ears comes from an MCP server: every control and bidirectional
// character in it is shown escaped (protocol/text.ts), so a page never drives a terminal or reorders a prompt.
const shown = (text: string) => escapeUnsafeText(text, { keepLineBreaks: true });
const json = (value: unknown) => escapeUnsafeJson(JSON.stringify(value, null, 2));

/** One tool's entry: how to call it, its description, and its schemas pretty-printed. */
export function renderEntry(tool: McpTool): string {
  const lines = [
    `### ${shown(tool.server)} / ${shown(tool.name)}`,
    `Call: mcp.call(${safeQuoted(tool.server)}, ${safeQuoted(tool.name)}, arguments)`,
    tool.description.trim() === "" ? "(no description)" : shown(tool.description),
    "Arguments (JSON Schema):",
    json(tool.inputSchema),
  ];
  if (tool.outputSchema === undefined) {
    lines.push("Result data: no schema declared.");
  } else {
    lines.push("Result data (JSON Schema):", json(tool.outputSchema));
  }
  return lines.join("\n");
}

/** What a search asked for and what its page holds, for the heading. */
export interface PageSummary {
  query?: string;
  server?: string;
  total: number;
  offset: number;
  shown: number;
  nextOffset?: number;
}

/** One line saying what the page holds and how to get the next one. */
export function renderHeading(summary: PageSummary): string {
  const { query, server, total, offset, shown, nextOffset } = summary;
  const matching = query === undefined ? "" : ` matching ${JSON.stringify(query)}`;
  const on = server === undefined ? "" : ` on MCP server ${safeQuoted(server)}`;
  if (total === 0) {
    if (query !== undefined) return `No MCP tools${matching}${on}.`;
    return server === undefined ? "The MCP host lists no tools." : `MCP server ${safeQuoted(server)} has no tools.`;
  }
  if (shown === 0) return `No more MCP tools${matching}${on}: all ${total} come before offset ${offset}.`;
  const range = `MCP tools ${offset + 1}-${offset + shown} of ${total}${matching}${on}.`;
  return nextOffset === undefined ? range : `${range} Next page: offset ${nextOffset}.`;
}

/** The parts of a page's text, in the order they are printed. */
export interface PageParts {
  /** A server search's first page: that server's instructions, printed on top. */
  instructions?: { server: string; text: string };
  heading: string;
  /** Entry texts from {@link renderEntry}, possibly cut. */
  entries: readonly string[];
  /** Servers listed after the tools (the last page of a listing of every tool). */
  unavailable?: readonly McpServer[];
}

/** Joins the parts of a page with blank lines between them. */
export function renderPage(parts: PageParts): string {
  const blocks: string[] = [];
  if (parts.instructions !== undefined) {
    blocks.push(`Instructions from MCP server ${safeQuoted(parts.instructions.server)}:\n${shown(parts.instructions.text)}`);
  }
  blocks.push(parts.heading, ...parts.entries);
  if (parts.unavailable !== undefined && parts.unavailable.length > 0) blocks.push(renderUnavailable(parts.unavailable));
  return blocks.join("\n\n");
}

/** The list of unavailable servers with their errors. */
export function renderUnavailable(servers: readonly McpServer[]): string {
  return ["Unavailable MCP servers:", ...servers.map((server) => `- ${shown(server.name)}: ${shown(server.error ?? "unavailable")}`)].join(
    "\n",
  );
}

/** The page of a search that names an unavailable server. */
export function renderUnavailableServer(server: McpServer): string {
  return `MCP server ${safeQuoted(server.name)} is unavailable: ${shown(server.error ?? "no reason given")}`;
}
