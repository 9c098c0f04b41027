/**
 * `ears mcp` and the sandbox (issue 28 item 5): it requires one unless --no-sandbox, so a machine without
 * bubblewrap refuses bodies instead of running them unconfined; with --no-sandbox every tool result says
 * so, in the text the model and its user see. Driven by the MCP SDK's own Client over stdio.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canHideBubblewrap, withoutBubblewrap } from "../helpers/no-bwrap.js";
import { EARS } from "../helpers/spawn-ears.js";

function textOf(result: unknown): string {
  const { content } = result as { content: { type: string; text: string }[] };
  expect(content).toHaveLength(1);
  return content[0]!.text;
}

const NOTICE = "Note: ears mcp runs bodies without a sandbox (--no-sandbox): this body ran with the rights of the user who started ears.";

async function connect(prefix: string[], args: string[], env?: Record<string, string>): Promise<Client> {
  const [command, ...rest] = [...prefix, process.execPath, EARS, "mcp", ...args];
  const transport = new StdioClientTransport({ command: command!, args: rest, stderr: "pipe", ...(env === undefined ? {} : { env }) });
  transport.stderr?.on("data", () => {});
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  return client;
}

describe.runIf(process.platform === "linux")("ears mcp requires a sandbox unless --no-sandbox", () => {
  let dir: string;
  const clients: Client[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-mcp-sandbox-"));
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(canHideBubblewrap)(
    "on a machine with neither bubblewrap nor Landlock a body is refused (SandboxUnavailable), never run unconfined",
    async () => {
      const bin = join(dir, "bin");
      mkdirSync(bin);
      symlinkSync(process.execPath, join(bin, "node"));
      for (const pool of ["0", "1"]) {
        const client = await connect(withoutBubblewrap(mkdtempSync(join(dir, "hide-")), { landlock: false }), ["--pool", pool], {
          PATH: bin,
        });
        clients.push(client);
        const result = await client.callTool({
          name: "run_code",
          arguments: { code: 'return (process.getBuiltinModule("node:fs")).readFileSync("/etc/passwd", "utf8");' },
        });
        expect(result.isError, `--pool ${pool}`).toBe(true);
        expect(textOf(result)).toMatch(/^SandboxUnavailable: /);
        expect(textOf(result)).not.toContain("root:");
      }
    },
  );

  it("with --no-sandbox every result says the body ran unconfined: a success, a failure outcome, a compile error, a crash", async () => {
    const client = await connect([], ["--no-sandbox", "--pool", "1"]);
    clients.push(client);
    const success = await client.callTool({ name: "run_code", arguments: { code: "console.log('hi'); return 1 + 1;" } });
    expect(success.isError).toBe(false);
    expect(textOf(success)).toBe(`2\n\nLogs:\n[info] hi\n\n${NOTICE}`);
    const failure = await client.callTool({ name: "run_code", arguments: { code: 'return Outcome.failure("Nope", "no");' } });
    expect(failure.isError).toBe(true);
    expect(textOf(failure)).toBe(`Nope: no\n\n${NOTICE}`);
    const compile = await client.callTool({ name: "run_code", arguments: { code: "return (;" } });
    expect(textOf(compile)).toMatch(/^CompileError: /);
    expect(textOf(compile).endsWith(`\n\n${NOTICE}`)).toBe(true);
    const crash = await client.callTool({ name: "run_code", arguments: { code: "process.exit(3);" } });
    expect(crash.isError).toBe(true);
    expect(textOf(crash).endsWith(`\n\n${NOTICE}`)).toBe(true);
  });

  it("sandboxed (the default), a result carries no such note", async () => {
    const client = await connect([], ["--pool", "0"]);
    clients.push(client);
    const result = await client.callTool({ name: "run_code", arguments: { code: "return 'confined';" } });
    expect(textOf(result)).toBe('"confined"');
  });
});
