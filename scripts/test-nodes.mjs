#!/usr/bin/env node
// The README's test command (`npm test`, after its pretest: system packages and the build) and CI's (.ci/run):
// the type tests, the whole suite and the host-memory scenarios on Node 24 (the active LTS), the suite's fast part
// (vitest.fast.config.ts) on Node 22.12.0 (the oldest release the package supports: package.json's engines), and
// lint; then each Node version's counts and one plain total line, "N passed, N failed" (scripts/summarize-tests.mjs).
// The Node builds come from the npm registry's node-linux-<arch> packages, unpacked into a cache outside the clone
// (scripts/install-node.mjs). Each Node gets the runner's code cache for its own V8 first (scripts/runner-cache.mjs).
//
//   EARS_TEST_NODES="24:full,22.12.0:fast"   the default; "current" runs the whole suite on the node running this only
//                                            (offline, or to try a change quickly); a version that cannot be installed
//                                            counts as a failure, it is never skipped
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { installNode } from "./install-node.mjs";

const DEFAULT_NODES = "24:full,22.12.0:fast";
const spec = process.env.EARS_TEST_NODES?.trim() || DEFAULT_NODES;
const runs =
  spec === "current"
    ? [{ version: process.versions.node, part: "full", current: true }]
    : spec.split(",").map((entry) => {
        const [version, part = "full"] = entry.trim().split(":");
        if (!/^\d+(\.\d+){0,2}$/.test(version ?? "") || !["full", "fast"].includes(part)) {
          console.error(
            `test-nodes: EARS_TEST_NODES takes VERSION:full or VERSION:fast, comma-separated (e.g. ${DEFAULT_NODES}), not "${entry}"`,
          );
          process.exit(64);
        }
        return { version, part, current: false };
      });

const seconds = (started) => Math.round((Date.now() - started) / 1000);
const timings = [];
/** Runs a step with its output on ours; its exit status, 1 when it could not start. */
function step(name, command, args, env = process.env) {
  const started = Date.now();
  console.error(`\ntest-nodes: ${name}`);
  const run = spawnSync(command, args, { stdio: "inherit", env });
  const status = run.status ?? 1;
  timings.push(`${name}: ${seconds(started)} s${status === 0 ? "" : ` (exit status ${status})`}`);
  return status;
}

const allStarted = Date.now();
const summary = [];
summary.push(
  "--label",
  "type tests",
  "--check",
  `type tests (tsc -p test-d)=${step("type tests (tsc -p test-d)", "npx", ["tsc", "-p", "test-d/tsconfig.json"])}`,
  // The build checks src/ only; the tests and scripts are TypeScript strict too.
  "--check",
  `type check (tsc -p tsconfig.json)=${step("type check (tsc -p tsconfig.json)", "npx", ["tsc", "-p", "tsconfig.json", "--noEmit"])}`,
);
for (const run of runs) {
  let node = process.execPath;
  if (!run.current) {
    try {
      node = installNode(run.version);
    } catch (error) {
      console.error(`test-nodes: ${error.message}`);
      summary.push("--label", `Node ${run.version}`, "--check", `installing Node ${run.version} from the registry=1`);
      continue;
    }
  }
  const exact = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim().replace(/^v/, "");
  const label = `Node ${exact}${run.part === "fast" ? " (the suite's fast part)" : ""}`;
  // Child processes that start `node` by name (npm, npx, shebangs) get this Node too.
  const env = { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ""}` };
  summary.push("--label", label);
  summary.push(
    "--check",
    `the runner's code cache for Node ${exact}=${step(`Node ${exact}: the runner's code cache`, node, ["scripts/runner-cache.mjs"], env)}`,
  );
  const vitest = ["node_modules/vitest/vitest.mjs", "run", "--reporter=default", "--reporter=json"];
  const report = `.vitest-report.node-${exact}.json`;
  rmSync(report, { force: true });
  if (run.part === "full") {
    const memory = `.vitest-memory-report.node-${exact}.json`;
    rmSync(memory, { force: true });
    step(`Node ${exact}: the suite`, node, [...vitest, `--outputFile=${report}`], env);
    step(
      `Node ${exact}: the host-memory scenarios`,
      node,
      [...vitest, "--config", "vitest.memory.config.ts", `--outputFile=${memory}`],
      env,
    );
    summary.push(report, memory);
  } else {
    step(`Node ${exact}: the suite's fast part`, node, [...vitest, "--config", "vitest.fast.config.ts", `--outputFile=${report}`], env);
    summary.push(report);
  }
}
summary.push("--label", "lint", "--check", `lint (ESLint, Prettier)=${step("lint", "npm", ["run", "lint"])}`);

console.log(`\ntest-nodes: times (${seconds(allStarted)} s in all)\n  ${timings.join("\n  ")}`);
const counted = spawnSync(process.execPath, ["scripts/summarize-tests.mjs", ...summary], { stdio: "inherit" });
process.exit(counted.status ?? 1);
