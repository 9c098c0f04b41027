// Round-trip and concurrency guest: makes `warmup` untimed calls (i = -warmup … -1), then `calls`
// timed calls (i = 0 … calls-1) to "echo", one after another or all at once, checks every reply,
// and returns the time and the CPU time the timed calls took.
import { performance } from "node:perf_hooks";
import { serve, stdio, Outcome } from "@posoco/ears";
import { callArguments } from "../lib/children.mjs";
import { reportPeakRss } from "./peak-rss.mjs";

reportPeakRss();

function check(outcome, i) {
  if (Outcome.isError(outcome) || outcome.structured?.i !== i) {
    throw new Error(`call ${i} got a wrong reply: ${JSON.stringify(outcome).slice(0, 200)}`);
  }
}

await serve({
  wire: stdio(),
  run: async (ears, { calls, warmup, concurrent }) => {
    for (let i = -warmup; i < 0; i++) check(await ears.call("echo", callArguments(i)), i);
    const cpu = process.cpuUsage();
    const start = performance.now();
    if (concurrent) {
      const outcomes = await Promise.all(Array.from({ length: calls }, (_, i) => ears.call("echo", callArguments(i))));
      outcomes.forEach(check);
    } else {
      for (let i = 0; i < calls; i++) check(await ears.call("echo", callArguments(i)), i);
    }
    const ms = performance.now() - start;
    const used = process.cpuUsage(cpu);
    return { ms, cpuUs: used.user + used.system };
  },
});
