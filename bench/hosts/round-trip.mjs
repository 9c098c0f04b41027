// Scenario 3, one contender per process: `node round-trip.mjs <ears|mcp|echo> <calls> <warmup>`.
// Prints {"ms": …} for the timed calls (warm-up calls excluded, spawn and handshake excluded).
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
import { callArguments, childArgs } from "../lib/children.mjs";

const [contender, callsText, warmupText] = process.argv.slice(2);
const calls = Number(callsText);
const warmup = Number(warmupText);

async function ears() {
  const { runGuest } = await import("@posoco/ears/host");
  const report = await runGuest({
    command: process.execPath,
    args: childArgs("ears-calls.mjs"),
    input: { calls, warmup, concurrent: false },
    capabilities: { echo: (args) => args },
  });
  if (!report.ok) throw new Error(`the guest run failed: ${JSON.stringify(report.failure ?? report.outcome)} ${report.stderr ?? ""}`);
  return report.outcome.structured.ms;
}

async function mcp() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: childArgs("mcp-server.mjs"), stderr: "pipe" }));
  const call = async (i) => {
    const result = await client.callTool({ name: "echo", arguments: callArguments(i) });
    if (result.isError || result.structuredContent?.i !== i) throw new Error(`call ${i} got a wrong reply`);
  };
  for (let i = 0; i < warmup; i++) await call(i);
  const start = performance.now();
  for (let i = 0; i < calls; i++) await call(i);
  const ms = performance.now() - start;
  await client.close();
  return ms;
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
    child.stdin.write(`${JSON.stringify({ type: "request", id: i + 1, name: "echo", arguments: callArguments(i) })}\n`);
    if (JSON.parse(await reply).arguments.i !== i) throw new Error(`call ${i} got a wrong reply`);
  };
  for (let i = 0; i < warmup; i++) await call(i);
  const start = performance.now();
  for (let i = 0; i < calls; i++) await call(i);
  const ms = performance.now() - start;
  child.stdin.end();
  await new Promise((resolve) => child.on("close", resolve));
  return ms;
}

const run = { ears, mcp, echo }[contender];
if (run === undefined) throw new Error(`unknown contender ${contender}; use ears, mcp or echo`);
console.log(JSON.stringify({ ms: await run() }));
