// Scenario 4, one run per process: `node concurrency.mjs <calls>`. The guest starts every call at
// once; the host answers each after a pseudo-random 0-9 ms delay, so replies arrive out of order.
// Prints the guest's time for all calls and the peak RSS of both processes.
import { runGuest } from "@posoco/ears/host";
import { childArgs } from "../lib/children.mjs";
import { peakRssFrom } from "../children/peak-rss.mjs";

const calls = Number(process.argv[2]);
let outOfOrder = 0;
let highestAnswered = -1;
const report = await runGuest({
  command: process.execPath,
  args: childArgs("ears-calls.mjs"),
  input: { calls, warmup: 0, concurrent: true },
  // Every call in flight at once needs room: the default limit (1024) would answer the rest TooManyCalls,
  // and the default cap on running handlers (8) would have the rest wait for a slot.
  limits: { maxInFlight: calls, maxRunningHandlers: calls },
  capabilities: {
    echo: async (args) => {
      await new Promise((resolve) => setTimeout(resolve, (args.i * 7919) % 10));
      // A call answered after a later one was: the replies really are out of order.
      if (args.i < highestAnswered) outOfOrder++;
      highestAnswered = Math.max(highestAnswered, args.i);
      return args;
    },
  },
});
if (!report.ok) throw new Error(`the guest run failed: ${JSON.stringify(report.failure ?? report.outcome).slice(0, 500)} ${report.stderr}`);
console.log(
  JSON.stringify({
    ms: report.outcome.structured.ms,
    outOfOrder,
    hostPeakRss: process.resourceUsage().maxRSS * 1024,
    guestPeakRss: peakRssFrom(report.stderr),
  }),
);
