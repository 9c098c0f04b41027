// Scenario 9 (issue 34): remote runners. A pooled runCode whose runner waits on the far end of ssh (a real
// sshd on 127.0.0.1, bench/lib/sshd.mjs; the far end runs this build's `ears runner`, sandboxed there)
// next to a local pooled runCode of the same body with one capability call, alternating, each after a
// pause of PAUSE_MS as in scenario 8: from the call to the report and to the result frame. And the cost of
// a cold remote run (a connection, an sshd session and a runner started per body) next to a cold local one.
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createRunPool, runCode } from "@posoco/ears/host";
import { startSshd } from "../lib/sshd.mjs";
import { alternate } from "../lib/measure.mjs";
import { summarize } from "../lib/stats.mjs";

const BODY = 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;';
const capabilities = { add: ({ a, b }) => ({ sum: a + b }) };
const PAUSE_MS = 250;
const cli = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

async function timedRun(options) {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  const start = performance.now();
  let resultMs;
  const onFrame = (direction, line) => {
    if (direction === "guest" && resultMs === undefined && line.includes('"type":"result"')) resultMs = performance.now() - start;
  };
  const report = await runCode({ code: BODY, capabilities, onFrame, ...options });
  const reportMs = performance.now() - start;
  if (!report.ok || report.outcome.structured !== 6 || resultMs === undefined || report.sandbox?.mechanism !== "bubblewrap") {
    throw new Error(`remote-runs: the run failed: ${report.failure?.message ?? JSON.stringify(report.outcome)} ${report.stderr ?? ""}`);
  }
  return { reportMs, resultMs };
}

export async function remoteRuns({ quick }) {
  const repetitions = quick ? 6 : 20;
  const sshd = await startSshd();
  const remote = { command: "ssh", args: [...sshd.ssh(), process.execPath, cli, "runner"] };
  const local = createRunPool({ size: 2 });
  const far = createRunPool({ size: 2, remote });
  try {
    const contenders = [
      { name: "local", run: () => timedRun({ pool: local }) },
      { name: "remote", run: () => timedRun({ pool: far }) },
      { name: "localCold", run: () => timedRun({}) },
      { name: "remoteCold", run: () => timedRun({ remote }) },
    ];
    const { samples } = await alternate(
      contenders,
      repetitions,
      (c) => c.run(),
      (c) => c.run(),
    );
    const row = (contender, name, field) => ({ contender, unit: "ms", summary: summarize(samples[name].map((s) => s[field])) });
    const rows = [
      row("local pooled runCode (pool of 2): call to report", "local", "reportMs"),
      row("remote pooled runCode over ssh to localhost (pool of 2): call to report", "remote", "reportMs"),
      row("local pooled runCode: call to result frame", "local", "resultMs"),
      row("remote pooled runCode over ssh: call to result frame", "remote", "resultMs"),
      row("local cold runCode: call to report", "localCold", "reportMs"),
      row("remote cold runCode over ssh (a connection per body): call to report", "remoteCold", "reportMs"),
    ];
    return {
      id: "remote-runs",
      title: "9. Remote runners: a pooled runCode over ssh to localhost vs a local pooled runCode (default sandbox on both ends)",
      setup: { repetitions, pauseMs: PAUSE_MS, body: BODY },
      rows,
      targets: [],
      context: {
        "remote pooled - local pooled, call to report: median ms": rows[1].summary.median - rows[0].summary.median,
        "remote pooled - local pooled, call to result frame: median ms": rows[3].summary.median - rows[2].summary.median,
      },
    };
  } finally {
    await Promise.all([local.close(), far.close()]);
    await sshd.stop();
  }
}
