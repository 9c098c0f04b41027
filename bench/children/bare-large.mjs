// Large-payload baseline writer: builds the same value as the ears guest, then writes it as one
// JSON line on stdout, the simplest way (JSON.stringify + "\n").
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { largeValue } from "../lib/payloads.mjs";
import { reportPeakRss } from "./peak-rss.mjs";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
reportPeakRss();
const value = largeValue(Number(process.argv[2]), gc); // the generator's garbage is the benchmark's, not the writer's
process.stdout.write(`${JSON.stringify(value)}\n`);
