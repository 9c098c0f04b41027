// What an OpenSeek host double records and answers: the recorded request, the reply shapes and their builders.
import type { IncomingHttpHeaders } from "node:http";

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

/** A tool handler's reply as the host's reply: a result envelope unless it is already a raw reply. */
export function toHostReply(reply: OpenSeekToolReply): OpenSeekReply {
  if ("type" in reply) return reply;
  const options: { isError?: boolean; data?: unknown; images?: string[] } = {};
  if (reply.isError !== undefined) options.isError = reply.isError;
  if ("data" in reply) options.data = reply.data;
  if (reply.images !== undefined) options.images = reply.images;
  return hostReplies.result(reply.content, options);
}
