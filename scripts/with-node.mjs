#!/usr/bin/env node
// Runs a script with a given Node from the registry's builds (scripts/install-node.mjs), after making the code
// runner's V8 cache for that Node's V8 (scripts/runner-cache.mjs: the build makes one only for the Node that
// built), with that Node first on PATH. `npm run bench` runs bench/run.mjs this way on Node 24
// (EARS_BENCH_NODE=22.12.0 picks another, EARS_BENCH_NODE=current the node running npm).
//
//   node scripts/with-node.mjs <24 | 22.12.0 | current> <script> [args...]
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { installNode } from "./install-node.mjs";

const [version, script, ...rest] = process.argv.slice(2);
if (version === undefined || script === undefined) {
  console.error("usage: node scripts/with-node.mjs <24 | 22.12.0 | current> <script> [args...]");
  process.exit(64);
}
let node = process.execPath;
if (version !== "current") {
  try {
    node = installNode(version);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ""}` };
if (existsSync("dist/guest/code-runner.cjs")) {
  const cache = spawnSync(node, ["scripts/runner-cache.mjs"], { stdio: "inherit", env });
  if (cache.status !== 0) process.exit(cache.status ?? 1);
}
const run = spawnSync(node, [script, ...rest], { stdio: "inherit", env });
process.exit(run.status ?? 1);
