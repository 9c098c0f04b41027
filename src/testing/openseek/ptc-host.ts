// The PTC host double: `call` requests answered by tool handlers.
import { isObject } from "../../openseek/catalog.js";
import { startOpenSeekHost, type OpenSeekHostDouble, type OpenSeekHostOptions } from "./loopback-host.js";
import { hostReplies, toHostReply, type OpenSeekToolHandler } from "./replies.js";

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
