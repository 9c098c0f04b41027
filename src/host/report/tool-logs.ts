/**
 * A run's log lines as a model is shown them: bounded, so a body that logs a flood does not fill the model's
 * context. Shared by every code tool (src/code-tool/) and {@link modelResult}.
 */
import { clip } from "../../protocol/text.js";

/** Log lines shown to a model at most, and their characters at most. */
export const MAX_TOOL_LOG_LINES = 50;
export const MAX_TOOL_LOG_CHARS = 10_000;

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
