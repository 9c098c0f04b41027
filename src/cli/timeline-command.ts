/** `ears timeline <transcript> [-o run.html]`: a recorded run as one self-contained HTML page. */
import { closeSync, constants, openSync, writeSync } from "node:fs";
import { basename, resolve } from "node:path";
import { describeError } from "../protocol/errors.js";
import { timelineOf } from "../transcripts/timeline.js";
import { readTranscript, TranscriptError, type TranscriptEntry } from "../transcripts/transcript.js";
import { TIMELINE_HELP } from "./help.js";
import { ExitStatus } from "./report-output.js";
import { timelineHtml } from "./timeline-html.js";
import { subcommand, UsageError } from "./usage.js";

const TIMELINE_OPTIONS = {
  output: { type: "string", short: "o" },
  help: { type: "boolean", short: "h" },
} as const;

/** Runs `ears timeline` with `argv` (the words after "timeline"); resolves with the exit status. Throws {@link UsageError}. */
export const timelineCommand = subcommand(
  "timeline",
  TIMELINE_OPTIONS,
  TIMELINE_HELP,
  async ({ values, positionals, sawSeparator }, io) => {
    const [transcript, ...extra] = positionals;
    if (transcript === undefined)
      throw new UsageError("no transcript; e.g. ears timeline run.ndjson -o run.html (see ears timeline --help)");
    if (extra.length > 0 || sawSeparator)
      throw new UsageError(`unexpected ${JSON.stringify(extra[0] ?? "--")}; ears timeline takes one transcript`);
    let entries: TranscriptEntry[];
    try {
      entries = await readTranscript(resolve(io.cwd, transcript));
    } catch (error) {
      throw new UsageError(
        error instanceof TranscriptError ? error.message : `cannot read transcript ${transcript}: ${describeError(error)}`,
      );
    }
    const timeline = timelineOf(entries);
    const html = timelineHtml(timeline, basename(transcript));
    const output = values.output ?? `${transcript.replace(/\.(nd)?jsonl?$/i, "")}.html`;
    if (output === "-") {
      io.stdout.write(html);
      return ExitStatus.Success;
    }
    try {
      writePrivate(resolve(io.cwd, output), html);
    } catch (error) {
      io.stderr.write(`ears: cannot write ${output}: ${describeError(error)}\n`);
      return ExitStatus.SessionError;
    }
    const failed = timeline.calls.filter((call) => call.status !== "success").length;
    io.stderr.write(`ears: wrote ${output} (${timeline.calls.length + timeline.droppedCalls} calls, ${failed} not successful)\n`);
    return ExitStatus.Success;
  },
);

/**
 * Writes the page as the transcript is kept: private (mode 0600 when created), never through a symbolic
 * link at the path. An existing file is replaced.
 */
function writePrivate(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
