// `npm run bench` (after `npm run build`): runs the six scenarios of issue 5 for @posoco/ears and its
// peers, prints one table per scenario and a table of targets (ratio, required, PASS/MISS), and writes
// the same figures as JSON to bench/results.json.
//   --quick        fewer repetitions and smaller sizes (under a minute); a check before changing the
//                  framing or the serve loop, not a measurement to quote
//   --only=a,b     run only these scenarios (ids: decode, long-frames, round-trip, concurrency,
//                  cold-start, large-payload, code-body, typecheck, warm-runs, remote-runs,
//                  pooled-session, peers, code-tool, landlock-runs)
//   --out=FILE     write the JSON elsewhere
import { writeFileSync, existsSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem, platform, release } from "node:os";
import { fileURLToPath } from "node:url";
import { decodeThroughput } from "./scenarios/decode.mjs";
import { longFrames } from "./scenarios/long-frames.mjs";
import { roundTrip } from "./scenarios/round-trip.mjs";
import { concurrency } from "./scenarios/concurrency.mjs";
import { coldStart } from "./scenarios/cold-start.mjs";
import { largePayload } from "./scenarios/large-payload.mjs";
import { codeBody } from "./scenarios/code-body.mjs";
import { typecheck } from "./scenarios/typecheck.mjs";
import { warmRuns } from "./scenarios/warm-runs.mjs";
import { remoteRuns } from "./scenarios/remote-runs.mjs";
import { pooledSession } from "./scenarios/pooled-session.mjs";
import { peers } from "./scenarios/peers.mjs";
import { codeToolOverhead } from "./scenarios/code-tool.mjs";
import { landlockRuns } from "./scenarios/landlock-runs.mjs";
import { fmt, fmtSpread, table } from "./lib/stats.mjs";

const SCENARIOS = [
  ["decode", decodeThroughput],
  ["long-frames", longFrames],
  ["round-trip", roundTrip],
  ["concurrency", concurrency],
  ["cold-start", coldStart],
  ["large-payload", largePayload],
  ["code-body", codeBody],
  ["typecheck", typecheck],
  ["warm-runs", warmRuns],
  ["remote-runs", remoteRuns],
  ["pooled-session", pooledSession],
  ["peers", peers],
  ["code-tool", codeToolOverhead],
  ["landlock-runs", landlockRuns],
];

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const only = args
  .find((a) => a.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
const out = args.find((a) => a.startsWith("--out="))?.slice("--out=".length) ?? fileURLToPath(new URL("results.json", import.meta.url));
const unknown = args.filter((a) => a !== "--quick" && !a.startsWith("--only=") && !a.startsWith("--out="));
if (unknown.length > 0) {
  console.error(`bench: unknown argument ${unknown.join(" ")}; use --quick, --only=<ids> or --out=<file>`);
  process.exit(2);
}
if (!existsSync(fileURLToPath(new URL("../dist/host/index.js", import.meta.url)))) {
  console.error("bench: dist/ is missing or incomplete; run `npm run build` first (`npm run bench` does)");
  process.exit(2);
}
for (const id of only ?? []) {
  if (!SCENARIOS.some(([known]) => known === id)) {
    console.error(`bench: unknown scenario ${id}; known: ${SCENARIOS.map(([known]) => known).join(", ")}`);
    process.exit(2);
  }
}

const machine = {
  cpus: availableParallelism(),
  cpuModel: cpus()[0]?.model ?? "unknown",
  memoryGB: Math.round(totalmem() / 1e9),
  node: process.version,
  platform: `${platform()} ${release()}`,
  loadAverageAtStart: loadavg().map((n) => Number(n.toFixed(2))),
};
const started = new Date();
console.log(`@posoco/ears benchmark${quick ? " (--quick: small sizes, few repetitions; not for quoting)" : ""}`);
const hardware = `${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGB} GB`;
console.log(`${hardware}, Node ${machine.node}, ${machine.platform}, load average ${machine.loadAverageAtStart.join(" ")}\n`);

const results = [];
for (const [id, scenario] of SCENARIOS) {
  if (only !== undefined && !only.includes(id)) continue;
  const began = Date.now();
  process.stderr.write(`running ${id}…\n`);
  const result = await scenario({ quick });
  result.seconds = (Date.now() - began) / 1000;
  // Every row and target says which Node measured it (figures from different Nodes are not comparable).
  for (const row of [...(result.rows ?? []), ...(result.targets ?? [])]) row.node = process.version;
  results.push(result);
  // A scenario with a table of its own (peers: medians and p90s per body, isolation lines) prints that instead.
  console.log(result.text ?? scenarioTable(result));
  console.log("");
}

const targets = results.flatMap((r) => r.targets.map((t) => ({ scenario: r.id, ...t, pass: compare(t.measured, t.op, t.required) })));
console.log(`Targets (ratios and limits from issue 5, all measured in this run, on Node ${process.version})`);
console.log(
  table(
    ["Scenario", "Target", "Measured", "Required", "Result"],
    targets.map((t) => [t.scenario, t.target, fmt(t.measured), `${t.op} ${fmt(t.required)}`, t.pass ? "PASS" : "MISS"]),
  ),
);
const contexts = results.filter((r) => r.context !== undefined);
for (const r of contexts) {
  for (const [label, value] of Object.entries(r.context)) console.log(`  context (${r.id}): ${label} = ${fmt(value)}`);
}
const passed = targets.filter((t) => t.pass).length;
machine.loadAverageAtEnd = loadavg().map((n) => Number(n.toFixed(2)));
const elapsedSeconds = ((Date.now() - started.getTime()) / 1000).toFixed(0);
console.log(`\n${passed} of ${targets.length} targets met; load average at end ${machine.loadAverageAtEnd.join(" ")}; ${elapsedSeconds} s`);

writeFileSync(out, `${JSON.stringify({ quick, startedAt: started.toISOString(), machine, scenarios: results, targets }, null, 2)}\n`);
console.log(`figures written to ${out}`);

function compare(measured, op, required) {
  if (!Number.isFinite(measured)) return false;
  switch (op) {
    case ">=":
      return measured >= required;
    case "<=":
      return measured <= required;
    case "<":
      return measured < required;
    default:
      throw new Error(`unknown comparison ${op}`);
  }
}

function scenarioTable(result) {
  const rows = result.rows.map((row) => {
    let value = fmtSpread(row.summary);
    let runs = String(row.summary.n);
    if (row.overBudgetMs !== undefined) {
      value = `> ${fmt(row.overBudgetMs / 1000)} s`;
      if (row.summary.n > 0) value += ` (finished: ${fmtSpread(row.summary)} ms)`;
      runs = `${row.summary.n} + 1 cut off`;
    }
    return [row.contender, value, row.unit, runs, row.note ?? ""];
  });
  return `${result.title}\n${table(["Contender", "Median (min–max)", "Unit", "Runs", "Note"], rows)}`;
}
