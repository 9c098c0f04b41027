// Scenario (issue 32): a session's run through a run pool against a pooled run without one, the same body
// (one capability call, and a file written in the working directory), both from one pool of 2 in the
// default sandbox, alternating, each after a pause of PAUSE_MS as in warm-runs (the pool's replacement
// spawn belongs to the pause). The session's run pays the late bind of its workspace onto the runner's
// directory (a `mount --bind`), the runner's check of it, and the sanitizing walk after the run.
import { performance } from "node:perf_hooks";
import { createRunPool, createSession, runCode } from "@posoco/ears/host";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const BODY =
  'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\n' +
  'process.getBuiltinModule("node:fs").writeFileSync("out.txt", "x");\n' +
  "return (r.structured as { sum: number }).sum * 2;";
const capabilities = { add: ({ a, b }) => ({ sum: a + b }) };
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };
const PAUSE_MS = 250;

/** Milliseconds from the call to the report, for a pooled run that must give 6. */
async function timedRun(pool, session) {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  const start = performance.now();
  const report = await runCode({ code: BODY, env, capabilities, pool, ...(session === undefined ? {} : { session }) });
  const ms = performance.now() - start;
  if (!report.ok || report.outcome.structured !== 6 || report.pooled !== true) {
    throw new Error(`pooled-session: the run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)} ${report.stderr ?? ""}`);
  }
  return ms;
}

export async function pooledSession({ quick }) {
  const repetitions = quick ? 6 : 30;
  const pool = createRunPool({ size: 2, env });
  const session = await createSession();
  try {
    // Warm-up: the runners started, amaro loaded, the first bind done.
    await timedRun(pool, undefined);
    await timedRun(pool, session);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const contenders = [
      { name: "plain", run: () => timedRun(pool, undefined) },
      { name: "session", run: () => timedRun(pool, session) },
    ];
    const { samples } = await alternate(
      contenders,
      repetitions,
      (c) => c.run(),
      (c) => c.run(),
    );
    const rows = [
      { contender: "pooled runCode (pool of 2): call to report", unit: "ms", summary: summarize(samples.plain) },
      { contender: "pooled runCode with a session: call to report", unit: "ms", summary: summarize(samples.session) },
    ];
    return {
      id: "pooled-session",
      title: "Pooled sessions: a session's pooled runCode vs a pooled runCode without one (default sandbox)",
      setup: { repetitions, pauseMs: PAUSE_MS, body: BODY, poolSize: 2 },
      rows,
      targets: [
        {
          target: "pooled with a session / pooled without, call to report",
          measured: rows[1].summary.median / rows[0].summary.median,
          op: "<=",
          required: 1.5,
        },
      ],
      context: {},
    };
  } finally {
    await pool.close();
    await session.close();
  }
}
