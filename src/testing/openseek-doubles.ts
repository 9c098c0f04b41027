/**
 * Loopback HTTP doubles of OpenSeek hosts (PTC `call` endpoint and MCP bridge), for testing scripts that use
 * `@posoco/ears/openseek`. Full implementation in progress.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One request the double received. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The body parsed as JSON, or `undefined` when it was not JSON. */
  body: unknown;
}

/** A running loopback HTTP host double. */
export interface HostDouble {
  readonly url: string;
  readonly token: string;
  readonly requests: RecordedRequest[];
  capability(): string;
  close(): Promise<void>;
}

/** Starts a double answering every request with an empty successful v1 envelope. */
export async function startPtcHost(): Promise<HostDouble> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const token = "test-token";
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, rawBody, body });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ version: 1, content: "", is_error: false }));
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/call`;
  return {
    url,
    token,
    requests,
    capability: () => JSON.stringify({ version: 1, url, token }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
