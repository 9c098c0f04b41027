/**
 * `ears mcp --max-runs`: the bound on bodies running at once (issue 28 item 4). The server's runs, its
 * pool's warm runners included, take their slots from one run admission of that size; the calls beyond
 * wait in its queue (or fail `RunQueueFull` / `QueueTimeout`, which the model is told it may retry).
 */
import { createRunAdmission, type RunAdmission } from "../host/index.js";
import { DEFAULT_POOL_SIZE } from "../host/code/run-pool.js";
import { UsageError } from "./usage.js";
import { CODE_TOOL_RUN_TIMEOUT_MS } from "../code-tool/text.js";

/**
 * Each body's run time in `ears mcp` unless `--timeout` says otherwise: every code tool's
 * ({@link CODE_TOOL_RUN_TIMEOUT_MS}); a body that never ends would hold one of the --max-runs slots for good.
 */
export const MCP_RUN_TIMEOUT_MS = CODE_TOOL_RUN_TIMEOUT_MS;

/** The most `--max-runs` takes: far above what one machine runs, low enough to catch a typo. */
const MAX_RUNS = 1024;

/**
 * The admission `ears mcp` runs its bodies through, and the pool size that fits it: `--max-runs <n>`
 * (default the machine's, see createRunAdmission), `--pool <n>` at most that (default 2, or `n` when less).
 */
export function mcpAdmission(maxRunsText: string | undefined, poolSize: number | undefined): { admission: RunAdmission; size: number } {
  let maxConcurrentRuns: number | undefined;
  if (maxRunsText !== undefined) {
    maxConcurrentRuns = /^\s*\d+\s*$/.test(maxRunsText) ? Number(maxRunsText) : NaN;
    if (!(Number.isSafeInteger(maxConcurrentRuns) && maxConcurrentRuns >= 1 && maxConcurrentRuns <= MAX_RUNS)) {
      throw new UsageError(`--max-runs takes a whole number from 1 to ${MAX_RUNS}, got ${JSON.stringify(maxRunsText)}`);
    }
  }
  const admission = createRunAdmission(maxConcurrentRuns === undefined ? {} : { maxConcurrentRuns });
  const cap = admission.maxConcurrentRuns;
  if (poolSize !== undefined && poolSize > cap) {
    throw new UsageError(
      `--pool ${poolSize} is more than --max-runs ${cap}: each warm runner is a running process and holds one of the ${cap} slots`,
    );
  }
  return { admission, size: poolSize ?? Math.min(DEFAULT_POOL_SIZE, cap) };
}
