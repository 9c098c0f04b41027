/**
 * run_code's description names the run's limits and the fetch origins (issue 29 item 6), so a model does
 * not guess URLs or write a body that cannot finish. Read with the MCP SDK's own Client; nothing is fetched.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { EARS } from "../helpers/spawn-ears.js";

async function description(args: string[]): Promise<string> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EARS, "mcp", "--pool", "0", ...args], stderr: "pipe" });
  transport.stderr?.on("data", () => {});
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    return tools[0]!.description!;
  } finally {
    await client.close();
  }
}

describe("ears mcp's run_code description", () => {
  it("names the run time, memory and result size set on the command line, and the fetch origins", async () => {
    const text = await description([
      "--timeout",
      "20",
      "--memory",
      "256M",
      "--max-result",
      "512K",
      "--fetch-allow",
      "https://api.example.com/",
      "--fetch-allow",
      "http://127.0.0.1:8080",
    ]);
    expect(text).toContain("Each run has 20 s of run time, 256 MiB of memory, a result of at most 512 KiB as JSON: ");
    expect(text).toContain('`fetch` reaches only "https://api.example.com", "http://127.0.0.1:8080" (any other origin is refused');
  });

  it("names the defaults, and no fetch without --fetch-allow", async () => {
    const text = await description([]);
    expect(text).toContain("Each run has 50 s of run time, 1 GiB of memory, a result of at most 1 MiB as JSON: ");
    expect(text).not.toContain("`fetch`");
  });
});
