/** Runs a guest program and the host engine in one process, over the in-memory wire pair. */
import { runHost } from "../host/index.js";
import type { HostOptions, RunReport } from "../host/index.js";
import { serve, type GuestProgram, type ServeReport } from "../guest/serve.js";
import { createLinkedPair } from "../wires/memory.js";
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
 * Runs `run` as a guest against the host engine in this process: `serve` on one end of
 * `createLinkedPair()`, `runHost` with `options` on the other. Resolves with the host's report, the
 * transcript and the guest's own view; never rejects for anything the program or the handlers do.
 *
 * ```ts
 * const report = await testGuest(async (ears) => (await ears.call("read", { path: "a" })).content, {
 *   capabilities: { read: ({ path }) => `contents of ${path}` },
 * });
 * expect(report.outcome).toEqual({ status: "success", content: "", structured: "contents of a" });
 * ```
 */
export async function testGuest(run: GuestProgram, options: HostOptions = {}): Promise<GuestTestReport> {
  if (typeof run !== "function") throw new TypeError("testGuest: the first argument must be the guest program (ears, input) => result");
  const [guestEnd, hostEnd] = createLinkedPair();
  const transcript: FrameEntry[] = [];
  const onFrame = options.onFrame;
  const guest = serve({ wire: guestEnd, run });
  let served: ServeReport | undefined;
  guest.then(
    (report) => (served = report),
    () => {}, // serve rejects only for bad options, which were checked above
  );
  const report = await runHost(hostEnd, {
    ...options,
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
