/**
 * `replay` for the test kit: a recording replayed against a guest program in this process (through
 * {@link testGuest}) or a command run as a child process. The replay itself lives in `transcripts/`,
 * which the CLI uses without loading the test kit.
 */
import type { GuestProgram } from "../guest/serve.js";
import type { TranscriptEntry } from "../transcripts/transcript.js";
import { loadRecording, type Recording } from "../transcripts/recording.js";
import { replayGuestCommand, replayHost, type ReplayCommand, type ReplayOptions, type ReplayReport } from "../transcripts/replay.js";
import { testGuest } from "./test-guest.js";

/** What to replay against: a guest program in this process, or a command run as a child process. */
export type ReplayTarget = { run: GuestProgram } | ReplayCommand;

/**
 * Replays a recording (a transcript file path, its entries, or a {@link Recording}) against a guest.
 * Stops at the first divergence; never rejects for anything the guest does. Rejects with a
 * `TranscriptError` or `RecordingError` when the recording cannot be read or replayed.
 *
 * ```ts
 * const replayed = await replay("run.ndjson", { command: "node", args: ["guest.mjs"] });
 * if (!replayed.ok) console.error(replayed.divergence);
 * ```
 */
export async function replay(
  recording: string | readonly TranscriptEntry[] | Recording,
  target: ReplayTarget,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  if (!("run" in target)) return replayGuestCommand(recording, target, options);
  const double = replayHost(await loadRecording(recording), options);
  return double.verdict(await testGuest(target.run, double.options));
}
