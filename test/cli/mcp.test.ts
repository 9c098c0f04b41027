/**
 * `ears mcp` and `ears declarations` (issue 19), spawned as real processes. `ears mcp` is driven by the
 * MCP SDK's own Client over stdio, with server-everything (a server this project did not write) behind it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fetchHeadersOf } from "../../src/cli/connector-options.js";
import { cliInProcess } from "../helpers/cli-in-process.js";
import { UsageError } from "../../src/cli/usage.js";
import { EARS, ears, isRunning } from "../helpers/spawn-ears.js";

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 2nd field after the ")" that closes the command name.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) children.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return children;
}

/** The one text of a tool result. */
function textOf(result: unknown): string {
  const { content } = result as { content: { type: string; text: string }[] };
  expect(content).toHaveLength(1);
  return content[0]!.text;
}

const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

describe.runIf(process.platform === "linux")("ears mcp", () => {
  let dir: string;
  let client: Client;
  let transport: StdioClientTransport;
  const stderr: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ears-mcp-cli-"));
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } }),
    );
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [EARS, "mcp", "--mcp-config", "mcp.json", "--typecheck"],
      cwd: dir,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
    client = new Client({ name: "test", version: "1" });
    await client.connect(transport);
  });
  afterAll(async () => {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists one tool, run_code, whose description carries the declarations of the servers' tools", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["run_code"]);
    expect(tools[0]!.description).toContain('"everything.get-structured-content": { args: {');
    expect(tools[0]!.description).toContain('location: "New York" | "Chicago" | "Los Angeles";');
    expect(tools[0]!.inputSchema).toMatchObject({ required: ["code"] });
    // No outputSchema: a result is one text, never the same value again as structuredContent (issue 29, item 1).
    expect(tools[0]!.outputSchema).toBeUndefined();
  });

  it("runs a body sandboxed that calls the upstream server, twice over the same connection", async () => {
    const body =
      'const r = await ears.call("everything.echo", { message: String(input) });\nconsole.log("called");\nreturn { said: r.content };';
    // One upstream server process for the whole session: started once, kept between calls.
    const upstreamOf = () => childrenOf(transport.pid!).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(EVERYTHING));
    const upstream = upstreamOf();
    expect(upstream).toHaveLength(1);
    for (const input of ["one", "two"]) {
      const result = await client.callTool({ name: "run_code", arguments: { code: body, input } });
      expect(result.isError).toBe(false);
      expect(result.structuredContent).toBeUndefined();
      expect((result.content as { text: string }[])[0]!.text).toBe(`{\n  "said": "Echo: ${input}"\n}\n\nLogs:\n[info] called`);
    }
    expect(upstreamOf()).toEqual(upstream);
    const secretDir = mkdtempSync(join(tmpdir(), "ears-mcp-secret-"));
    writeFileSync(join(secretDir, "secret.txt"), "secret");
    const probe = 'const fs = (globalThis as any).process.getBuiltinModule("node:fs");\nreturn fs.existsSync(input as string);';
    const sandbox = await client.callTool({ name: "run_code", arguments: { code: probe, input: join(secretDir, "secret.txt") } });
    rmSync(secretDir, { recursive: true, force: true });
    // The body cannot see a host file outside its sandbox.
    expect(textOf(sandbox)).toBe("false");
  });

  it("answers an unknown tool name and a call without code with isError, saying what to send", async () => {
    const unknown = await client.callTool({ name: "nope", arguments: {} });
    expect(unknown).toMatchObject({ isError: true, content: [{ type: "text", text: 'unknown tool "nope"; the tool is run_code' }] });
    const noCode = await client.callTool({ name: "run_code", arguments: { input: 1 } });
    expect(noCode).toMatchObject({ isError: true, content: [{ type: "text", text: 'run_code needs "code", the body as a string' }] });
  });

  it("answers a syntax error with isError and the body's line:column", async () => {
    const result = await client.callTool({ name: "run_code", arguments: { code: "const a = 1;\nconst b: = 2;" } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/^CompileError: the code was not run: code\.ts:2:10: /);
  });

  it("refuses a wrong argument by typecheck before anything runs, and answers a failure outcome with isError", async () => {
    const wrong = await client.callTool({
      name: "run_code",
      arguments: { code: 'return await ears.call("everything.get-structured-content", { location: "Paris" });' },
    });
    expect(wrong.isError).toBe(true);
    expect((wrong.content as { text: string }[])[0]!.text).toMatch(/^CompileError: .*code\.ts:1:\d+: Type '"Paris"' is not assignable/);
    const failed = await client.callTool({
      name: "run_code",
      arguments: { code: 'return await ears.call("everything.echo", { message: 5 as unknown as string });' },
    });
    expect(failed.isError).toBe(true);
    expect((failed.content as { text: string }[])[0]!.text).toMatch(/^ToolError: MCP error -32602: Input validation error/);
  });

  it("ends when the client closes, and its MCP servers with it; their stderr went to ears' stderr", async () => {
    const pid = transport.pid!;
    expect(isRunning(pid)).toBe(true);
    const servers = childrenOf(pid);
    expect(servers.length).toBeGreaterThan(0);
    await client.close();
    for (let i = 0; i < 100 && [pid, ...servers].some(isRunning); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect([pid, ...servers].filter(isRunning)).toEqual([]);
    expect(stderr.join("")).toContain("[mcp everything] ");
  });
});

