// Preloaded (`node --import`) into a code runner by test/host/code/runner-cache.test.ts: records each vm.Script made
// for the runner proper (code-runner.cjs), whether it was given a code cache and whether V8 refused it, and
// writes that list as JSON to EARS_SCRIPT_SPY_OUT as it grows. It changes nothing the runner does.
import { writeFileSync } from "node:fs";
import vm from "node:vm";

const out = process.env.EARS_SCRIPT_SPY_OUT;
const Script = vm.Script;
const seen = [];
vm.Script = class SpiedScript extends Script {
  constructor(code, options) {
    super(code, options);
    const filename = String(options?.filename ?? "");
    if (filename.endsWith("/code-runner.cjs")) {
      seen.push({ filename, hadCache: options?.cachedData !== undefined, rejected: this.cachedDataRejected });
      // Written now, not at exit: a host may kill its runner once the result is in.
      if (out) writeFileSync(out, JSON.stringify(seen));
    }
  }
};
