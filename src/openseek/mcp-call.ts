/**
 * `mcp.call(server, tool, arguments)`: one tool of one MCP server, through the host's MCP bridge.
 */
import type { Json } from "../protocol/json.js";
import { invalidReply } from "./envelope.js";
import { MCP_SERVICE } from "./handoff.js";
import { postCall, type ClientSettings, type OpenSeekCallOptions } from "./ptc.js";
import { requireString } from "./sendable.js";

/** An MCP tool's result. A tool failure is a result with `isError: true`, not an exception. */
export interface McpCallResult {
  content: string;
  isError: boolean;
  /** The tool's structured data: absent when the host sent none, `null` when it sent `null`. */
  data?: Json;
  /**
   * Files the host saved the tool's images in (replies are JSON, so images do not travel in them).
   * Pass one to `call("read_image", { path })` to show it to the model. Empty when there were none.
   */
  images: string[];
}

/**
 * `mcp.call` with explicit settings. Checks, all before any I/O: `server` and `tool` are strings,
 * the arguments survive JSON unchanged (else `TypeError`), the signal is not already aborted, the
 * `OPENSEEK_MCP` capability is valid (else `TransportError` kind "handoff"). MCP calls never wait for
 * approval: the deadline always applies.
 */
export async function mcpCallWithSettings(
  server: string,
  tool: string,
  args: unknown,
  options: OpenSeekCallOptions,
  settings: ClientSettings,
): Promise<McpCallResult> {
  requireString(server, "The MCP server name");
  requireString(tool, "The MCP tool name");
  const label = `The arguments of MCP tool ${JSON.stringify(tool)} on server ${JSON.stringify(server)}`;
  const envelope = await postCall(MCP_SERVICE, args, label, options, settings, (value) => ({
    body: JSON.stringify({ version: 1, call: { server, tool, arguments: value } }),
    waitsForApproval: false,
  }));
  const images = envelope.fields["images"];
  if (images !== undefined && !(Array.isArray(images) && images.every((path) => typeof path === "string"))) {
    throw invalidReply(`Invalid MCP response ("images" is not an array of file paths)`);
  }
  const result: McpCallResult = { content: envelope.content, isError: envelope.isError, images: images === undefined ? [] : [...images] };
  if ("data" in envelope) result.data = envelope.data!;
  return result;
}