describe.runIf(process.platform === "linux")("ears mcp's run pool", () => {
  /** The code runners among `pid`'s children (bubblewrap, or node itself unconfined, started with code-runner-cached.cjs). */
  const runnersOf = (pid: number) =>
    childrenOf(pid).filter((child) => {
      try {
        return readFileSync(`/proc/${child}/cmdline`, "utf8")
          .split("\0")
          .some((word) => word.endsWith("code-runner-cached.cjs"));
      } catch {
        return false;
      }
    });
  const connect = async (args: string[]) => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [EARS, "mcp", ...args], stderr: "pipe" });
    const client = new Client({ name: "test", version: "1" });
    await client.connect(transport);
    return { client, pid: transport.pid! };
  };

  it("keeps 2 runners waiting by default, serves bodies on them, and leaves none when the client closes", async () => {
    const { client, pid } = await connect([]);
    try {
      for (let i = 0; i < 200 && runnersOf(pid).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const waiting = runnersOf(pid);
      expect(waiting).toHaveLength(2);
      for (const input of [1, 2, 3]) {
        const result = await client.callTool({ name: "run_code", arguments: { code: "return input * 2;", input } });
        expect(textOf(result)).toBe(String(input * 2));
      }
      // The runners that served the bodies are gone; their replacements wait in their place.
      expect(runnersOf(pid).filter((runner) => waiting.includes(runner))).toEqual([]);
    } finally {
      await client.close();
    }
    for (let i = 0; i < 100 && isRunning(pid); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isRunning(pid)).toBe(false);
  });

  it("--pool 0 starts a runner per body and keeps none waiting; --pool takes 0 to 64", async () => {
    const { client, pid } = await connect(["--pool", "0"]);
    try {
      const result = await client.callTool({ name: "run_code", arguments: { code: "return 'cold';" } });
      expect(textOf(result)).toBe('"cold"');
      expect(runnersOf(pid)).toEqual([]);
    } finally {
      await client.close();
    }
    const bad = await ears(["mcp", "--pool", "65"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toBe('ears: --pool takes a whole number from 0 (no pool) to 64, got "65"\n');
  });
});

describe("ears declarations", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-declarations-"));
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("prints the typed MCP tools and fetch, and the --allow'ed others untyped", async () => {
    const run = await ears(["declarations", "--mcp-config", "mcp.json", "--fetch-allow", "https://api.example.com", "--allow", "read"], {
      cwd: dir,
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      '  "everything.echo": { args: {\n    /** Message to echo */\n    message: string;\n  }; result: UntypedResult };',
    );
    expect(run.stdout).toContain("  fetch: { args: {\n    /** An absolute http(s) URL on an allowed origin */\n    url: string;");
    expect(run.stdout).toContain("  read: { args: Json | undefined; result: UntypedResult };");
    expect(run.stdout).not.toContain("  list: {");
  });

  it("ears exec --mcp-config runs a body over the servers' tools, type-checked against them", async () => {
    const body = 'const r = await ears.call("everything.get-sum", { a: 2, b: 3 });\nreturn r.content;';
    const run = await ears(["exec", "--mcp-config", "mcp.json", "--typecheck", "--quiet", "--code", body], { cwd: dir });
    expect(run.stdout).toBe('"The sum of 2 and 3 is 5."\n');
    expect(run.code).toBe(0);
    const wrong = await ears(
      ["exec", "--mcp-config", "mcp.json", "--typecheck", "--code", 'await ears.call("everything.get-sum", { a: "2", b: 3 });'],
      {
        cwd: dir,
      },
    );
    expect(wrong.stderr).toMatch(/CompileError: .*code\.ts:1:\d+: Type 'string' is not assignable to type 'number'/);
    expect(wrong.code).toBe(2);
  });

  it("ears run --mcp-config gives a guest program the servers' tools, allowed by default", async () => {
    const guest = resolve("fixtures/guests/call-input.mjs");
    const input = JSON.stringify({ name: "everything.echo", args: { message: "from a guest" } });
    const run = await ears(["run", "--mcp-config", "mcp.json", "--input", input, "--json", "--quiet", "--", process.execPath, guest], {
      cwd: dir,
    });
    const report = JSON.parse(run.stdout);
    expect(report.outcome).toEqual({ status: "success", content: "Echo: from a guest" });
    expect(report.calls).toHaveLength(1);
    expect(run.code).toBe(0);
  });

  it("exits 64 naming the problem for a configuration that cannot be read or a server that cannot start", async () => {
    writeFileSync(join(dir, "bad.json"), '{"mcpServers": {"x": {}}}');
    writeFileSync(join(dir, "broken.json"), JSON.stringify({ mcpServers: { broken: { command: process.execPath, args: ["-e", "1"] } } }));
    const missing = await ears(["declarations", "--mcp-config", "nope.json"], { cwd: dir });
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/^ears: --mcp-config: cannot read the MCP configuration .*nope\.json: /);
    writeFileSync(join(dir, "not-json.json"), "{ mcpServers: ");
    const notJson = await ears(["declarations", "--mcp-config", "not-json.json"], { cwd: dir });
    expect(notJson.code).toBe(64);
    expect(notJson.stderr).toMatch(/^ears: --mcp-config: the MCP configuration .*not-json\.json is not JSON: /);
    const words = await ears(["declarations", "extra"], { cwd: dir });
    expect(words.stderr).toBe("ears: ears declarations takes options only (see ears declarations --help)\n");
    const bad = await ears(["declarations", "--mcp-config", "bad.json"], { cwd: dir });
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain('server "x" needs exactly one of "command" (stdio) and "url" (Streamable HTTP)');
    const broken = await ears(["declarations", "--mcp-config", "broken.json"], { cwd: dir });
    expect(broken.code).toBe(64);
    expect(broken.stderr).toContain('MCP server "broken" could not be reached');
  });

  it("refuses --fetch-header without --fetch-allow, and a bad --fetch-allow origin", async () => {
    const header = await ears(["declarations", "--fetch-header", "https://a.example=A: b"], { cwd: dir });
    expect(header.stderr).toBe("ears: --fetch-header needs --fetch-allow for the same origin\n");
    const origin = await ears(["declarations", "--fetch-allow", "https://a.example/path"], { cwd: dir });
    expect(origin.code).toBe(64);
    expect(origin.stderr).toMatch(/not an http\(s\) origin/);
  });
});

