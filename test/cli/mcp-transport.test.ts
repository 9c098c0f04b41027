/** `ears mcp`'s stdio transport on in-memory streams: its bounds both ways and who ended it (issue 29 item 1, issue 28 item 10). */
import { PassThrough } from "node:stream";
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { McpStdioTransport, oversizedId } from "../../src/cli/mcp-transport.js";

function open(options: { maxReadBytes?: number; maxSendBytes?: number } = {}) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const written: string[] = [];
  stdout.on("data", (chunk: Buffer) => written.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  const logs: string[] = [];
  const messages: unknown[] = [];
  const transport = new McpStdioTransport(stdin, stdout, {
    parse: (value) => JSONRPCMessageSchema.parse(value),
    log: (line) => logs.push(line),
    ...options,
  });
  transport.onmessage = (message) => messages.push(message);
  let closed = 0;
  transport.onclose = () => closed++;
  void transport.start();
  return {
    stdin,
    stdout,
    transport,
    written: () => written.map((line) => JSON.parse(line) as unknown),
    logs,
    messages,
    closed: () => closed,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("ears mcp's transport", () => {
  it("reads messages split across chunks and several in one chunk", async () => {
    const { stdin, messages } = open();
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0",');
    stdin.write('"id":2,"method":"ping"}\r\n\n');
    await tick();
    expect(messages).toEqual([
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: 2, method: "ping" },
    ]);
  });

  it("refuses a message over the read limit with an error for its id, in any chunking, and reads the next one", async () => {
    const { stdin, messages, written, logs, closed } = open({ maxReadBytes: 100 });
    const long = `{"jsonrpc":"2.0","method":"tools/call","params":{"id":"inner","code":"${"a".repeat(300)}"},"id":7}\n`;
    for (let at = 0; at < long.length; at += 37) stdin.write(long.slice(at, at + 37));
    stdin.write('{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
    await tick();
    expect(written()).toEqual([
      {
        jsonrpc: "2.0",
        id: 7,
        error: {
          code: -32600,
          message: expect.stringMatching(/^a message of 380 bytes, over ears mcp's limit of 100 bytes for one message, was not read/),
        },
      },
    ]);
    expect(messages).toEqual([{ jsonrpc: "2.0", id: 8, method: "ping" }]);
    expect(logs).toHaveLength(1);
    expect(closed()).toBe(0);
  });

  it("finds an oversized message's id only at its start or its end, never inside its parameters", () => {
    expect(oversizedId('{"jsonrpc":"2.0","id":"a-1","method":"x","params":{', "")).toBe("a-1");
    expect(oversizedId('{"method":"x","params":{"id":3,', 'xx"},"jsonrpc":"2.0","id":12}')).toBe(12);
    expect(oversizedId('{"method":"x","params":{"id":3,', 'xx","id":4}}')).toBeUndefined();
    expect(oversizedId('{"method":"x"', 'xx\\",\\"id\\":5}"}')).toBeUndefined();
  });

  it("answers a line that is not JSON-RPC with a parse error and goes on", async () => {
    const { stdin, written, messages } = open();
    stdin.write("not json\n");
    stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    await tick();
    expect(written()).toEqual([{ jsonrpc: "2.0", error: { code: -32700, message: expect.stringMatching(/^not a JSON-RPC message: /) } }]);
    expect(messages).toHaveLength(1);
  });

  it("never writes an answer over the send limit: the request gets an error saying so", async () => {
    const { transport, written, logs } = open({ maxSendBytes: 200 });
    await transport.send({ jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text: "b".repeat(500) }] } });
    await transport.send({ jsonrpc: "2.0", method: "notifications/message", params: { data: "c".repeat(500) } });
    expect(written()).toEqual([
      {
        jsonrpc: "2.0",
        id: 3,
        error: {
          code: -32603,
          message: expect.stringMatching(/^ears mcp's answer was 5\d\d bytes, over the 200 bytes an MCP client accepts/),
        },
      },
    ]);
    expect(logs).toEqual([
      expect.stringMatching(/^ears mcp: the answer to request 3 was 5\d\d bytes, over the 200 bytes an MCP client reads; not sent$/),
      expect.stringMatching(/^ears mcp: a "notifications\/message" message was 5\d\d bytes/),
    ]);
  });

  it("says who ended it: the client closing stdin or its end of stdout, or ears failing to read", async () => {
    const ended = open();
    ended.stdin.end();
    await tick();
    expect(ended.transport.ended).toEqual({ by: "client", reason: "the client closed ears' stdin" });
    expect(ended.closed()).toBe(1);
    const gone = open();
    gone.stdout.emit("error", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    expect(gone.transport.ended).toEqual({ by: "client", reason: "the client closed its end of ears' stdout" });
    const broken = open();
    broken.stdin.emit("error", new Error("EIO"));
    expect(broken.transport.ended).toEqual({ by: "ears", reason: "reading stdin failed: EIO" });
    expect(broken.closed()).toBe(1);
  });
});
