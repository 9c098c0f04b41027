// Scenario 3: sequential calls over real pipes. Each run is a fresh host process with a fresh child.
import { alternate } from "../lib/measure.mjs";
import { hostScript, runNode } from "../lib/run-node.mjs";
import { summarize } from "../lib/stats.mjs";

export async function roundTrip({ quick }) {
  const calls = quick ? 2000 : 10_000;
  const warmup = quick ? 200 : 500;
  const repetitions = quick ? 3 : 7;
  const contenders = [
    { name: "ears guest child, runGuest host", key: "ears" },
    { name: "MCP SDK Client -> McpServer stdio child", key: "mcp" },
    { name: "bare NDJSON echo child", key: "echo" },
  ];
  const { samples } = await alternate(contenders, repetitions, async (c) => {
    const { ms } = await runNode(hostScript("round-trip.mjs"), [c.key, calls, warmup]);
    return calls / (ms / 1000);
  });
  const rows = contenders.map((c) => ({
    contender: c.name,
    unit: "calls/s",
    summary: summarize(samples[c.name]),
    note: `${calls} sequential calls after ${warmup} warm-up calls`,
  }));
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
