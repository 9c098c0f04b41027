/** `ears replay <transcript.ndjson> [options] -- <command> [args...]`: replay a recording against a guest. */
import { resolve } from "node:path";
import { describeError } from "../protocol/errors.js";
import { loadRecording, RecordingError, type Recording } from "../transcripts/recording.js";
import { replayGuestCommand } from "../transcripts/replay.js";
import { TranscriptError } from "../transcripts/transcript.js";
import { REPLAY_HELP } from "./help.js";
import {
  endGuestStderrLine,
  ExitStatus,
  guestStderrPrinter,
  logPrinter,
  oneLine,
  printJson,
  printNotes,
  printOutcome,
} from "./report-output.js";
import {
  finishRecording,
  guestCommand,
  guestStderrTo,
  inFlagTerms,
  limitsOf,
  printSandboxNote,
  sandboxOf,
  SESSION_OPTIONS,
  startRecording,
} from "./run-command.js";
import { subcommand, UsageError } from "./usage.js";

/** Runs `ears replay` with `argv` (the words after "replay"); resolves with the exit status. Throws {@link UsageError}. */
export const replayCommand = subcommand("replay", SESSION_OPTIONS, REPLAY_HELP, async ({ values, positionals, command }, io) => {
  const [transcript, ...extra] = positionals;
  if (transcript === undefined) {
    throw new UsageError("no transcript; e.g. ears replay run.ndjson -- node guest.mjs (see ears replay --help)");
  }
  const guest = guestCommand("replay", extra, command);
  const limits = limitsOf(values);
  const sandbox = sandboxOf(values, io.cwd);
  const recording = await openRecording(resolve(io.cwd, transcript), transcript);
  const recorder = startRecording(values.record, io.cwd);
  const replayed = await replayGuestCommand(
    recording,
    {
      command: guest[0]!,
      args: guest.slice(1),
      cwd: io.cwd,
      sandbox,
      onStderr: guestStderrTo(values.quiet ? undefined : guestStderrPrinter(io.stderr), recorder),
    },
    { limits, onLog: values.quiet ? undefined : logPrinter(io.stderr), onFrame: recorder?.onFrame, signal: io.signal },
  );
  const recorded = await finishRecording(recorder, io, replayed.report);
  const { report } = replayed;
  const printed = values.json ? printJson(replayed, io.stdout, io.stderr) : true;
  if (!values.json && replayed.ok && report.outcome !== undefined) printOutcome(report.outcome, io.stdout, io.stderr);
  endGuestStderrLine(io.stderr);
  if (replayed.ok) {
    if (!values.quiet) {
      const requests = replayed.recordedRequests === 1 ? "1 request" : `${replayed.recordedRequests} requests`;
      io.stderr.write(`ears: the guest matched the recording (${requests} and the result)\n`);
    }
  } else {
    io.stderr.write(`ears: the guest diverged from the recording: ${oneLine(replayed.divergence ?? "")}\n`);
  }
  printSandboxNote(report, io, values.quiet ?? false);
  // The replay's own stop shows up as an Aborted failure; that is the divergence, already reported.
  printNotes(replayed.stopped ? { ...report, failure: undefined } : inFlagTerms(report), io.stderr, values.quiet ?? false);
  if (!recorded || !printed) return ExitStatus.SessionError;
  if (replayed.ok) return ExitStatus.Success;
  return report.failure !== undefined && !replayed.stopped ? ExitStatus.SessionError : ExitStatus.GuestFailure;
});

/** The recording in the transcript file at `path` (given as `shown`); every way it can fail is a usage error. */
async function openRecording(path: string, shown: string): Promise<Recording> {
  try {
    return await loadRecording(path);
  } catch (error) {
    if (error instanceof TranscriptError) throw new UsageError(error.message);
    if (error instanceof RecordingError) throw new UsageError(`${shown} cannot be replayed: ${error.message}`);
    throw new UsageError(`cannot read transcript ${shown}: ${describeError(error)}`);
  }
}
