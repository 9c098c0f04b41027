/**
 * One JSON POST to an OpenSeek host, the way its HTTP admission expects: `Authorization: Bearer`,
 * `Content-Type: application/json`, a `Content-Length` body, no `Origin`, and one request per connection
 * (`Connection: close` on a fresh socket). Never retried: a lost reply does not prove the tool did not run.
 */
import { request as httpRequest, type ClientRequest } from "node:http";
import { openSeekTransportError } from "./transport-error.js";
import type { Handoff, HostService } from "./handoff.js";

/** The client deadline for a whole request and reply body: above the host's own 120 s tool deadline. */
export const DEADLINE_MS = 125_000;

/** Replies larger than this are refused instead of buffered without bound (the PTC host caps its at 64K characters). */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

/** Options for {@link postJson}. */
export interface PostOptions {
  /** Aborting rejects with the signal's reason (not a TransportError) and closes the connection. */
  signal?: AbortSignal | undefined;
  /** Milliseconds for the whole exchange; `undefined` waits without a deadline (approval tools). */
  deadlineMs?: number | undefined;
  /** Largest reply body accepted; default {@link MAX_REPLY_BYTES}. */
  maxReplyBytes?: number;
}

const OUTCOME_UNKNOWN = "execution outcome may be unknown";

/**
 * Sends `body` (JSON text) to the handoff's URL and resolves with the parsed reply of an HTTP 200.
 * Rejects with `TransportError` (kind "http") for any other status, a connection failure, the
 * deadline, an oversized reply, or a body that is not UTF-8 JSON; each message says the execution
 * outcome may be unknown. `mayHaveExecuted` is true once the connection was made.
 */
export function postJson(service: HostService, handoff: Handoff, body: string, options: PostOptions = {}): Promise<unknown> {
  const { signal, deadlineMs, maxReplyBytes = MAX_REPLY_BYTES } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<unknown>((resolve, reject) => {
    const payload = Buffer.from(body, "utf8");
    let settled = false;
    let connected = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let request: ClientRequest | undefined;

    const settle = (error: unknown, value?: unknown) => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      // One request per connection: whatever happened, this socket is done.
      request?.destroy();
      if (error === undefined) resolve(value);
      else reject(error);
    };
    const fail = (what: string, cause?: unknown) =>
      settle(
        openSeekTransportError(`${service.label} ${what}; ${OUTCOME_UNKNOWN}`, {
          kind: "http",
          mayHaveExecuted: connected,
          cause,
        }),
      );
    const onAbort = () => settle(signal!.reason);

    const url = handoff.url;
    try {
      request = httpRequest({
        method: "POST",
        hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
        port: url.port === "" ? 80 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        // A fresh socket that is not kept alive: the host serves exactly one request per connection.
        agent: false,
        headers: {
          Authorization: `Bearer ${handoff.token}`,
          "Content-Type": "application/json",
          "Content-Length": String(payload.length),
          Connection: "close",
        },
      });
    } catch (error) {
      fail(`request could not be made (${describeCause(error)})`, error);
      return;
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    if (deadlineMs !== undefined) {
      timer = setTimeout(() => fail(`request timed out after ${formatSeconds(deadlineMs)}`), deadlineMs);
    }
    request.on("socket", (socket) => socket.once("connect", () => (connected = true)));
    request.on("error", (error) => fail(`connection failed (${describeCause(error)})`, error));
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      if (status !== 200) {
        response.resume();
        // The one status with a known cause: OpenSeek's admission answers 403 to a wrong token (or an Origin).
        const why =
          status === 403
            ? `: the host refused the bearer token; ${service.variable} must be the value this host run set ` +
              "(a token from another run is refused)"
            : "";
        fail(`transport failed (HTTP ${status}${why})`);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxReplyBytes) fail(`host sent a reply over ${maxReplyBytes} bytes`);
        else chunks.push(chunk);
      });
      response.on("error", (error) => fail(`connection failed while reading the reply (${describeCause(error)})`, error));
      response.on("close", () => {
        if (!response.complete) fail("connection closed before the reply was complete");
      });
      response.on("end", () => {
        let text: string;
        try {
          text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
        } catch (error) {
          fail("host returned invalid JSON (the reply is not UTF-8)", error);
          return;
        }
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (error) {
          fail("host returned invalid JSON", error);
          return;
        }
        settle(undefined, value);
      });
    });
    request.end(payload);
  });
}

function describeCause(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== undefined && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

function formatSeconds(milliseconds: number): string {
  return milliseconds >= 1000 && milliseconds % 1000 === 0 ? `${milliseconds / 1000} s` : `${milliseconds} ms`;
}
