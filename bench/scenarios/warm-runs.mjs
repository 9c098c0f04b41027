// Scenario 8 (issue 20): warm runs. A pooled runCode (a runner started ahead, already in its sandbox)
// next to a cold runCode of the same body with one capability call, both in the default sandbox,
// alternating; from the call to the report (what a host awaits: the runner is gone by then) and to the
// result frame. Each timed run follows a pause of PAUSE_MS, as a host's runs follow a model's turn: the
// pool starts a replacement after each run, and that spawn (which blocks the event loop) belongs to the
// pause, not to the next run. Back to back, without pauses, is the throughput rows' case: bodies per
// second with 2 and with 8 runs in flight, cold and pooled (a pool as large as the runs in flight).
import { performance } from "node:perf_hooks";
import { createRunAdmission, createRunPool, runCode } from "@posoco/ears/host";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const BODY =
  'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\n' +
  "return (r.structured as { sum: number }).sum * 2;";
const capabilities = { add: ({ a, b }) => ({ sum: a + b }) };
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };
/** The pause before each timed run of the latency rows (both contenders alike). */
const PAUSE_MS = 250;

/** Milliseconds from the call to the report and to the result frame, for a run that must give 6. */
async function timedRun(pool) {
  const start = performance.now();
  let resultMs;
  const onFrame = (direction, line) => {
    if (direction === "guest" && resultMs === undefined && line.includes('"type":"result"')) resultMs = performance.now() - start;
  };
  const report = await runCode({ code: BODY, env, capabilities, onFrame, ...(pool === undefined ? {} : { pool }) });
  const reportMs = performance.now() - start;
  if (!report.ok || report.outcome.structured !== 6 || resultMs === undefined || (pool !== undefined) !== (report.pooled === true)) {
    throw new Error(`warm-runs: the run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)} ${report.stderr ?? ""}`);
  }
  return { reportMs, resultMs };
}

/** Bodies per second: `bodies` runs, `inFlight` at a time. */
async function throughput(bodies, inFlight, pool) {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < bodies) {
      next += 1;
      await timedRun(pool);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return bodies / ((performance.now() - start) / 1000);
}

/** `run` after {@link PAUSE_MS}. */
async function paused(run) {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  return run();
}

/**
 * A pool with run slots of its own: each runner, idle or serving, holds a slot of its admission, so pools on
 * the process-wide one (8 slots) would leave the cold runs alternated with them none.
 */
function ownPool(size) {
  return createRunPool({ size, env, admission: createRunAdmission({ maxConcurrentRuns: size }) });
}

/** Waits until a fresh pool's runners have started (a pooled run's first body must not pay their start). */
async function warmed(pool) {
  await timedRun(pool);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return pool;
}

export async function warmRuns({ quick }) {
  const repetitions = quick ? 6 : 30;
  const pool = await warmed(ownPool(2));
  try {
    const contenders = [
      { name: "cold", run: () => paused(() => timedRun(undefined)) },
      { name: "pooled", run: () => paused(() => timedRun(pool)) },
    ];
    const { samples } = await alternate(
      contenders,
      repetitions,
      (c) => c.run(),
      (c) => c.run(),
    );
    const rows = [
      { contender: "cold runCode (sandbox auto): call to report", unit: "ms", summary: summarize(samples.cold.map((s) => s.reportMs)) },
      { contender: "pooled runCode (pool of 2): call to report", unit: "ms", summary: summarize(samples.pooled.map((s) => s.reportMs)) },
      { contender: "cold runCode: call to result frame", unit: "ms", summary: summarize(samples.cold.map((s) => s.resultMs)) },
      { contender: "pooled runCode: call to result frame", unit: "ms", summary: summarize(samples.pooled.map((s) => s.resultMs)) },
    ];
    const bodies = quick ? 16 : 48;
    const rounds = quick ? 1 : 3;
    for (const inFlight of [2, 8]) {
      const inFlightPool = await warmed(ownPool(inFlight));
      try {
        const flows = [
          { name: "cold", run: () => throughput(bodies, inFlight, undefined) },
          { name: "pooled", run: () => throughput(bodies, inFlight, inFlightPool) },
        ];
        const { samples: rates } = await alternate(flows, rounds, (c) => c.run());
        rows.push(
          { contender: `cold runCode, ${inFlight} in flight: throughput`, unit: "bodies/s", summary: summarize(rates.cold) },
          {
            contender: `pooled runCode (pool of ${inFlight}), ${inFlight} in flight: throughput`,
            unit: "bodies/s",
            summary: summarize(rates.pooled),
          },
        );
      } finally {
        await inFlightPool.close();
      }
    }
    return {
      id: "warm-runs",
      title: "8. Warm runs: pooled runCode vs cold runCode of the same body with one call (default sandbox)",
      setup: { repetitions, pauseMs: PAUSE_MS, body: BODY, throughput: { bodies, rounds } },
      rows,
      targets: [
        {
          target: "pooled / cold runCode, call to report",
          measured: rows[1].summary.median / rows[0].summary.median,
          op: "<=",
          required: 0.3,
        },
      ],
      context: {
        "pooled runCode, call to report: median ms (aim <= 5)": rows[1].summary.median,
        "pooled / cold runCode, call to result frame": rows[3].summary.median / rows[2].summary.median,
      },
    };
  } finally {
    await pool.close();
  }
}
