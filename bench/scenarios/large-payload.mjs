// Scenario 6: one large structured payload through real pipes, as the guest's result and as a host
// reply, next to the floor (a bare child writing the same JSON line to a bare reader) and an idle
// session (what node and the runtime take before any payload).
import { alternate } from "../lib/measure.mjs";
import { hostScript, runNode } from "../lib/run-node.mjs";
import { MB, summarize } from "../lib/stats.mjs";

export async function largePayload({ quick }) {
  const bytes = quick ? 10e6 : 50e6;
  const repetitions = quick ? 2 : 3;
  const run =
    (mode, size = bytes) =>
    () =>
      runNode(hostScript("large-payload.mjs"), [mode, size]);
  const contenders = [
    { name: "result", label: "ears result (guest writes, host reads)", writer: "guest", run: run("result") },
    { name: "reply", label: "ears reply (host writes, guest reads)", writer: "host", run: run("reply") },
    { name: "bare", label: "bare floor (child writes, parent reads)", writer: "child", run: run("bare") },
    { name: "idle", label: "ears idle session (empty result)", writer: "guest", run: run("result", 0) },
  ];
  const { samples } = await alternate(contenders, repetitions, (c) => c.run());
  const rows = [];
  const peaks = {};
  for (const c of contenders) {
    const list = samples[c.name];
    // The parent process is the host (or the bare reader); the child is the guest (or the bare writer).
    const parentRole = c.name === "bare" ? "reader (parent)" : "host";
    const childRole = c.name === "bare" ? "writer (child)" : "guest";
    const parent = summarize(list.map((s) => s.parentPeakRss / MB));
    const child = summarize(list.map((s) => s.childPeakRss / MB));
    peaks[c.name] = { parent, child, frameBytes: list[0]?.frameBytes };
    if (c.name !== "idle") {
      rows.push({ contender: `${c.label}: wall time`, unit: "ms", summary: summarize(list.map((s) => s.wallMs)) });
      if (c.name !== "bare") {
        rows.push({ contender: `${c.label}: of which building the value`, unit: "ms", summary: summarize(list.map((s) => s.buildMs)) });
      }
    }
    rows.push({ contender: `${c.label}: ${parentRole} peak RSS`, unit: "MB", summary: parent });
    rows.push({ contender: `${c.label}: ${childRole} peak RSS`, unit: "MB", summary: child });
  }
  const ratio = (summary) => (summary.median * MB) / bytes;
  const net = (summary, idle) => ((summary.median - idle.median) * MB) / bytes;
  return {
    id: "large-payload",
    title: `6. Large payload: ${(bytes / MB).toFixed(0)} MB of structured JSON through real pipes`,
    setup: {
      bytes,
      repetitions,
      frameBytes: { result: peaks.result.frameBytes, reply: peaks.reply.frameBytes, bare: peaks.bare.frameBytes },
    },
    rows,
    targets: [
      { target: "result: guest peak RSS / payload", measured: ratio(peaks.result.child), op: "<=", required: 4 },
      { target: "result: host peak RSS / payload", measured: ratio(peaks.result.parent), op: "<=", required: 4 },
      { target: "reply: guest peak RSS / payload", measured: ratio(peaks.reply.child), op: "<=", required: 4 },
      { target: "reply: host peak RSS / payload", measured: ratio(peaks.reply.parent), op: "<=", required: 4 },
    ],
    context: {
      "bare floor: writer peak RSS / payload": ratio(peaks.bare.child),
      "bare floor: reader peak RSS / payload": ratio(peaks.bare.parent),
      "result: guest (peak - idle guest) RSS / payload": net(peaks.result.child, peaks.idle.child),
      "result: host (peak - idle host) RSS / payload": net(peaks.result.parent, peaks.idle.parent),
      "reply: guest (peak - idle guest) RSS / payload": net(peaks.reply.child, peaks.idle.child),
      "reply: host (peak - idle host) RSS / payload": net(peaks.reply.parent, peaks.idle.parent),
    },
  };
}
