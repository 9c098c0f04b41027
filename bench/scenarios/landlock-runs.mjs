// Scenario (issue 42): the two confinement mechanisms side by side. A cold runCode and a pooled one (a runner
// started ahead) of the same body with one capability call, under bubblewrap and under Landlock (the ears-confine
// helper), alternating, each after a pause (as warm-runs.mjs does: a pool's replacement spawn belongs to the pause).
// From the call to the report.
import { performance } from "node:perf_hooks";
import { createRunAdmission, createRunPool, runCode } from "@posoco/ears/host";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const BODY =
  'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\n' +
  "return (r.structured as { sum: number }).sum * 2;";
const capabilities = { add: ({ a, b }) => ({ sum: a + b }) };
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };
const PAUSE_MS = 250;
const MECHANISMS = ["bubblewrap", "landlock"];

/** Milliseconds from the call to the report, for a run that must give 6 under `mechanism`. */
async function timedRun(mechanism, pool) {
  const start = performance.now();
  const report = await runCode({ code: BODY, env, capabilities, sandbox: { mechanism }, ...(pool === undefined ? {} : { pool }) });
  const ms = performance.now() - start;
  if (!report.ok || report.outcome.structured !== 6 || report.sandbox?.mechanism !== mechanism) {
    throw new Error(`landlock-runs: the ${mechanism} run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)}`);
  }
  return ms;
}

export async function landlockRuns({ quick }) {
  const repetitions = quick ? 6 : 30;
  const pools = Object.fromEntries(
    MECHANISMS.map((mechanism) => [
      mechanism,
      createRunPool({ size: 1, env, sandbox: { mechanism }, admission: createRunAdmission({ maxConcurrentRuns: 1 }) }),
    ]),
  );
  try {
    // A first run of each warms its pool and the host's probes.
    for (const mechanism of MECHANISMS) await timedRun(mechanism, pools[mechanism]);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const contenders = MECHANISMS.flatMap((mechanism) => [
      { name: `cold ${mechanism}`, run: () => timedRun(mechanism, undefined) },
      { name: `pooled ${mechanism}`, run: () => timedRun(mechanism, pools[mechanism]) },
    ]);
    const paused = async (c) => {
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      return c.run();
    };
    const { samples } = await alternate(contenders, repetitions, paused, paused);
    const rows = contenders.map(({ name }) => ({
      contender: `${name.startsWith("cold") ? "cold" : "pooled"} runCode under ${name.split(" ")[1]}: call to report`,
      unit: "ms",
      summary: summarize(samples[name]),
    }));
    const median = (name) => summarize(samples[name]).median;
    return {
      id: "landlock-runs",
      title: "Landlock beside bubblewrap: cold and pooled runCode of the same body with one call",
      setup: { repetitions, pauseMs: PAUSE_MS, body: BODY },
      rows,
      targets: [],
      context: {
        "cold runCode, landlock / bubblewrap": median("cold landlock") / median("cold bubblewrap"),
        "pooled runCode, landlock / bubblewrap": median("pooled landlock") / median("pooled bubblewrap"),
      },
    };
  } finally {
    await Promise.all(Object.values(pools).map((pool) => pool.close()));
  }
}
