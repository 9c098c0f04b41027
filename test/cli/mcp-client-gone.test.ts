/**
 * A client that goes away right after reading its answer is a normal end of `ears mcp`: exit 0 and one line,
 * `ears mcp: the client ended the session: …` (nothing with --quiet), never a write failure such as
 * `could not write the result: … (EPIPE)`, whether it closes politely (the MCP SDK's client), drops both
 * pipes at once, or leaves a second run still going that writes on its stderr while ears stops it.
 */
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { EARS } from "../helpers/spawn-ears.js";

const ENDED = /^ears mcp: the client ended the session: the client closed (ears' stdin|its end of ears' stdout)$/;

/** What ears mcp wrote on stderr, as lines, and its exit code, once it has exited. */
type Ended = { lines: string[]; code: number | null };

/**
 * A raw JSON-RPC client: initializes, calls run_code with `first` (and `second` at once, when given), and
 * when the first answer arrives (and, with `second`, once ears' stderr shows that body running), drops both
 * of its pipes at once, as a client process that exits does.
 */
function rawClient(
  args: string[],
  first: string,
  second?: string,
  how: "both pipes" | "stdin" = "both pipes",
): Promise<Ended & { answer: unknown }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EARS, "mcp", ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    let answer: unknown;
    let answered = false;
    const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
    const leave = () => {
      if (!answered || (second !== undefined && !stderr.includes("[info] second is running"))) return;
      if (how === "stdin") {
        child.stdin.end();
        return;
      }
      child.stdout.destroy();
      child.stdin.destroy();
    };
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      leave();
    });
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        const message = JSON.parse(buffered.slice(0, end)) as { id?: number; result?: unknown };
        buffered = buffered.slice(end + 1);
        if (message.id === 1) {
          send({ jsonrpc: "2.0", method: "notifications/initialized" });
          send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "run_code", arguments: { code: first } } });
          if (second !== undefined) {
            send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "run_code", arguments: { code: second } } });
          }
        } else if (message.id === 2) {
          answer = message.result;
          answered = true;
          leave();
        }
      }
    });
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "gone", version: "1" } },
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, answer, lines: stderr.split("\n").filter(Boolean) }));
  });
}

describe.runIf(process.platform === "linux")("ears mcp: a client that goes away after its answer", () => {
  it("the MCP SDK's client closing right after reading its answer: exit 0, one line", async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [EARS, "mcp", "--pool", "0"], stderr: "pipe" });
    let stderr = "";
    // Ends when ears has exited and its stderr is complete.
    const ended = new Promise<void>((resolve) => {
      transport.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8"))).once("end", resolve);
    });
    const client = new Client({ name: "gone", version: "1" });
    await client.connect(transport);
    const result = await client.callTool({ name: "run_code", arguments: { code: "return 1 + 1;" } });
    expect(result.content).toEqual([{ type: "text", text: "2" }]);
    await client.close();
    await ended;
    expect(stderr.split("\n").filter(Boolean)).toEqual([expect.stringMatching(ENDED)]);
  });

  it("a client that drops both pipes after its answer, another run still going: exit 0, one line, no write failure", async () => {
    const { code, answer, lines } = await rawClient(
      ["--pool", "0"],
      "return 2;",
      'console.log("second is running"); await new Promise(() => {});',
    );
    expect(answer).toMatchObject({ content: [{ type: "text", text: "2" }] });
    expect(lines.filter((line) => line.startsWith("ears"))).toEqual([expect.stringMatching(ENDED)]);
    expect(lines.join("\n")).not.toMatch(/EPIPE|could not write|failed/);
    expect(code).toBe(0);
  });

  it("what a run being stopped writes after the client left (a result it cannot write, EPIPE) is not shown", async () => {
    // The second body writes on its stderr the moment ears closes its input (ears stopping it), before its runner
    // can exit (a write to a pipe is synchronous on Linux), and on until it ends.
    const { code, lines } = await rawClient(
      ["--pool", "0"],
      "return 2;",
      'const say = () => process.stderr.write("ears: could not write the result (EPIPE)\\n");\n' +
        'process.stdin.once("end", () => (say(), setInterval(say, 1)));\n' +
        'console.log("second is running");\nawait new Promise(() => {});',
      "stdin",
    );
    expect(lines).toEqual(["[info] second is running", expect.stringMatching(ENDED)]);
    expect(code).toBe(0);
  });

  it("with --quiet it says nothing at all", async () => {
    const { code, lines } = await rawClient(["--pool", "0", "--quiet"], "return 2;");
    expect(lines).toEqual([]);
    expect(code).toBe(0);
  });
});
