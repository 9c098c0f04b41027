/**
 * `ears mcp`'s stdio transport: MCP's newline-delimited JSON-RPC on stdin and stdout, as the MCP SDK's
 * StdioServerTransport, with the bounds that one lacks. A message over {@link MAX_READ_BYTES} is refused
 * with a JSON-RPC error for its id (read from the message's first or last bytes) and serving goes on; the
 * SDK's transport closed instead, and `ears mcp` exited 0 with runs going. An answer over
 * {@link MAX_SEND_BYTES}, which the SDK's client refuses by closing the connection, is never written: the
 * request gets an error instead. And the transport knows why it ended (see {@link TransportEnd}), so `ears
 * mcp` can say who ended the session.
 */
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { describeError } from "../protocol/errors.js";
import { byteSize } from "../protocol/text.js";

/**
 * The largest message read, in bytes: the MCP SDK's own read buffer (10 MiB), so a client built on it
 * never gets a refusal for what its own server transport would have read.
 */
export const MAX_READ_BYTES = 10 * 1024 * 1024;
/**
 * The largest message written, in bytes. The MCP SDK's client drops the connection when its read buffer
 * (10 MiB, counting a message and the pipe chunk after it) overflows; 8 MiB leaves room for that.
 */
export const MAX_SEND_BYTES = 8 * 1024 * 1024;
/** Bytes kept from each end of an oversized message, to find its id. */
const KEPT_ENDS = 512;

/** Why the transport ended: the client closed stdin or its end of stdout, or reading or writing failed otherwise. */
export type TransportEnd = { by: "client"; reason: string } | { by: "ears"; reason: string } | { by: "server"; reason: string };

/** JSON-RPC's error codes used here. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INTERNAL_ERROR = -32603;

export interface McpTransportOptions {
  /** Checks a parsed line (the SDK's JSONRPCMessageSchema.parse); throws for one that is not a JSON-RPC message. */
  parse: (value: unknown) => JSONRPCMessage;
  /** Writes one line to ears' stderr (a refusal, a message dropped). */
  log: (line: string) => void;
  maxReadBytes?: number;
  maxSendBytes?: number;
}

