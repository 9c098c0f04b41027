/**
 * `ears mcp` has a run time limit by default (50 s, `--timeout` sets another): a body that never ends is
 * stopped and its run slot freed, instead of holding one of --max-runs for good; the default is in
 * `--help` and in run_code's description. Driven by the MCP SDK's own Client over stdio, a real process.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { MCP_RUN_TIMEOUT_MS } from "../../src/cli/mcp-admission.js";
import { EARS, ears } from "../helpers/spawn-ears.js";

function text(result: Awaited<ReturnType<Client["callTool"]>>): string {
  return (result.content as { type: string; text: string }[]).map((part) => part.text).join("\n");
}

describe("ears mcp's run time limit", () => {
  it("is 50 seconds by default, said in --help", async () => {
    expect(MCP_RUN_TIMEOUT_MS).toBe(50_000);
    const help = await ears(["mcp", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout.replace(/\s+/g, " ")).toContain(
      "--timeout is 50 seconds by default here (a body that never ends would hold a run slot for good)",
    );
  });

  it.runIf(process.platform === "linux")(
    "stops a body that loops forever at --timeout with a RunTimeout, and its one run slot serves the next body",
    async () => {
      // One slot, no warm runner: if the looping body kept its slot, the second call would wait and fail QueueTimeout.
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [EARS, "mcp", "--timeout", "1", "--max-runs", "1", "--pool", "0"],
        stderr: "pipe",
      });
      transport.stderr?.on("data", () => {});
      const client = new Client({ name: "test", version: "1" });
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        expect(tools[0]!.description).toContain("Each run has 1 s of run time, ");
        const looping = await client.callTool({ name: "run_code", arguments: { code: "for (;;) {}" } }, undefined, { timeout: 30_000 });
        expect(looping.isError).toBe(true);
        // The limit is named as this server's user sets it, not as runCode's option.
        expect(text(looping)).toMatch(
          /^RunTimeout: the code ran longer than 1 s, the most a run may take here \(--timeout\), and was stopped: /,
        );
        const next = await client.callTool({ name: "run_code", arguments: { code: "return 6 * 7;" } }, undefined, { timeout: 30_000 });
        expect(next.isError).toBe(false);
        expect(text(next)).toBe("42");
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});
