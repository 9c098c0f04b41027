/**
 * `replay` for the test kit: a recording replayed against a guest program in this process (through
 * {@link testGuest}) or a command run as a child process. The replay itself lives in `transcripts/`,
 * which the CLI uses without loading the test kit.
 */
import type { CapabilitySpecs, Contract, LooseSpecs, StandardSchemaV1 } from "../contract/contract.js";
import type { GuestProgram } from "../guest/serve.js";
import type { Json } from "../protocol/json.js";
import type { TranscriptEntry } from "../transcripts/transcript.js";
import { loadRecording, type Recording } from "../transcripts/recording.js";
import { replayGuestCommand, replayHost, type ReplayCommand, type ReplayOptions, type ReplayReport } from "../transcripts/replay.js";
import { runTestGuest, type ContractFor } from "./test-guest.js";

/**
 * A guest program to replay in this process, with what `serve` takes besides it (as in
 * {@link GuestTestOptions}): `contract` types and checks its calls (required for a typed program), `inputSchema`
 * its input.
 */
export type ReplayProgram<Specs extends CapabilitySpecs = LooseSpecs, Input = Json> = ContractFor<
  Specs,
  { run: GuestProgram<Specs, Input>; contract?: Contract<Specs>; inputSchema?: StandardSchemaV1<unknown, Input> }
>[0] & { run: GuestProgram<Specs, Input> };

/** What to replay against: a guest program in this process, or a command run as a child process. */
export type ReplayTarget<Specs extends CapabilitySpecs = LooseSpecs, Input = Json> = ReplayProgram<Specs, Input> | ReplayCommand;

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
export async function replay<Specs extends CapabilitySpecs = LooseSpecs, Input = Json>(
  recording: string | readonly TranscriptEntry[] | Recording,
  target: ReplayTarget<Specs, Input>,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  if (!("run" in target)) return replayGuestCommand(recording, target, options);
  const double = replayHost(await loadRecording(recording), options);
  const { run, contract, inputSchema } = target;
  return double.verdict(
    await runTestGuest(run, {
      ...double.options,
      ...(contract !== undefined && { contract }),
      ...(inputSchema !== undefined && { inputSchema }),
    }),
  );
}
