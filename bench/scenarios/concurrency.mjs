// Scenario 4: 10,000 calls in flight at once, answered out of order, against the same calls made
// one after another (alternating runs, no warm-up for either).
import { alternate } from "../lib/measure.mjs";
import { hostScript, runNode } from "../lib/run-node.mjs";
import { MB, summarize } from "../lib/stats.mjs";

export async function concurrency({ quick }) {
  const calls = 10_000;
  const repetitions = quick ? 2 : 5;
  const contenders = [
    { name: "concurrent", run: () => runNode(hostScript("concurrency.mjs"), [calls]) },
    { name: "sequential", run: () => runNode(hostScript("round-trip.mjs"), ["ears", calls, 0]) },
  ];
  const { samples } = await alternate(contenders, repetitions, (c) => c.run());
  const concurrent = samples.concurrent;
  const rows = [
    { contender: "ears, 10,000 calls in flight at once: time", unit: "ms", summary: summarize(concurrent.map((s) => s.ms)) },
    { contender: "ears, the same 10,000 calls one by one: time", unit: "ms", summary: summarize(samples.sequential.map((s) => s.ms)) },
    { contender: "ears, in flight at once: guest peak RSS", unit: "MB", summary: summarize(concurrent.map((s) => s.guestPeakRss / MB)) },
    { contender: "ears, in flight at once: host peak RSS", unit: "MB", summary: summarize(concurrent.map((s) => s.hostPeakRss / MB)) },
    {
      contender: "ears, in flight at once: calls answered after a later call",
      unit: "calls",
      summary: summarize(concurrent.map((s) => s.outOfOrder)),
    },
  ];
  return {
    id: "concurrency",
    title: `4. Concurrency: ${calls.toLocaleString("en-US")} calls in flight, replies 0-9 ms apart, out of order`,
    setup: { calls, repetitions, hostLimits: { maxInFlight: calls, maxRunningHandlers: calls } },
    rows,
    targets: [
      { target: "concurrent time / sequential time", measured: rows[0].summary.median / rows[1].summary.median, op: "<", required: 1 },
      { target: "concurrent guest peak RSS (MB)", measured: rows[2].summary.median, op: "<", required: 150 },
    ],
  };
}
