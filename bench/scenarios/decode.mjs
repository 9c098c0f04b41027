// Scenario 1: decode throughput of a mixed frame stream fed in 64 KiB chunks.
import { alternate, timed } from "../lib/measure.mjs";
import { chunks, mixedStream } from "../lib/payloads.mjs";
import { baselineSplitParse, earsSplitter, earsStreamWire, mcpReadBuffer, ndjsonParse } from "../lib/decoders.mjs";
import { MB, summarize } from "../lib/stats.mjs";

const CHUNK = 64 * 1024;

export async function decodeThroughput({ quick }) {
  const totalBytes = quick ? 10e6 : 50e6;
  const repetitions = quick ? 3 : 7;
  const stream = mixedStream(totalBytes);
  const warm = mixedStream(quick ? 2e6 : 5e6, 3);
  const input = { ears: chunks(stream.ears, CHUNK), mcp: chunks(stream.mcp, CHUNK) };
  const warmInput = { ears: chunks(warm.ears, CHUNK), mcp: chunks(warm.mcp, CHUNK) };
  const bytes = { ears: stream.ears.length, mcp: stream.mcp.length };

  const contenders = [
    { name: "ears StreamWire + decodeFrame", encoding: "ears", run: earsStreamWire },
    { name: "MCP SDK ReadBuffer + deserializeMessage", encoding: "mcp", run: mcpReadBuffer },
    { name: "ndjson.parse + validateFrame", encoding: "ears", run: ndjsonParse },
    { name: "baseline split + JSON.parse", encoding: "ears", run: baselineSplitParse },
    { name: "ears LineSplitter + decodeFrame (no stream)", encoding: "ears", run: earsSplitter, informational: true },
  ];
  const { samples } = await alternate(
    contenders,
    repetitions,
    async (contender) => {
      const { ms, value } = await timed(() => contender.run(input[contender.encoding], Infinity));
      if (value.frames !== stream.frames) throw new Error(`${contender.name} decoded ${value.frames} of ${stream.frames} frames`);
      return bytes[contender.encoding] / MB / (ms / 1000);
    },
    (contender) => contender.run(warmInput[contender.encoding], Infinity),
  );

  const rows = contenders.map((c) => ({
    contender: c.name,
    unit: "MB/s",
    summary: summarize(samples[c.name]),
    note: `${(bytes[c.encoding] / MB).toFixed(1)} MB, ${stream.frames} frames${c.informational ? ", informational" : ""}`,
  }));
  const median = (name) => rows.find((r) => r.contender === name).summary.median;
  const ours = median(contenders[0].name);
  return {
    id: "decode",
    title: `1. Decode throughput: ${(totalBytes / MB).toFixed(0)} MB mixed frames (${stream.bigFrames} of 1 MB), 64 KiB chunks`,
    setup: { totalBytes, repetitions, chunkBytes: CHUNK, frames: stream.frames, bigFrames: stream.bigFrames, bytes },
    rows,
    targets: [
      { target: "decode MB/s vs MCP SDK", measured: ours / median(contenders[1].name), op: ">=", required: 1.5 },
      { target: "decode MB/s vs baseline", measured: ours / median(contenders[3].name), op: ">=", required: 0.7 },
    ],
  };
}
