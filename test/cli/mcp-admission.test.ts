/**
 * `ears mcp` under many concurrent tools/call (issue 28 item 4), driven by the MCP SDK's own Client over
 * stdio: the attack (40 calls on a pool of 2 ran 42 sandboxed runners at once) and `--max-runs`. The bodies
 * call a capability that counts the code runners alive under the server by probing /proc
 * (fixtures/cli/capabilities-runners.mjs), and holds each call until no new one came for a moment, so
 * every run that can be alive at once is.
 */
import { resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { defaultRunAdmission } from "../../src/host/index.js";
import { EARS, ears } from "../helpers/spawn-ears.js";

const CAPABILITIES = resolve("fixtures/cli/capabilities-runners.mjs");
const PROBE = 'const r = await ears.call("runners"); if (r.status === "failure") return r; return r.structured.most;';

/** Sends `calls` concurrent run_code calls to `ears mcp ...args`; the most runners any body saw alive. */
async function mostAlive(args: string[], calls: number): Promise<number> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    // --no-session: one session's calls run one at a time, and these are about calls running at once.
    args: [EARS, "mcp", "--no-session", "--capabilities", CAPABILITIES, "--allow", "runners", ...args],
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  try {
    const results = await Promise.all(
      Array.from({ length: calls }, () =>
        client.callTool({ name: "run_code", arguments: { code: PROBE } }, undefined, { timeout: 120_000 }),
      ),
    );
    // A call may find no runner free within the hello timeout when the machine is slow to start them (one loaded
    // CPU): it says so and nothing ran, which bounds nothing; every other call must have run and counted.
    const ran = results.filter((result) => {
      const text = (result.content as { text: string }[])[0]!.text;
      return !(result.isError === true && text.startsWith("HelloTimeout: no runner of the run pool was ready"));
    });
    const texts = ran.map((result) => {
      expect(result.isError, JSON.stringify(result.content)).toBe(false);
      return Number((result.content as { text: string }[])[0]!.text);
    });
    return Math.max(...texts);
  } finally {
    await client.close();
  }
}

describe.runIf(process.platform === "linux")("ears mcp: a bound on the bodies running at once", () => {
  it("40 concurrent calls on a pool of 2 never run more runners than the default cap", async () => {
    const most = await mostAlive(["--pool", "2"], 40);
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(defaultRunAdmission().maxConcurrentRuns);
  }, 180_000);

  it("--max-runs 2: 10 concurrent calls, never more than 2 runners alive, warm ones included", async () => {
    const most = await mostAlive(["--max-runs", "2"], 10);
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(2);
  }, 180_000);

  it("refuses a --max-runs that is not a whole number from 1, and a --pool larger than it (64)", async () => {
    const zero = await ears(["mcp", "--max-runs", "0"]);
    expect(zero.code).toBe(64);
    expect(zero.stderr).toBe('ears: --max-runs takes a whole number from 1 to 1024, got "0"\n');
    const pool = await ears(["mcp", "--max-runs", "2", "--pool", "3"]);
    expect(pool.code).toBe(64);
    expect(pool.stderr).toMatch(/^ears: --pool 3 is more than --max-runs 2: each warm runner is a running process/);
  });
});