describe("--fetch-allow and --fetch-header through ears exec", () => {
  let server: Server;
  let origin: string;
  const seen: (string | undefined)[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(request.headers.authorization);
      response.end("hello from the api");
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.EARS_TEST_FETCH_TOKEN = "tok-from-env-123";
  });
  afterAll(() => {
    delete process.env.EARS_TEST_FETCH_TOKEN;
    server.closeAllConnections();
    server.close();
  });

  it("a body fetches an allowed origin; ears adds the header from its environment and the output never shows it", async () => {
    const run = await cliInProcess([
      "exec",
      "--fetch-allow",
      origin,
      "--fetch-header",
      `${origin}=Authorization: Bearer \${EARS_TEST_FETCH_TOKEN}`,
      "--input",
      JSON.stringify(`${origin}/x`),
      "--typecheck",
      "--json",
      "--code",
      'const r = await ears.call("fetch", { url: input as string });\nif (r.status === "failure") return r;\nreturn r.structured.body;',
    ]);
    expect(JSON.parse(run.stdout).outcome).toEqual({ status: "success", content: "", structured: "hello from the api" });
    expect(run.code).toBe(0);
    expect(seen).toEqual(["Bearer tok-from-env-123"]);
    expect(run.stdout + run.stderr).not.toContain("tok-from-env-123");
  });

  it("refuses a --capabilities handler with the name of a connector's capability (64)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ears-clash-"));
    try {
      writeFileSync(join(dir, "caps.mjs"), "export function fetch() { return 'mine'; }\n");
      const run = await cliInProcess(["exec", "--capabilities", join(dir, "caps.mjs"), "--fetch-allow", origin, "--code", "return 1;"]);
      expect(run.stderr).toBe('ears: --capabilities exports "fetch", which a connector also provides; rename one\n');
      expect(run.code).toBe(64);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("--fetch-header", () => {
  it("reads ${NAME} from ears' environment, by origin", () => {
    expect(
      fetchHeadersOf(["https://api.example.com=Authorization: Bearer ${TOKEN}", "http://127.0.0.1:8080=X-Key:k"], { TOKEN: "t0k" }),
    ).toEqual({
      "https://api.example.com": { Authorization: "Bearer t0k" },
      "http://127.0.0.1:8080": { "X-Key": "k" },
    });
  });

  it("refuses a malformed line and an unset variable", () => {
    expect(() => fetchHeadersOf(["Authorization: x"], {})).toThrow(UsageError);
    expect(() => fetchHeadersOf(["https://a.example=Authorization: ${NOPE}"], {})).toThrow(/the environment variable NOPE is not set/);
  });
});
