// Preloaded (`node --import`) into the code runner by scripts/runner-cache.mjs, at build time only: notes the
// vm.Script the runner's start script compiles the runner proper with, and when the runner exits (after a whole
// session) writes V8's code cache for it to EARS_RUNNER_CACHE_OUT. Functions V8 compiled lazily during the session
// are in that cache too. Never shipped: a runner at run time writes no cache (src/guest/code-cache.ts says why).
import { writeFileSync } from "node:fs";
import vm from "node:vm";

const out = process.env.EARS_RUNNER_CACHE_OUT;
const Script = vm.Script;
const runners = [];
// The start script reads `Script` from node:vm's exports when it runs, after this.
vm.Script = class RunnerScript extends Script {
  constructor(code, options) {
    super(code, options);
    if (String(options?.filename ?? "").endsWith("/code-runner.cjs")) runners.push(this);
  }
};
process.on("exit", () => {
  if (runners.length === 1 && out) writeFileSync(out, runners[0].createCachedData());
});
