/**
 * @posoco/ears/openseek: the OpenSeek tools SDK (0.3.0 behaviour, wire protocol v1) for TypeScript, so one
 * program can run under both Ears and OpenSeek hosts. An OpenSeek host hands a script run-scoped
 * capabilities in environment variables: `OPENSEEK_PTC` for {@link call}, `OPENSEEK_MCP` for {@link mcp}.
 * Both are read at call time; importing this module sends nothing.
 */
import type { Json } from "../protocol/json.js";
import { mcpCallWithSettings, type McpCallResult } from "./mcp-call.js";
import { callWithSettings, defaultSettings, type CallResult, type OpenSeekCallOptions } from "./ptc.js";
import { searchWithSettings, type SearchOptions, type SearchPage } from "./search.js";

export { TransportError } from "../protocol/errors.js";
export type { TransportErrorKind, OpenSeekTransportErrorKind } from "./transport-error.js";
export type { Json } from "../protocol/json.js";
export type { McpTool } from "./catalog.js";
export type { McpCallResult } from "./mcp-call.js";
export type { CallResult, OpenSeekCallOptions } from "./ptc.js";
export { SearchError } from "./search-error.js";
export type { SearchOptions, SearchPage } from "./search.js";

/**
 * Calls a host-enabled tool by name: `POST` `{"version":1,"name":name,"arguments":arguments}` to the
 * `OPENSEEK_PTC` host. `arguments` is any JSON value, forwarded unchanged; validation and defaults stay in
 * the host. A tool failure resolves with `isError: true`.
 *
 * Rejects with `TypeError` when `name` is not a string or JSON would alter `arguments` (nothing sent);
 * `TransportError` kind "handoff" when `OPENSEEK_PTC` is missing or invalid (nothing sent); `TransportError`
 * kind "http" when the host could not be reached, answered other than HTTP 200, sent an invalid reply, or
 * the 125 s deadline passed (tools in the capability's `approval_tools` wait without it) — the tool may
 * have run, so it is never retried; the signal's own reason when `options.signal` aborts.
 */
export function call(name: string, args: Json, options: OpenSeekCallOptions = {}): Promise<CallResult> {
  return callWithSettings(name, args, options, defaultSettings());
}

/** The MCP bridge of an OpenSeek host (`OPENSEEK_MCP`): find tools with `search`, then `call` one. */
export interface McpBridge {
  /**
   * Finds MCP tools. The first search downloads the host's catalog; later searches in the process reuse
   * it. `server` alone lists that server's tools in order; `query` ranks tools (within `server` when both
   * are given); neither lists every tool, followed on the last page by the servers that are unavailable.
   * Rejects with {@link SearchError} for bad options, an unknown server, an offset past the end, or a
   * catalog that could not be downloaded.
   */
  readonly search: (options?: SearchOptions) => Promise<SearchPage>;
  /**
   * Calls `tool` of MCP server `server` by the server's own names, with a 125 s deadline (MCP calls never
   * wait for approval). A tool failure resolves with `isError: true`; saved images' paths are in `images`.
   * Rejects like {@link call}: `TypeError` (bad names or arguments, nothing sent), `TransportError`
   * ("handoff" or "http"), or the signal's reason.
   */
  readonly call: (server: string, tool: string, args: Json, options?: OpenSeekCallOptions) => Promise<McpCallResult>;
}

/** The MCP bridge: `mcp.search(...)` and `mcp.call(server, tool, arguments)`. */
export const mcp: McpBridge = Object.freeze({
  search: (options?: SearchOptions) => searchWithSettings(options, defaultSettings()),
  call: (server: string, tool: string, args: Json, options: OpenSeekCallOptions = {}) =>
    mcpCallWithSettings(server, tool, args, options, defaultSettings()),
});
