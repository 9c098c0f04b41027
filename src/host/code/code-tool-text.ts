/**
 * What a code tool tells a model besides the declarations, shared by `ears mcp` (src/cli) and the
 * framework adapters (src/frameworks): the run's limits and the `fetch` origins, so a model neither
 * guesses URLs nor writes a body that cannot finish (issue 29 item 6), and the body's logs bounded to
 * what belongs in a model's context.
 */
import { byteSize, clip } from "../../protocol/text.js";
import { DEFAULT_HOST_LIMITS } from "../settings.js";
import type { HostLimits } from "../types.js";

/** Log lines shown to a model at most, and their characters at most. */
export const MAX_TOOL_LOG_LINES = 50;
export const MAX_TOOL_LOG_CHARS = 10_000;

/**
 * One paragraph for a code tool's description: the limits of each run (run time, CPU time, memory,
 * result size; each the host's default where `limits` sets none) and, when `fetchOrigins` is given, the
 * only origins `fetch` reaches. Empty strings nowhere: every part is a full sentence.
 */
export function codeToolLimitsText(limits: HostLimits | undefined, fetchOrigins?: readonly string[]): string {
  const settings = { ...DEFAULT_HOST_LIMITS, ...limits };
  const parts = [
    Number.isFinite(settings.runTimeoutMs) ? `${seconds(settings.runTimeoutMs)} of run time` : "no deadline of its own",
    ...(Number.isFinite(settings.cpuTimeMs) ? [`${seconds(settings.cpuTimeMs)} of CPU time`] : []),
    `${byteSize(settings.memoryBytes)} of memory`,
    `a result of at most ${byteSize(settings.maxResultBytes)} as JSON`,
  ];
  const text =
    `Each run has ${parts.join(", ")}: a body past one is stopped and its result lost, so do large work in steps ` +
    "and return a summary rather than everything.";
  if (fetchOrigins === undefined || fetchOrigins.length === 0) return text;
  return (
    `${text} \`fetch\` reaches only ${fetchOrigins.map((origin) => JSON.stringify(origin)).join(", ")} ` +
    "(any other origin is refused with FetchRefused): build URLs on these, do not guess others."
  );
}

function seconds(ms: number): string {
  const value = ms / 1000;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} s`;
}

/**
 * At most {@link MAX_TOOL_LOG_LINES} lines and {@link MAX_TOOL_LOG_CHARS} characters of `logs`, the
 * last line cut to fit, then a line counting what was left out.
 */
export function boundedToolLogs(logs: readonly string[]): string[] {
  const shown: string[] = [];
  let chars = 0;
  for (const line of logs.slice(0, MAX_TOOL_LOG_LINES)) {
    if (chars + line.length > MAX_TOOL_LOG_CHARS) {
      shown.push(clip(line, Math.max(0, MAX_TOOL_LOG_CHARS - chars)));
      break;
    }
    shown.push(line);
    chars += line.length;
  }
  if (logs.length > shown.length) shown.push(`(${logs.length - shown.length} more log lines not shown)`);
  return shown;
}

/**
 * One paragraph for `ears mcp`'s run_code description on the files a body sees: with a session, that they
 * persist between calls and how to hand one back (its relative path in the result, docs/cli.md "Sessions
 * in ears mcp"); without, that each call starts empty.
 */
export function codeToolFilesText(session: { workspaceBytes: number } | undefined): string {
  if (session === undefined) return "Each call starts in an empty private directory, removed after it: no file is kept between calls.";
  return (
    "Files persist between calls: every call works in this conversation's workspace (the working directory; use " +
    `relative paths; ${byteSize(session.workspaceBytes)} in all, past it a write fails with ENOSPC), so a call can read ` +
    'what an earlier one wrote (fs: `process.getBuiltinModule("node:fs")`). To hand a file back, put its relative ' +
    'path as a string in the result (e.g. `return { chart: "chart.png" }`): a PNG, JPEG, GIF or WebP image comes ' +
    "back as an image, any other file as a resource link the client can read."
  );
}
