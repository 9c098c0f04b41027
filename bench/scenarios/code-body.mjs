// Scenario 7 (issue 12): runCode of a small TypeScript body next to runGuest of the same program written
// as a file, from the call to the guest's result frame, both in the default sandbox. runCode's extra work
// (strip types, V8 syntax check, send the body in a frame, compile it in the child under vm.Script)
// must cost at most 1.3x. The transpiler's one-time load is in the warm-up, as in a host
// that runs many bodies; the first body's cost is measured separately below.
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { runCode, runGuest } from "@posoco/ears/host";
import { childScript } from "../lib/children.mjs";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const repository = fileURLToPath(new URL("../../", import.meta.url));
const BODY =
  'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\n' +
  "return (r.structured as { sum: number }).sum * 2;";
const capabilities = { add: ({ a, b }) => ({ sum: a + b }) };
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };

/** Milliseconds from the call to the result frame, for a run that must give 6. */
async function toResult(run) {
  const start = performance.now();
  let ms;
  const report = await run((direction, line) => {
    if (direction === "guest" && ms === undefined && line.includes('"type":"result"')) ms = performance.now() - start;
  });
  if (!report.ok || report.outcome.structured !== 6 || ms === undefined)
    throw new Error(`code-body run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)} ${report.stderr ?? ""}`);
  return ms;
}

const contenders = [
  {
    name: "runGuest of the program as a file",
    run: (onFrame) =>
      runGuest({ command: process.execPath, args: [childScript("code-equivalent.mjs")], cwd: repository, env, capabilities, onFrame }),
  },
  { name: "runCode of the same body (TypeScript)", run: (onFrame) => runCode({ code: BODY, cwd: repository, env, capabilities, onFrame }) },
];

export async function codeBody({ quick }) {
  const repetitions = quick ? 6 : 20;
  const { samples } = await alternate(
    contenders,
    repetitions,
    (c) => toResult(c.run),
    (c) => toResult(c.run),
  );
  const rows = contenders.map((c) => ({ contender: c.name, unit: "ms", summary: summarize(samples[c.name]) }));
  return {
    id: "code-body",
    title: "7. Code bodies: call to result, runCode vs runGuest of the same program as a file (default sandbox)",
    setup: { repetitions, body: BODY },
    rows,
    targets: [
      { target: "runCode vs runGuest, call to result", measured: rows[1].summary.median / rows[0].summary.median, op: "<=", required: 1.3 },
    ],
  };
}
