/**
 * MCP servers as capabilities (issue 19), against @modelcontextprotocol/server-everything, a reference
 * server this project did not write, started over stdio as a real child process.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectMcpServers, mcpConfig, runCode, type McpConfig, type McpConnection } from "../../../src/host/index.js";
import { isRunning } from "../../helpers/spawn-ears.js";
import { liveWithEnvironment, uniqueMarker } from "../../helpers/processes.js";

const ctxOf = (name: string) => ({ name, id: 1, signal: new AbortController().signal });

const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const everythingConfig: McpConfig = { mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } };

/**
 * The everything server with a marker of its own in its environment, and the live pids that carry it: other
 * files' everything servers may run beside this one (vitest runs a test file per CPU), and only this one counts.
 */
function markedEverything(): { server: McpConfig["mcpServers"][string]; pids: () => number[] } {
  const marker = uniqueMarker();
  return {
    server: {
      command: process.execPath,
      args: [EVERYTHING, "stdio"],
      env: { ...process.env, EARS_TEST_MARKER: marker } as Record<string, string>,
    },
    pids: () => liveWithEnvironment(`EARS_TEST_MARKER=${marker}`),
  };
}

describe("connectMcpServers (server-everything over stdio)", () => {
  let connection: McpConnection;
  const stderr: string[] = [];
  beforeAll(async () => {
    connection = await connectMcpServers(everythingConfig, { onServerStderr: (server, line) => stderr.push(`${server}: ${line}`) });
  });
  afterAll(() => connection.close());

  it("names each tool <server>.<tool> and builds its contract from inputSchema and outputSchema", () => {
    expect(Object.keys(connection.capabilities)).toEqual(expect.arrayContaining(["everything.echo", "everything.get-structured-content"]));
    expect(connection.contract.names).toEqual(Object.keys(connection.capabilities));
    const described = connection.contract.describe().find((tool) => tool.name === "everything.get-structured-content")!;
    expect(described.inputSchema).toMatchObject({ properties: { location: { enum: ["New York", "Chicago", "Los Angeles"] } } });
    expect(described.outputSchema).toMatchObject({ required: ["temperature", "conditions", "humidity"] });
  });

  it("sends the server's stderr to onServerStderr, not to a guest", () => {
    expect(stderr.some((line) => line.startsWith("everything: "))).toBe(true);
  });

  const call = (name: string, args: unknown) =>
    connection.capabilities[name]!(args as never, { name, id: 1, signal: new AbortController().signal }) as Promise<unknown>;

  it("a text result becomes content; structuredContent becomes structured", async () => {
    expect(await call("everything.echo", { message: "hi" })).toEqual({ status: "success", content: "Echo: hi" });
    const weather = (await call("everything.get-structured-content", { location: "Chicago" })) as { structured: Record<string, unknown> };
    expect(weather).toMatchObject({ status: "success", structured: { temperature: expect.any(Number), conditions: expect.any(String) } });
    expect(JSON.parse((weather as unknown as { content: string }).content)).toEqual(weather.structured);
  });

  it("saves an image to a file in filesDir, names it in content and lists it in structured.images", async () => {
    const outcome = (await call("everything.get-tiny-image", {})) as { content: string; structured: { images: string[] } };
    expect(outcome.structured.images).toHaveLength(1);
    const path = outcome.structured.images[0]!;
    expect(path.startsWith(connection.filesDir)).toBe(true);
    expect(outcome.content).toContain(`[image saved to ${path} (image/png, `);
    expect(outcome.content).not.toMatch(/iVBORw0KGgo/);
    // The PNG signature: the file holds the decoded bytes, not the base64 text.
    expect([...readFileSync(path).subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it("isError becomes a ToolError failure with the server's text; arguments are forwarded unchanged", async () => {
    const outcome = await call("everything.echo", { message: 5 });
    expect(outcome).toMatchObject({ status: "failure", code: "ToolError" });
    expect((outcome as { content: string }).content).toMatch(/Invalid arguments for tool echo/);
  });

  it("refuses arguments that are not an object without sending them", async () => {
    expect(await call("everything.echo", ["hi"])).toMatchObject({ status: "failure", code: "InvalidArguments" });
  });

  it("a body's wrong argument is refused by typecheck before anything runs; a valid body runs sandboxed", async () => {
    const wrong = await runCode({
      code: 'const r = await ears.call("everything.get-structured-content", { location: "Paris" });\nreturn r;',
      capabilities: connection.capabilities,
      contract: connection.contract,
      typecheck: true,
    });
    expect(wrong.failure?.code).toBe("CompileError");
    expect(wrong.failure?.message).toMatch(/code\.ts:1:\d+: Type '"Paris"' is not assignable/);
    expect(wrong.pid).toBeUndefined();

    const typedUse = await runCode({
      code: 'const r = await ears.call("everything.get-structured-content", { location: "Chicago" });\nreturn r.structured.temperature;',
      capabilities: connection.capabilities,
      contract: connection.contract,
      typecheck: true,
    });
    expect(typedUse.failure?.message).toMatch(/code\.ts:2:\d+: 'r\.structured' is possibly 'null' or 'undefined'/);

    const valid = await runCode({
      code: `const r = await ears.call("everything.get-structured-content", { location: "Chicago" });
if (r.status === "failure") return r;
const e = await ears.call("everything.echo", { message: r.structured.conditions });
return { t: r.structured.temperature, e: e.content };`,
      capabilities: connection.capabilities,
      contract: connection.contract,
      typecheck: true,
      allowed: connection.contract.names,
    });
    expect(valid.failure).toBeUndefined();
    expect(valid.outcome).toMatchObject({ status: "success", structured: { t: expect.any(Number), e: expect.stringMatching(/^Echo: /) } });
    if (process.platform === "linux") expect(valid.sandbox?.mechanism).toBe("bubblewrap");
  });
});

describe("connectMcpServers over Streamable HTTP", () => {
  it("connects to a url with the configured headers and calls a tool", async () => {
    // server-everything's own server, behind the SDK's Streamable HTTP transport, listening on 127.0.0.1 only.
    const everything = (await import(pathToFileURL(resolve(EVERYTHING, "../server/index.js")).href)) as {
      createServer: () => { server: { connect(transport: unknown): Promise<void>; close(): Promise<void> }; cleanup?: () => void };
    };
    const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
    const { server: mcp, cleanup } = everything.createServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
    await mcp.connect(transport);
    const authorizations: (string | undefined)[] = [];
    const http = createServer((request, response) => {
      authorizations.push(request.headers.authorization);
      void transport.handleRequest(request, response);
    });
    await new Promise<void>((done) => http.listen(0, "127.0.0.1", done));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    try {
      const connection = await connectMcpServers({ mcpServers: { remote: { url, headers: { Authorization: "Bearer remote-token" } } } });
      try {
        const outcome = await connection.capabilities["remote.echo"]!(
          { message: "over http" },
          { name: "remote.echo", id: 1, signal: new AbortController().signal },
        );
        expect(outcome).toEqual({ status: "success", content: "Echo: over http" });
      } finally {
        await connection.close();
      }
      expect(authorizations.length).toBeGreaterThan(1);
      expect(new Set(authorizations)).toEqual(new Set(["Bearer remote-token"]));
    } finally {
      await mcp.close();
      cleanup?.();
      http.closeAllConnections();
      http.close();
    }
  });
});

describe("connectMcpServers: lifecycle and configuration", () => {
  it("close() ends the server process and removes its default filesDir", async () => {
    const everything = markedEverything();
    const connection = await connectMcpServers({ mcpServers: { everything: everything.server } }, { onServerStderr: () => {} });
    const started = everything.pids();
    expect(started.length).toBeGreaterThan(0);
    expect(existsSync(connection.filesDir)).toBe(true);
    await connection.close();
    expect(started.filter(isRunning)).toEqual([]);
    expect(existsSync(connection.filesDir)).toBe(false);
  });

  it("keeps a filesDir the caller gave; a call after close() rejects (the host answers CapabilityFailed)", async () => {
    const filesDir = mkdtempSync(join(tmpdir(), "ears-mcp-files-"));
    try {
      const connection = await connectMcpServers(everythingConfig, { filesDir, onServerStderr: () => {} });
      const image = (await connection.capabilities["everything.get-tiny-image"]!({}, ctxOf("everything.get-tiny-image"))) as {
        structured: { images: string[] };
      };
      await connection.close();
      expect(existsSync(image.structured.images[0]!)).toBe(true);
      expect(image.structured.images[0]!.startsWith(filesDir)).toBe(true);
      await expect(connection.capabilities["everything.echo"]!({ message: "late" }, ctxOf("everything.echo"))).rejects.toThrow(
        /Not connected/,
      );
    } finally {
      rmSync(filesDir, { recursive: true, force: true });
    }
  });

  it("rejects naming a server that cannot start, and closes the ones already started", async () => {
    const everything = markedEverything();
    const config: McpConfig = {
      mcpServers: { everything: everything.server, broken: { command: process.execPath, args: ["-e", "process.exit(3)"] } },
    };
    await expect(connectMcpServers(config, { onServerStderr: () => {} })).rejects.toThrow(/MCP server "broken" could not be reached/);
    expect(everything.pids().filter((pid) => isRunning(pid))).toEqual([]);
  });

  it("refuses a malformed configuration with a TypeError naming the mistake", () => {
    expect(() => mcpConfig(null)).toThrow(/expected an object/);
    expect(() => mcpConfig({})).toThrow(/"mcpServers" must be an object/);
    expect(() => mcpConfig({ mcpServers: { "a.b": { command: "x" } } })).toThrow(/hold no "\."/);
    expect(() => mcpConfig({ mcpServers: { a: {} } })).toThrow(/exactly one of "command" \(stdio\) and "url"/);
    expect(() => mcpConfig({ mcpServers: { a: { command: "x", url: "http://h" } } })).toThrow(/exactly one/);
    expect(() => mcpConfig({ mcpServers: { a: { url: "file:///x" } } })).toThrow(/"url" must be an http\(s\) URL/);
    expect(() => mcpConfig({ mcpServers: { a: { command: "x", args: [1] } } })).toThrow(/"args" must be an array of strings/);
    expect(() => mcpConfig({ mcpServers: { a: { command: "x", env: { A: 1 } } } })).toThrow(/"env" must be an object of strings/);
  });
});
