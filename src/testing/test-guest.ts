/** Runs a guest program and the host engine in one process, over the in-memory wire pair. */
import { runHost } from "../host/index.js";
import type { HostOptions, RunReport } from "../host/index.js";
import { isContract, type CapabilitySpecs, type Contract, type LooseSpecs, type StandardSchemaV1 } from "../contract/contract.js";
import { serve, type GuestProgram, type ServeReport } from "../guest/serve.js";
import type { Json } from "../protocol/json.js";
import { createLinkedPair } from "../wires/memory.js";
import { captureProgramOutput } from "./program-output.js";
// In testGuest every entry is a FrameEntry: both ends are this package's own serve and host engine over the
// in-memory pair, so no line is anything else (test/transcripts/transcript-frames.test.ts checks it).
import { transcriptEntry, type FrameEntry } from "../transcripts/transcript.js";

/** What {@link testGuest} returns: the host's report plus the whole conversation. */
export type GuestTestReport = RunReport & GuestTestDetails;

/** What {@link testGuest} adds to the host's report. */
export interface GuestTestDetails {
  /** Every frame both ways, in the order the host read or wrote them. */
  transcript: FrameEntry[];
  /**
   * How `serve` ended on the guest side; absent when the program was still running when the host
   * ended the run (a run timeout or an abort while the program awaited something other than the host).
   */
  guest?: ServeReport;
}

/**
 * Options for {@link testGuest}: the host's options (`capabilities`, `input`, `allowed`, limits, …), plus
 * what `serve` takes besides the wire and the program, so a typed guest runs with the same checks as in
 * a real run.
 */
export interface GuestTestOptions<Specs extends CapabilitySpecs = LooseSpecs, Input = Json> extends HostOptions {
  /**
   * The guest's contract (from `defineCapabilities`), what `serve({ capabilities })` gets: types the
   * program's `ears.call`, and checks each call's arguments before sending and each success's
   * `structured` before the program sees it. The host's handlers are `capabilities`, as for `runHost`
   * (`contract.implement({...})` checks on the host side too).
   */
  contract?: Contract<Specs>;
  /**
   * The schema of the invoke's input, what `serve({ input })` gets: the program receives the schema's
   * output, and an `input` that does not match ends the run with an `InvalidInput` failure result.
   */
  inputSchema?: StandardSchemaV1<unknown, Input>;
}

/**
 * The options of a program typed by a contract must hold that contract (without it, nothing would check
 * what the types promise); an untyped program's options may be left out.
 */
export type ContractFor<Specs extends CapabilitySpecs, Options> = [LooseSpecs] extends [Specs]
  ? [options?: Options]
  : [options: Options & { contract: Contract<Specs> }];

/**
 * Runs `run` as a guest against the host engine in this process: `serve` on one end of
 * `createLinkedPair()`, `runHost` with `options` on the other. Resolves with the host's report, the
 * transcript and the guest's own view; never rejects for anything the program or the handlers do.
 * Rejects with a TypeError for a `run` that is not a function, or a `contract` or `inputSchema` that
 * `serve` would refuse.
 *
 * As in a real stdio run, what the program prints (`console.*`, `process.stdout.write`) becomes `log`
 * frames (in `report.logs` and the transcript) from its hello to its result; output from anywhere else
 * in the process (the test, the handlers) is left alone.
 *
 * ```ts
 * const report = await testGuest(async (ears) => (await ears.call("read", { path: "a" })).content, {
 *   capabilities: { read: ({ path }) => `contents of ${path}` },
 * });
 * expect(report.outcome).toEqual({ status: "success", content: "", structured: "contents of a" });
 * ```
 */
export async function testGuest<Specs extends CapabilitySpecs = LooseSpecs, Input = Json>(
  run: GuestProgram<Specs, Input>,
  ...[options = {}]: ContractFor<Specs, GuestTestOptions<Specs, Input>>
): Promise<GuestTestReport> {
  return runTestGuest(run, options);
}

/** {@link testGuest} without the compile-time rule that a typed program brings its contract (replay's way in). */
export async function runTestGuest<Specs extends CapabilitySpecs, Input>(
  run: GuestProgram<Specs, Input>,
  options: GuestTestOptions<Specs, Input>,
): Promise<GuestTestReport> {
  if (typeof run !== "function") throw new TypeError("testGuest: the first argument must be the guest program (ears, input) => result");
  const { contract, inputSchema, ...hostOptions } = options ?? {};
  if (contract !== undefined && !isContract(contract)) {
    throw new TypeError("testGuest: options.contract must be a contract made by defineCapabilities");
  }
  if (inputSchema !== undefined && typeof inputSchema?.["~standard"]?.validate !== "function") {
    throw new TypeError(
      "testGuest: options.inputSchema must be a Standard Schema (an object with ~standard.validate), e.g. a zod 4 schema",
    );
  }
  const [guestEnd, hostEnd] = createLinkedPair();
  const transcript: FrameEntry[] = [];
  const onFrame = hostOptions.onFrame;
  const program = captureProgramOutput(guestEnd, run);
  const guest = serve<Specs, Input>({
    wire: program.wire,
    run: program.run,
    ...(contract !== undefined && { capabilities: contract }),
    ...(inputSchema !== undefined && { input: inputSchema }),
  });
  let served: ServeReport | undefined;
  guest.then(
    (report) => (served = report),
    () => {}, // serve rejects only for bad options, which were checked above
  );
  const report = await runHost(hostEnd, {
    ...hostOptions,
    onFrame: (from, line) => {
      transcript.push(transcriptEntry(from, line) as FrameEntry);
      return onFrame?.(from, line); // its back-pressure passes through
    },
  });
  // The guest releases its wire before the host's report settles; one turn of the event loop lets a
  // program that is already done finish, without waiting for one that is still running.
  await new Promise((resolve) => setImmediate(resolve));
  return served === undefined ? { ...report, transcript } : { ...report, transcript, guest: served };
}
