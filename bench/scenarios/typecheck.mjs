// Scenario 8 (issue 20): runCode with typecheck: true after the first, next to runCode of the same body
// without it, call to report, in the default sandbox, alternated. The first checked run starts the
// host's warm type checker (its cost is measured apart, once, in setup.firstCheckedRunMs); every later
// one hands the body to that checker. Target: a checked run costs at most 40 ms more (medians).
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { defineCapabilities } from "@posoco/ears";
import { closeTypeChecker, runCode } from "@posoco/ears/host";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const repository = fileURLToPath(new URL("../../", import.meta.url));
const BODY = 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;';
const tools = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const capabilities = tools.implement({ add: ({ a, b }) => ({ sum: a + b }) });
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };

/** Milliseconds from the call to the report, for a run that must give 6. */
async function toReport(typecheck) {
  const start = performance.now();
  const report = await runCode({ code: BODY, cwd: repository, env, capabilities, contract: tools, typecheck });
  const ms = performance.now() - start;
  if (!report.ok || report.outcome.structured !== 6)
    throw new Error(`typecheck run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)}`);
  return ms;
}

const contenders = [
  { name: "runCode, typecheck: false", typecheck: false },
  { name: "runCode, typecheck: true (warm checker)", typecheck: true },
];

export async function typecheck({ quick }) {
  const repetitions = quick ? 6 : 20;
  await closeTypeChecker();
  await toReport(false); // amaro's one-time load, outside the first checked run's time
  const firstCheckedRunMs = await toReport(true);
  const { samples } = await alternate(
    contenders,
    repetitions,
    (c) => toReport(c.typecheck),
    (c) => toReport(c.typecheck),
  );
  await closeTypeChecker();
  const rows = contenders.map((c) => ({ contender: c.name, unit: "ms", summary: summarize(samples[c.name]) }));
  return {
    id: "typecheck",
    title: "8. Type-checked code bodies after the first: call to report, typecheck: true vs false (default sandbox)",
    setup: { repetitions, body: BODY, firstCheckedRunMs: Math.round(firstCheckedRunMs) },
    rows,
    targets: [
      {
        target: "typecheck: true over false, median ms",
        measured: rows[1].summary.median - rows[0].summary.median,
        op: "<=",
        required: 40,
      },
    ],
  };
}
