// Scenario 3: sequential calls over real pipes. Each run is a fresh host process with a fresh child.
// Besides calls per second, the CPU time both processes spent per call is reported: on a shared,
// noisy machine it shows where the time goes better than the wall clock does.
import { alternate } from "../lib/measure.mjs";
import { hostScript, runNode } from "../lib/run-node.mjs";
import { summarize } from "../lib/stats.mjs";

export async function roundTrip({ quick }) {
  const calls = quick ? 2000 : 10_000;
  const warmup = quick ? 200 : 500;
  const repetitions = quick ? 3 : 7;
  const contenders = [
    { name: "ears guest child, runGuest host", key: "ears", parent: "host", child: "guest" },
    { name: "MCP SDK Client -> McpServer stdio child", key: "mcp", parent: "client", child: "server" },
    { name: "bare NDJSON echo child", key: "echo", parent: "caller", child: "echo child" },
    // The LSP stack as a second protocol peer (issue 11); after the others so the targets' rows keep their places.
    { name: "vscode-jsonrpc client -> stdio server child", key: "jsonrpc", parent: "client", child: "server" },
  ];
  const { samples } = await alternate(contenders, repetitions, (c) => runNode(hostScript("round-trip.mjs"), [c.key, calls, warmup]));
  const rows = contenders.map((c) => ({
    contender: c.name,
    unit: "calls/s",
    summary: summarize(samples[c.name].map((s) => calls / (s.ms / 1000))),
    note: `${calls} sequential calls after ${warmup} warm-up calls`,
  }));
  for (const c of contenders) {
    const perCall = (key) => summarize(samples[c.name].filter((s) => s[key] !== undefined).map((s) => s[key] / calls));
    rows.push({
      contender: `${c.name}: CPU per call, ${c.parent} (parent)`,
      unit: "µs",
      summary: perCall("hostCpuUs"),
      note: "diagnostic",
    });
    rows.push({ contender: `${c.name}: CPU per call, ${c.child}`, unit: "µs", summary: perCall("childCpuUs"), note: "diagnostic" });
  }
  const median = (i) => rows[i].summary.median;
  return {
    id: "round-trip",
    title: `3. Round trip over real pipes: ${calls.toLocaleString("en-US")} sequential calls`,
    setup: { calls, warmup, repetitions },
    rows,
    targets: [
      { target: "round trip calls/s vs MCP SDK", measured: median(0) / median(1), op: ">=", required: 1.8 },
      { target: "round trip calls/s vs bare echo", measured: median(0) / median(2), op: ">=", required: 0.8 },
    ],
  };
}
