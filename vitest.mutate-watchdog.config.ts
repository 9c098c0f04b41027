import { defineConfig } from "vitest/config";
import base from "./vitest.mutate.config.js";

// `npm run mutate` over RunLimits' watchdog alone (limits.ts: the watch, checkTree, dataRlimit, processesRefused, the
// verdict and usage; CONTRIBUTING.md, "Mutation testing"): the mutate config's settings with only the tests that
// reach it, in process, on /proc and cgroups given as data, with a kill that records, so no mutant reaches the
// machine's processes.
export default defineConfig({
  ...base,
  test: { ...base.test, include: ["test/host/limits/{run-limits,watchdog}.test.ts"] },
});
