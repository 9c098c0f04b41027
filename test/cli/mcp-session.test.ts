/**
 * `ears mcp` under what ends a session (issue 29 item 1, issue 28 item 10), driven by the MCP SDK's own
 * Client over stdio: a big result, a request over the read limit, the client going away.
 */
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EARS, ears, isRunning } from "../helpers/spawn-ears.js";

function textOf(result: unknown): string {
  const { content } = result as { content: { type: string; text: string }[] };
  expect(content).toHaveLength(1);
  return content[0]!.text;
}

describe.runIf(process.platform === "linux")("ears mcp: results and messages it cannot pass on", () => {
  let client: Client;
  let transport: StdioClientTransport;
  const stderr: string[] = [];
  const closed: string[] = [];
  beforeAll(async () => {
    transport = new StdioClientTransport({ command: process.execPath, args: [EARS, "mcp", "--pool", "1"], stderr: "pipe" });
    transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")));
    client = new Client({ name: "test", version: "1" });
    client.onclose = () => closed.push("closed");
    await client.connect(transport);
  });
  afterAll(async () => {
    await client.close();
  });

  it("a 6 MB result is a ResultTooLarge failure telling the body to return less, and the session goes on", async () => {
    const big = await client.callTool({
      name: "run_code",
      arguments: { code: "return Array.from({ length: 60_000 }, (_, i) => ({ i, text: 'x'.repeat(80) }));" },
    });
    expect(big.isError).toBe(true);
    expect(textOf(big)).toMatch(
      /^ResultTooLarge: the result was 5\.\d MiB \(\d+ bytes\), over the limit of 1 MiB \(--max-result\), so it was dropped; .*Return less: a summary/,
    );
    const next = await client.callTool({ name: "run_code", arguments: { code: "return 'still here';" } });
    expect(textOf(next)).toBe('"still here"');
    expect(closed).toEqual([]);
  });

  it("sends a result under the limit once: one compact text, no structuredContent", async () => {
    const result = await client.callTool({
      name: "run_code",
      arguments: { code: "return Array.from({ length: 9000 }, (_, i) => ({ i, text: 'y'.repeat(80) }));" },
    });
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toBeUndefined();
    const text = textOf(result);
    expect(JSON.parse(text)).toHaveLength(9000);
    // Compact, not pretty-printed: a large value is not inflated by indentation.
    expect(text).toBe(JSON.stringify(JSON.parse(text)));
    expect(JSON.stringify(result).length).toBeLessThan(text.length * 1.1);
  });

  it("refuses a request over 10 MiB with an error naming the limit, and keeps serving", async () => {
    const code = `return ${JSON.stringify("z".repeat(11 * 1024 * 1024))}.length;`;
    await expect(client.callTool({ name: "run_code", arguments: { code } })).rejects.toThrow(
      /MCP error -32600: a message of 11 MiB, over ears mcp's limit of 10 MiB for one message, was not read\. Send less/,
    );
    const next = await client.callTool({ name: "run_code", arguments: { code: "return 2 + 2;" } });
    expect(textOf(next)).toBe("4");
    expect(isRunning(transport.pid!)).toBe(true);
    expect(closed).toEqual([]);
    expect(stderr.join("")).toContain("ears mcp: refused a message of 11 MiB, over ears mcp's limit of 10 MiB for one message (request ");
  });

  it("--max-result sets the limit, in units, and refuses one no client could read", async () => {
    const bad = await ears(["mcp", "--max-result", "6M"]);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/^ears: --max-result is at most 4M/);
  });
});

describe.runIf(process.platform === "linux")("ears mcp: who ended the session", () => {
  it("logs the client closing stdin and exits 0", async () => {
    const child = spawn(process.execPath, [EARS, "mcp", "--pool", "0"], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.stdout.resume();
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(stderr).toBe("ears mcp: the client ended the session: the client closed ears' stdin\n");
    expect(code).toBe(0);
  });
});
