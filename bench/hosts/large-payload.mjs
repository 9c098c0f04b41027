// Scenario 6, one run per process: `node large-payload.mjs <result|reply|bare> <bytes>`. Prints wall
// time, the peak RSS of this process (the host, or the reader for "bare") and of the child, and the
// size of the line that carried the payload. "bare" is the floor: a child writes the same value as
// one JSON line, this process reads, splits and parses it, with no protocol at all.
import { spawn } from "node:child_process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance } from "node:perf_hooks";
import { runGuest } from "@posoco/ears/host";
import { childArgs } from "../lib/children.mjs";
import { largeValue } from "../lib/payloads.mjs";
import { peakRssFrom } from "../children/peak-rss.mjs";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
const [mode, bytesText] = process.argv.slice(2);
const bytes = Number(bytesText);

async function bare() {
  const start = performance.now();
  const child = spawn(process.execPath, childArgs("bare-large.mjs", String(bytes)), { stdio: ["ignore", "pipe", "pipe"] });
  const parts = [];
  let stderr = "";
  child.stdout.on("data", (chunk) => parts.push(chunk));
  child.stderr.on("data", (text) => (stderr += text));
  await new Promise((resolve) => child.on("close", resolve));
  const line = Buffer.concat(parts);
  parts.length = 0;
  const value = JSON.parse(line.toString("utf8"));
  if (!Array.isArray(value.records)) throw new Error("the bare writer sent something else");
  return { wallMs: performance.now() - start, frameBytes: line.length, childPeakRss: peakRssFrom(stderr) };
}

async function ears() {
  let buildMs = 0;
  let frameBytes = 0;
  const start = performance.now();
  const report = await runGuest({
    command: process.execPath,
    args: childArgs("ears-large.mjs"),
    input: { mode, bytes },
    capabilities: {
      fetch: () => {
        const built = performance.now();
        const value = largeValue(bytes, gc); // the generator's garbage is the benchmark's, not the runtime's
        buildMs = performance.now() - built;
        return value;
      },
    },
    onFrame: (_direction, line) => {
      if (line.length > frameBytes) frameBytes = Buffer.byteLength(line);
    },
  });
  const wallMs = performance.now() - start;
  if (!report.ok)
    throw new Error(`the guest run failed: ${JSON.stringify(report.failure ?? report.outcome).slice(0, 500)} ${report.stderr}`);
  if (mode === "result") {
    if (!Array.isArray(report.outcome.structured?.records)) throw new Error("the result lost its records");
    const built = report.logs.find((log) => log.content.startsWith("{"));
    if (built !== undefined) buildMs = JSON.parse(built.content).buildMs;
  }
  return { wallMs, buildMs, frameBytes, childPeakRss: peakRssFrom(report.stderr) };
}

if (!["result", "reply", "bare"].includes(mode) || !(bytes >= 0)) {
  throw new Error("usage: large-payload.mjs <result|reply|bare> <bytes>");
}
const measured = mode === "bare" ? await bare() : await ears();
console.log(JSON.stringify({ ...measured, parentPeakRss: process.resourceUsage().maxRSS * 1024 }));
