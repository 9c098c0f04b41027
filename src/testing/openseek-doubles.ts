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
export {
  hostReplies,
  type OpenSeekReply,
  type OpenSeekResponder,
  type OpenSeekToolHandler,
  type OpenSeekToolReply,
  type RecordedHttpRequest,
} from "./openseek/replies.js";
export * from "./openseek/loopback-host.js";
export * from "./openseek/ptc-host.js";
export * from "./openseek/mcp-host.js";
