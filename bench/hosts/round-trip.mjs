// Scenario 3, one contender per process: `node round-trip.mjs <ears|mcp|jsonrpc|echo> <calls> <warmup>`.
// Prints {"ms", "hostCpuUs", "childCpuUs"} for the timed calls (warm-up calls, spawn and handshake
// excluded). "host" is this process (the side that answers for ears, the side that calls for the
// peers); "child" is the other process.
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { callArguments, childArgs, processCpuUs } from "../lib/children.mjs";

const [contender, callsText, warmupText] = process.argv.slice(2);
const calls = Number(callsText);
const warmup = Number(warmupText);

const cpuNow = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function ears() {
  const { runGuest } = await import("@posoco/ears/host");
  let hostCpuUs;
  const report = await runGuest({
    command: process.execPath,
    args: childArgs("ears-calls.mjs"),
    input: { calls, warmup, concurrent: false },
    capabilities: {
      echo: (args) => {
        // The guest numbers warm-up calls below 0, so the first and last timed calls are known here.
        if (args.i === 0) hostCpuUs = -cpuNow();
        if (args.i === calls - 1) hostCpuUs += cpuNow();
        return args;
      },
    },
  });
  if (!report.ok) throw new Error(`the guest run failed: ${JSON.stringify(report.failure ?? report.outcome)} ${report.stderr ?? ""}`);
  const { ms, cpuUs } = report.outcome.structured;
  return { ms, hostCpuUs, childCpuUs: cpuUs };
}

async function mcp() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const client = new Client({ name: "bench", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: process.execPath, args: childArgs("mcp-server.mjs"), stderr: "pipe" });
  await client.connect(transport);
  const call = async (i) => {
    const result = await client.callTool({ name: "echo", arguments: callArguments(i) });
    if (result.isError || result.structuredContent?.i !== i) throw new Error(`call ${i} got a wrong reply`);
  };
  return timedLoop(call, transport.pid, () => client.close());
}

async function jsonrpc() {
  const { default: rpc } = await import("vscode-jsonrpc/node.js");
  const child = spawn(process.execPath, childArgs("jsonrpc-server.mjs"), { stdio: ["pipe", "pipe", "ignore"] });
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
  connection.listen();
  const call = async (i) => {
    const reply = await connection.sendRequest("echo", callArguments(i));
    if (reply?.i !== i) throw new Error(`call ${i} got a wrong reply`);
  };
  return timedLoop(call, child.pid, async () => {
    connection.dispose();
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
  });
}

async function echo() {
  const child = spawn(process.execPath, childArgs("echo.mjs"), { stdio: ["pipe", "pipe", "ignore"] });
  let pending = "";
  let waiting;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (text) => {
    pending += text;
    const newline = pending.indexOf("\n");
    if (newline >= 0 && waiting !== undefined) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      const resolve = waiting;
      waiting = undefined;
      resolve(line);
    }
  });
  const call = async (i) => {
    const reply = new Promise((resolve) => (waiting = resolve));
    child.stdin.write(`${JSON.stringify({ type: "request", id: i + warmup + 1, name: "echo", arguments: callArguments(i) })}\n`);
    if (JSON.parse(await reply).arguments.i !== i) throw new Error(`call ${i} got a wrong reply`);
  };
  return timedLoop(call, child.pid, async () => {
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
  });
}

/** The peers' loop: warm-up calls, then the timed calls, with this process's and the child's CPU time. */
async function timedLoop(call, childPid, close) {
  for (let i = -warmup; i < 0; i++) await call(i);
  const childBefore = processCpuUs(childPid);
  const hostBefore = cpuNow();
  const start = performance.now();
  for (let i = 0; i < calls; i++) await call(i);
  const ms = performance.now() - start;
  const hostCpuUs = cpuNow() - hostBefore;
  const childAfter = processCpuUs(childPid);
  await close();
  return { ms, hostCpuUs, childCpuUs: childBefore === undefined ? undefined : childAfter - childBefore };
}

const run = { ears, mcp, jsonrpc, echo }[contender];
if (run === undefined) throw new Error(`unknown contender ${contender}; use ears, mcp, jsonrpc or echo`);
console.log(JSON.stringify(await run()));
