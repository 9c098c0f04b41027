// Large-payload guest. Mode "result": builds a structured value whose JSON is about `bytes` long and
// returns it as the result. Mode "reply": calls "fetch", whose reply carries such a value, and
// returns its record count. Logs how long building took and the RSS once the payload was resident.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance } from "node:perf_hooks";
import { serve, stdio, Outcome } from "@posoco/ears";
import { largeValue } from "../lib/payloads.mjs";
import { reportPeakRss } from "./peak-rss.mjs";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
reportPeakRss();

await serve({
  wire: stdio(),
  run: async (ears, { mode, bytes }) => {
    if (mode === "result") {
      const start = performance.now();
      const value = largeValue(bytes, gc); // the generator's garbage is the benchmark's, not the runtime's
      await ears.log(JSON.stringify({ buildMs: performance.now() - start, residentBytes: process.memoryUsage().rss }));
      return value;
    }
    const outcome = await ears.call("fetch", { bytes });
    if (Outcome.isError(outcome)) throw new Error(`fetch failed: ${outcome.content}`);
    return { records: outcome.structured.records.length };
  },
});
