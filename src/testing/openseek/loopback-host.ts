// The loopback HTTP server every OpenSeek host double runs on: 127.0.0.1, a token, recorded requests.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { hostReplies, type OpenSeekReply, type OpenSeekResponder, type RecordedHttpRequest } from "./replies.js";

/** Options of {@link startOpenSeekHost}. */
export interface OpenSeekHostOptions {
  /** The environment variable {@link OpenSeekHostDouble.install} sets. Default `OPENSEEK_PTC`. */
  variable?: string;
  /** Bearer token the double accepts. Default: 64 random hex characters, like a real host. */
  token?: string;
  /** Request path in the capability's URL. Default `/call`. */
  path?: string;
  /** Sent as `approval_tools` in {@link OpenSeekHostDouble.capability} when given. */
  approvalTools?: string[];
  /** Replies to requests that no {@link OpenSeekHostDouble.enqueue}d reply is waiting for. Default: HTTP 500. */
  respond?: OpenSeekResponder;
  /**
   * Like a real host, refuse with HTTP 403 (empty body) a request whose `Authorization` is not exactly
   * `Bearer <token>` or that carries an `Origin`, and answer a wrong method or path with 404. Default true.
   */
  authenticate?: boolean;
}

/** A running loopback host double. Close it when done. */
export interface OpenSeekHostDouble {
  /** The capability URL, `http://127.0.0.1:<port><path>`. */
  readonly url: string;
  readonly token: string;
  /** The variable {@link install} sets. */
  readonly variable: string;
  /** Every request received, in arrival order (appended once its body was read). */
  readonly requests: RecordedHttpRequest[];
  /**
   * The capability JSON for the environment variable: `{"version":1,"url","token","approval_tools"?}`.
   * `overrides` replace or add keys (e.g. `{ version: 2 }`) for tests of invalid handoffs.
   */
  capability(overrides?: Record<string, unknown>): string;
  /** Sets `env[variable]` to {@link capability} and returns a function that restores the previous value. */
  install(env?: NodeJS.ProcessEnv): () => void;
  /** Queues replies (or responders) for the next requests, in order, ahead of the default responder. */
  enqueue(...replies: (OpenSeekReply | OpenSeekResponder)[]): void;
  /** Replaces the default responder. */
  respondWith(responder: OpenSeekResponder): void;
  /** Stops listening, ends every open connection (hanging ones included) and cancels delayed replies. */
  close(): Promise<void>;
}

/** Starts a generic double on 127.0.0.1 with an ephemeral port. */
export async function startOpenSeekHost(options: OpenSeekHostOptions = {}): Promise<OpenSeekHostDouble> {
  const token = options.token ?? randomBytes(32).toString("hex");
  const path = options.path ?? "/call";
  const variable = options.variable ?? "OPENSEEK_PTC";
  const authenticate = options.authenticate ?? true;
  const requests: RecordedHttpRequest[] = [];
  const queue: (OpenSeekReply | OpenSeekResponder)[] = [];
  const sockets = new Set<Socket>();
  const connectionIds = new WeakMap<Socket, number>();
  let connectionCount = 0;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let responder: OpenSeekResponder = options.respond ?? (() => hostReplies.status(500, "the host double has no reply for this request"));

  const send = (response: ServerResponse, reply: OpenSeekReply) => {
    const deliver = () => {
      if (response.destroyed) return;
      switch (reply.type) {
        case "hang":
          return;
        case "drop":
          response.socket?.destroy();
          return;
        case "json": {
          const body = Buffer.from(JSON.stringify(reply.value) ?? "", "utf8");
          response.writeHead(reply.status ?? 200, { "Content-Type": "application/json", "Content-Length": body.length });
          response.end(body);
          return;
        }
        case "raw": {
          const body = typeof reply.body === "string" ? Buffer.from(reply.body, "utf8") : Buffer.from(reply.body);
          response.writeHead(reply.status ?? 200, {
            "Content-Type": reply.contentType ?? "application/json",
            "Content-Length": body.length,
          });
          response.end(body);
          return;
        }
        case "partial": {
          const body = Buffer.from(reply.body, "utf8");
          response.writeHead(200, { "Content-Type": "application/json", "Content-Length": body.length + 1024 });
          response.write(body);
          if (reply.then === "drop") response.socket?.destroy();
        }
      }
    };
    const delayMs = reply.type === "hang" ? undefined : reply.delayMs;
    if (delayMs === undefined) {
      deliver();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      deliver();
    }, delayMs);
    timers.add(timer);
  };

  const handle = async (message: IncomingMessage, response: ServerResponse, rawBody: Buffer) => {
    const text = rawBody.toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const recorded: RecordedHttpRequest = {
      method: message.method ?? "",
      path: message.url ?? "",
      connection: connectionIds.get(message.socket) ?? 0,
      headers: message.headers,
      rawHeaders: message.rawHeaders,
      rawBody: text,
      body,
    };
    requests.push(recorded);
    if (authenticate) {
      if (message.method !== "POST" || message.url !== path) return send(response, hostReplies.status(404));
      if (message.headers.authorization !== `Bearer ${token}` || message.headers.origin !== undefined) {
        return send(response, hostReplies.status(403));
      }
    }
    const next = queue.shift() ?? responder;
    let reply: OpenSeekReply;
    try {
      reply = typeof next === "function" ? await next(recorded) : next;
    } catch (error) {
      reply = hostReplies.status(500, `the host double's responder failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    send(response, reply);
  };

  const server: Server = createServer((message, response) => {
    const chunks: Buffer[] = [];
    message.on("data", (chunk: Buffer) => chunks.push(chunk));
    message.on("end", () => void handle(message, response, Buffer.concat(chunks)));
  });
  server.on("connection", (socket) => {
    connectionIds.set(socket, ++connectionCount);
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;

  const capability = (overrides: Record<string, unknown> = {}) => {
    const fields: Record<string, unknown> = { version: 1, url, token };
    if (options.approvalTools !== undefined) fields["approval_tools"] = options.approvalTools;
    return JSON.stringify({ ...fields, ...overrides });
  };

  return {
    url,
    token,
    variable,
    requests,
    capability,
    install(env: NodeJS.ProcessEnv = process.env) {
      const had = Object.prototype.hasOwnProperty.call(env, variable);
      const previous = env[variable];
      env[variable] = capability();
      return () => {
        if (had) env[variable] = previous;
        else delete env[variable];
      };
    },
    enqueue(...items) {
      queue.push(...items);
    },
    respondWith(next) {
      responder = next;
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