/** The stdio transport of `ears mcp`. */
export class McpStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Set once the transport ended: who ended it and why. */
  ended: TransportEnd | undefined;
  private readonly maxReadBytes: number;
  private readonly maxSendBytes: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** While a line is over the limit: its first bytes, its last bytes and its length; nothing else is kept. */
  private skipping: { head: Buffer; tail: Buffer; bytes: number } | undefined;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    private readonly options: McpTransportOptions,
  ) {
    this.maxReadBytes = options.maxReadBytes ?? MAX_READ_BYTES;
    this.maxSendBytes = options.maxSendBytes ?? MAX_SEND_BYTES;
  }

  start(): Promise<void> {
    this.stdin.on("data", this.onData);
    this.stdin.on("end", this.onEnd);
    this.stdin.on("error", this.onReadError);
    this.stdout.on("error", this.onWriteError);
    return Promise.resolve();
  }

  /** Writes `message`; an answer too large for the client becomes an error answer to the same request. */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.ended !== undefined) return Promise.resolve();
    let line = `${JSON.stringify(message)}\n`;
    const bytes = Buffer.byteLength(line);
    if (bytes > this.maxSendBytes) {
      const id = "id" in message ? message.id : undefined;
      const what = "method" in message ? `a ${JSON.stringify(message.method)} message` : `the answer to request ${JSON.stringify(id)}`;
      this.options.log(`ears mcp: ${what} was ${byteSize(bytes)}, over the ${byteSize(this.maxSendBytes)} an MCP client reads; not sent`);
      if ("method" in message || id === undefined) return Promise.resolve();
      line = `${JSON.stringify({
        jsonrpc: "2.0",
        id,
        error: {
          code: INTERNAL_ERROR,
          message:
            `ears mcp's answer was ${byteSize(bytes)}, over the ${byteSize(this.maxSendBytes)} an MCP client accepts in one message, ` +
            "so it was not sent",
        },
      })}\n`;
    }
    return new Promise((resolve) => {
      if (this.stdout.write(line)) resolve();
      else {
        const done = () => {
          this.stdout.off("drain", done);
          this.stdout.off("close", done);
          resolve();
        };
        this.stdout.once("drain", done);
        this.stdout.once("close", done);
      }
    });
  }

  close(): Promise<void> {
    this.end({ by: "server", reason: "ears mcp closed the connection" });
    return Promise.resolve();
  }

  private end(why: TransportEnd): void {
    if (this.ended !== undefined) return;
    this.ended = why;
    this.stdin.off("data", this.onData);
    this.stdin.off("end", this.onEnd);
    this.stdin.off("error", this.onReadError);
    this.stdout.off("error", this.onWriteError);
    // Errors after the end (a late EPIPE) must not be unhandled.
    this.stdout.on("error", () => {});
    this.stdin.on("error", () => {});
    this.stdin.pause();
    this.pending = [];
    this.pendingBytes = 0;
    this.skipping = undefined;
    this.onclose?.();
  }

  private readonly onEnd = () => this.end({ by: "client", reason: "the client closed ears' stdin" });

  private readonly onReadError = (error: Error) => this.end({ by: "ears", reason: `reading stdin failed: ${describeError(error)}` });

  private readonly onWriteError = (error: Error) => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EPIPE" || code === "ERR_STREAM_DESTROYED")
      this.end({ by: "client", reason: "the client closed its end of ears' stdout" });
    else this.end({ by: "ears", reason: `writing stdout failed: ${describeError(error)}` });
  };

  private readonly onData = (chunk: Buffer) => {
    let start = 0;
    while (start < chunk.length && this.ended === undefined) {
      const newline = chunk.indexOf(10, start);
      const end = newline < 0 ? chunk.length : newline;
      this.take(chunk.subarray(start, end));
      if (newline < 0) return;
      this.lineEnded();
      start = newline + 1;
    }
  };

  /** Adds bytes of the line being read, switching to skipping once the line is over the limit. */
  private take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.skipping !== undefined) {
      this.skipping.bytes += part.length;
      this.skipping.tail = lastBytes(Buffer.concat([this.skipping.tail, part]));
      return;
    }
    if (this.pendingBytes + part.length <= this.maxReadBytes) {
      // Copied: a chunk's buffer must not be held past this call (it may be a slice of a larger pool).
      this.pending.push(Buffer.from(part));
      this.pendingBytes += part.length;
      return;
    }
    const all = Buffer.concat([...this.pending, part]);
    this.skipping = { head: Buffer.from(all.subarray(0, KEPT_ENDS)), tail: lastBytes(all), bytes: all.length };
    this.pending = [];
    this.pendingBytes = 0;
  }

  private lineEnded(): void {
    const skipped = this.skipping;
    if (skipped !== undefined) {
      this.skipping = undefined;
      this.refuseOversized(skipped);
      return;
    }
    const line = Buffer.concat(this.pending).toString("utf8").replace(/\r$/, "");
    this.pending = [];
    this.pendingBytes = 0;
    if (line.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = this.options.parse(JSON.parse(line));
    } catch (error) {
      this.options.log(`ears mcp: a message from the client is not JSON-RPC (${describeError(error)}); answered with an error`);
      void this.send({ jsonrpc: "2.0", error: { code: PARSE_ERROR, message: `not a JSON-RPC message: ${describeError(error)}` } });
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.onmessage?.(message);
  }

  /** Answers a message over the read limit with an error for its id (when one of its ends shows it), and goes on. */
  private refuseOversized({ head, tail, bytes }: { head: Buffer; tail: Buffer; bytes: number }): void {
    const id = oversizedId(head.toString("utf8"), tail.toString("utf8"));
    const said = `a message of ${byteSize(bytes)}, over ears mcp's limit of ${byteSize(this.maxReadBytes)} for one message`;
    const answer = id === undefined ? " (its id could not be read, so no answer was sent)" : ` (request ${JSON.stringify(id)})`;
    this.options.log(`ears mcp: refused ${said}${answer}`);
    if (id === undefined) return;
    void this.send({
      jsonrpc: "2.0",
      id,
      error: {
        code: INVALID_REQUEST,
        message: `${said}, was not read. Send less in one call: a shorter code body or input (fetch large data from inside the body)`,
      },
    });
  }
}

/** The last {@link KEPT_ENDS} bytes of `bytes`, copied. */
function lastBytes(bytes: Buffer): Buffer {
  return Buffer.from(bytes.subarray(Math.max(0, bytes.length - KEPT_ENDS)));
}

/**
 * The id of a message too large to parse, from its first or last bytes: `{"jsonrpc":"2.0","id":…` (how
 * most clients start a request) or `…,"id":…}` (how the MCP SDK's TypeScript client ends one). Only an
 * id in those places counts, never an `"id"` inside the parameters.
 */
export function oversizedId(head: string, tail: string): string | number | undefined {
  const value = String.raw`(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")`;
  const atStart = new RegExp(String.raw`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*${value}\s*[,}]`).exec(head);
  const atEnd = new RegExp(String.raw`[,{]\s*"id"\s*:\s*${value}\s*\}\s*$`).exec(tail);
  const found = atStart?.[1] ?? atEnd?.[1];
  if (found === undefined) return undefined;
  try {
    return JSON.parse(found) as string | number;
  } catch {
    return undefined;
  }
}
