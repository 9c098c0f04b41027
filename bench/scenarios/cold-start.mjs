// Scenario 5: time from spawn() to the child's first line on stdout; and from runGuest() to the
// guest's hello, unconfined and in the bubblewrap sandbox (issue 9: the sandbox costs at most 1.3x);
// and the guest's hello under each JavaScript runtime, as .mjs and as .ts (issue 10).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runGuest } from "@posoco/ears/host";
import { childScript } from "../lib/children.mjs";
import { performance } from "node:perf_hooks";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const child = childScript;
const repository = fileURLToPath(new URL("../../", import.meta.url));

/** Bun and Deno from the dev dependencies (node_modules/.bin), or at EARS_BUN / EARS_DENO, as the tests find them. */
function findRuntime(name, variable) {
  const fromEnv = process.env[variable];
  if (fromEnv) return fromEnv;
  const installed = fileURLToPath(new URL(`../../node_modules/.bin/${name}`, import.meta.url));
  return existsSync(installed) ? installed : undefined;
}

/**
 * The guest's hello under each runtime, as .mjs and as .ts (Node runs .ts through tsx); a runtime that
 * is not installed is left out, with a note on stderr.
 */
function runtimeContenders() {
  const bun = findRuntime("bun", "EARS_BUN");
  const deno = findRuntime("deno", "EARS_DENO");
  const tsx = existsSync(fileURLToPath(new URL("../../node_modules/tsx/package.json", import.meta.url)));
  const missing = [...(bun ? [] : ["bun"]), ...(deno ? [] : ["deno"]), ...(tsx ? [] : ["tsx"])];
  if (missing.length > 0) process.stderr.write(`cold-start: not installed, rows left out: ${missing.join(", ")}\n`);
  const runs = [
    ["node", [process.execPath], "ears-hello.mjs"],
    ...(tsx ? [["node --import tsx", [process.execPath, "--import", "tsx"], "ears-hello.ts"]] : []),
    ...(bun
      ? [
          ["bun", [bun], "ears-hello.mjs"],
          ["bun", [bun], "ears-hello.ts"],
        ]
      : []),
    ...(deno
      ? [
          ["deno", [deno, "run", "-A"], "ears-hello.mjs"],
          ["deno", [deno, "run", "-A"], "ears-hello.ts"],
        ]
      : []),
  ];
  return runs.map(([label, runtime, script]) => ({
    name: `${label}: ears guest ${script.slice(script.lastIndexOf("."))}`,
    script: child(script),
    args: [],
    runtime,
    onFirstLine: (proc, line) => {
      if (JSON.parse(line).type !== "hello") throw new Error(`the guest's first line is not hello: ${line}`);
      proc.stdin.end('{"type":"invoke","protocol":1,"allowed":[],"input":null}\n');
    },
  }));
}

/**
 * Spawns `node script` (or `runtime... script`), resolves with the milliseconds until its first complete
 * line once it has exited.
 */
function spawnToFirstLine(script, args, onFirstLine, runtime = [process.execPath]) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const proc = spawn(runtime[0], [...runtime.slice(1), script, ...args], { stdio: ["pipe", "pipe", "pipe"], cwd: repository });
    let ms;
    let text = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8");
    proc.stdout.on("data", (data) => {
      if (ms !== undefined) return;
      text += data;
      if (text.includes("\n")) {
        ms = performance.now() - start;
        onFirstLine(proc, text.slice(0, text.indexOf("\n")));
      }
    });
    proc.stderr.on("data", (data) => (stderr += data));
    proc.stdin.on("error", () => {}); // the bare child may exit before we close its stdin
    proc.on("error", reject);
    proc.on("close", () => {
      if (ms === undefined) reject(new Error(`${script} exited without writing a line: ${stderr}`));
      else resolve(ms);
    });
  });
}

/**
 * The unconfined guest gets the sandbox's small environment too, so the ratio is the sandbox's own
 * cost: a host environment can slow Node's start by itself (NODE_EXTRA_CA_CERTS loads a file, say).
 */
const sandboxLikeEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };

/** Milliseconds from calling runGuest to the guest's first line (its hello), for a whole run that must succeed. */
async function runGuestToHello(sandbox) {
  const start = performance.now();
  let ms;
  const report = await runGuest({
    command: process.execPath,
    args: [child("ears-hello.mjs")],
    cwd: repository,
    sandbox,
    env: sandboxLikeEnv,
    onFrame: (direction) => {
      if (direction === "guest" && ms === undefined) ms = performance.now() - start;
    },
  });
  if (!report.ok || ms === undefined) throw new Error(`runGuest (sandbox: ${sandbox}) failed: ${report.failure?.message ?? report.stderr}`);
  if ((report.sandbox !== null) !== sandbox)
    throw new Error(`runGuest (sandbox: ${sandbox}) ran ${report.sandbox === null ? "unconfined" : "sandboxed"}`);
  return ms;
}

export async function coldStart({ quick }) {
  const repetitions = quick ? 6 : 20;
  const contenders = [
    {
      name: "ears guest (import @posoco/ears, serve)",
      script: child("ears-hello.mjs"),
      args: [],
      onFirstLine: (proc, line) => {
        if (JSON.parse(line).type !== "hello") throw new Error(`the guest's first line is not hello: ${line}`);
        proc.stdin.end('{"type":"invoke","protocol":1,"allowed":[],"input":null}\n');
      },
    },
    { name: "bare node writing one line", script: child("bare-line.mjs"), args: [], onFirstLine: (proc) => proc.stdin.end() },
    {
      name: "MCP SDK stdio server (McpServer + StdioServerTransport)",
      script: child("mcp-server.mjs"),
      args: ["ready-line"],
      // An MCP SDK server does not exit when stdin ends (see the reference notes), so it is stopped.
      onFirstLine: (proc) => proc.kill("SIGTERM"),
    },
  ];
  const { samples } = await alternate(
    contenders,
    repetitions,
    (c) => spawnToFirstLine(c.script, c.args, c.onFirstLine),
    (c) => spawnToFirstLine(c.script, c.args, c.onFirstLine),
  );
  const rows = contenders.map((c) => ({ contender: c.name, unit: "ms", summary: summarize(samples[c.name]) }));
  // runGuest unconfined and sandboxed, alternated with each other (the host's whole path to the hello).
  const hosts = [
    { name: "runGuest, unconfined: start to hello", sandbox: false },
    { name: "runGuest, sandboxed (bubblewrap): start to hello", sandbox: true },
  ];
  const hosted = await alternate(
    hosts,
    repetitions,
    (c) => runGuestToHello(c.sandbox),
    (c) => runGuestToHello(c.sandbox),
  );
  const [unconfined, sandboxed] = hosts.map((c) => ({ contender: c.name, unit: "ms", summary: summarize(hosted.samples[c.name]) }));
  rows.push(unconfined, sandboxed);
  // The hello under each runtime, alternated among themselves (issue 10: a cold-start row per runtime).
  const perRuntime = runtimeContenders();
  const run = (c) => spawnToFirstLine(c.script, c.args, c.onFirstLine, c.runtime);
  const byRuntime = await alternate(perRuntime, repetitions, run, run);
  for (const c of perRuntime) rows.push({ contender: c.name, unit: "ms", summary: summarize(byRuntime.samples[c.name]) });
  return {
    id: "cold-start",
    title: "5. Cold start: spawn to first line (hello)",
    setup: { repetitions },
    rows,
    targets: [
      { target: "cold start vs bare node", measured: rows[0].summary.median / rows[1].summary.median, op: "<=", required: 1.2 },
      {
        target: "sandboxed vs unconfined cold start (runGuest)",
        measured: sandboxed.summary.median / unconfined.summary.median,
        op: "<=",
        required: 1.3,
      },
    ],
  };
}
