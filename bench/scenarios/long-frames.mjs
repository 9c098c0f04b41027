// Scenario 2: one long frame, cut into small (1,460 B, one TCP segment) or 64 KiB chunks.
// The peers are expected to be quadratic, so each peer run is cut off at a time budget.
import { performance } from "node:perf_hooks";
import { alternate, timed } from "../lib/measure.mjs";
import { chunks, longFrame } from "../lib/payloads.mjs";
import { baselineSplitParse, earsStreamWire, earsStreamWireLines, mcpReadBuffer, ndjsonParse } from "../lib/decoders.mjs";
import { MiB, summarize } from "../lib/stats.mjs";

export async function longFrames({ quick }) {
  const repetitions = quick ? 3 : 5;
  const budgetMs = quick ? 500 : 5000;
  const cases = quick
    ? [
        { mib: 2, chunk: 1460 },
        { mib: 1, chunk: 65536 },
        { mib: 4, chunk: 65536 },
        { mib: 16, chunk: 65536 },
      ]
    : [
        { mib: 8, chunk: 1460 },
        { mib: 1, chunk: 65536 },
        { mib: 4, chunk: 65536 },
        { mib: 16, chunk: 65536 },
        { mib: 48, chunk: 65536 },
      ];

  // Equal warm-up: every decoder once on a small long frame.
  const warm = Buffer.from(`${longFrame(256 * 1024, 5).ears}\n`);
  for (const run of [earsStreamWire, earsStreamWireLines, mcpReadBuffer, ndjsonParse, baselineSplitParse]) {
    if (run !== mcpReadBuffer) await run(chunks(warm, 4096), Infinity);
  }
  await mcpReadBuffer(chunks(Buffer.from(`${longFrame(256 * 1024, 5).mcp}\n`), 4096), Infinity);

  const results = [];
  for (const c of cases) {
    const frame = longFrame(c.mib * MiB);
    const earsBytes = Buffer.from(`${frame.ears}\n`);
    const mcpBytes = Buffer.from(`${frame.mcp}\n`);
    const input = { ears: chunks(earsBytes, c.chunk), mcp: chunks(mcpBytes, c.chunk) };
    const contenders = [
      { name: "ears StreamWire + decodeFrame", run: (deadline) => earsStreamWire(input.ears, deadline), budget: false },
      { name: "JSON.parse of the same text", run: async () => (JSON.parse(frame.ears), { frames: 1 }), budget: false },
      { name: "MCP SDK ReadBuffer + deserializeMessage", run: (deadline) => mcpReadBuffer(input.mcp, deadline), budget: true },
      { name: "ndjson.parse + validateFrame", run: (deadline) => ndjsonParse(input.ears, deadline), budget: true },
      { name: "baseline split + JSON.parse", run: (deadline) => baselineSplitParse(input.ears, deadline), budget: true },
      {
        name: "ears StreamWire framing only (no JSON.parse), informational",
        run: () => earsStreamWireLines(input.ears, Infinity),
        budget: false,
      },
    ];
    const deadline = (contender) => performance.now() + (contender.budget ? budgetMs : 120_000);
    const { samples, overBudget } = await alternate(contenders, repetitions, async (contender) => {
      const { ms, value } = await timed(() => contender.run(deadline(contender)));
      if (value.overBudget) return value;
      if (value.frames !== 1) throw new Error(`${contender.name} decoded ${value.frames} frames instead of 1`);
      return ms;
    });
    const label = `${c.mib} MiB in ${c.chunk === 65536 ? "64 KiB" : `${c.chunk} B`} chunks`;
    results.push({
      ...c,
      label,
      bytes: earsBytes.length,
      rows: contenders.map((contender) => ({
        contender: `${label}: ${contender.name}`,
        unit: "ms",
        summary: summarize(samples[contender.name]),
        overBudgetMs: overBudget.has(contender.name) ? budgetMs : undefined,
      })),
    });
  }

  const ours = (r) => r.rows[0].summary.median;
  const parse = (r) => r.rows[1].summary.median;
  const targets = results.map((r) => ({
    target: `${r.label}: time vs JSON.parse`,
    measured: ours(r) / parse(r),
    op: "<=",
    required: 3,
  }));
  // Linear growth: the largest 64 KiB case within 1.25x its size ratio of the 4 MiB case (48/4 MiB -> 15x).
  const four = results.find((r) => r.mib === 4 && r.chunk === 65536);
  const largest = results.filter((r) => r.chunk === 65536).at(-1);
  targets.unshift({
    target: `${largest.mib} MiB time / 4 MiB time (linear growth)`,
    measured: ours(largest) / ours(four),
    op: "<=",
    required: (largest.mib / 4) * 1.25,
  });
  const framing = (r) => r.rows[5].summary.median;
  return {
    context: {
      [`framing only (no JSON.parse): ${largest.mib} MiB time / 4 MiB time`]: framing(largest) / framing(four),
      [`JSON.parse alone: ${largest.mib} MiB time / 4 MiB time`]: parse(largest) / parse(four),
    },
    id: "long-frames",
    title: `2. Long frames (peers cut off at a ${budgetMs / 1000} s budget)`,
    setup: { repetitions, budgetMs, cases: results.map(({ mib, chunk, bytes }) => ({ mib, chunk, bytes })) },
    rows: results.flatMap((r) => r.rows),
    targets,
  };
}
