/**
 * runCode's runner as a Node host starts it (`node dist/guest/code-runner-cached.cjs`): loads the runner proper
 * ({@link RUNNER_MAIN_FILE}, code-runner.ts bundled with the guest runtime) as Node's CommonJS loader would,
 * but with the V8 code cache the build made for it when that cache was made from exactly this source
 * (code-cache.ts). Without a usable cache it compiles the runner as Node would have. Loads nothing but
 * Node's built-ins, which Node has loaded already. Deno and Bun hosts start the runner proper itself: Deno's
 * runner may not read other files, and a V8 cache is no use to Bun.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Script } from "node:vm";
import { cachedDataFor, runnerCacheFile, RUNNER_MAIN_FILE, wrapCommonJs } from "./code-cache.js";

type CommonJsMain = (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;

const main = join(__dirname, RUNNER_MAIN_FILE);
const source = readFileSync(main);
let cache: Buffer | undefined;
try {
  cache = readFileSync(join(__dirname, runnerCacheFile(process.versions.v8)));
} catch {
  cache = undefined; // no cache for this V8: compiled as Node would
}
const script = new Script(wrapCommonJs(source.toString("utf8")), { filename: main, cachedData: cachedDataFor(cache, source) });
const runnerModule = { exports: {} };
(script.runInThisContext() as CommonJsMain)(runnerModule.exports, require, runnerModule, main, __dirname);
