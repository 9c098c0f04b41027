// What bubblewrap's `--info-fd` report costs a sandboxed start (the host reads the sandbox's init's pid from it:
// src/host/process/process-group.ts). Four ways of starting the same bwrap, interleaved, `runs` times each:
//   off       no report (stdio 0-2 piped, as the host's);
//   pipeOnly  a fourth pipe on descriptor 6, read by the host, no --info-fd (the cost of one more pipe);
//   flagPipe  --info-fd 6 on that pipe, read by the host (what runGuest does);
//   flagFile  --info-fd 6 on an unlinked temporary file, not read (what a file instead of a pipe would cost).
// The guest prints a line and waits for one on stdin: "hello" is the time from spawn() to that line, "exit" to
// bwrap's exit once answered. Medians in ms; the order rotates every repetition, a GC before each start
// (bench/lib/measure.mjs). Needs bwrap on PATH. Pin it to one CPU when the machine is shared:
//   taskset -c 0 node scripts/with-node.mjs 24 bench/tools/info-fd-cost.mjs [runs=100]
import { spawn } from "node:child_process";
import { closeSync, openSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const runs = Number(process.argv[2] ?? 100);
const base = ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"];
const guest = ["sh", "-c", "echo hello; read line"];
const piped = ["pipe", "pipe", "pipe"];
const variants = {
  off: () => ({ args: [...base, ...guest], stdio: piped }),
  pipeOnly: () => ({ args: [...base, ...guest], stdio: [...piped, "ignore", "ignore", "ignore", "pipe"] }),
  flagPipe: () => ({ args: [...base, "--info-fd", "6", ...guest], stdio: [...piped, "ignore", "ignore", "ignore", "pipe"] }),
  flagFile: () => {
    const path = `${tmpdir()}/ears-info-fd-cost-${process.pid}`;
    const fd = openSync(path, "wx+", 0o600);
    unlinkSync(path);
    return { fd, args: [...base, "--info-fd", "6", ...guest], stdio: [...piped, "ignore", "ignore", "ignore", fd] };
  },
};

function once(make) {
  return new Promise((resolve, reject) => {
    const { fd, args, stdio } = make();
    const started = process.hrtime.bigint();
    const child = spawn("bwrap", args, { stdio, detached: true });
    if (fd !== undefined) closeSync(fd);
    child.on("error", reject);
    child.stdio[6]?.resume?.();
    child.stderr.resume();
    let hello;
    child.stdout.once("data", () => {
      hello = Number(process.hrtime.bigint() - started) / 1e6;
      child.stdin.end("bye\n");
    });
    child.on("exit", (code) => {
      if (code !== 0 || hello === undefined) reject(new Error(`bwrap exited ${code} without its line`));
      else resolve({ hello, exit: Number(process.hrtime.bigint() - started) / 1e6 });
    });
  });
}

const contenders = Object.entries(variants).map(([name, make]) => ({ name, make }));
const { samples } = await alternate(contenders, runs, (contender) => once(contender.make));
for (const key of ["hello", "exit"]) {
  const row = Object.entries(samples).map(([name, list]) => `${name} ${summarize(list.map((r) => r[key])).median.toFixed(2)}`);
  console.log(`${key.padEnd(5)} ms: ${row.join("  ")}`);
}
console.log(`${runs} runs each on Node ${process.version}; NODE_EXTRA_CA_CERTS ${process.env.NODE_EXTRA_CA_CERTS ? "set" : "unset"}`);
