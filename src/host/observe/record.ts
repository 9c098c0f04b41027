/**
 * The `record` option of runGuest and runCode: a run written to a transcript as it happens (every frame,
 * the guest's stderr, the code body, the report as the closing note), the file `ears timeline` draws and
 * `ears replay` replays. The recorder itself is the transcripts' (`recordTo`, exported by the host entry);
 * the host needs only its shape, so the engine does not depend on the file format.
 */
import type { RunRecorder, RunReport } from "../api/types.js";

export type { RunRecorder } from "../api/types.js";

interface RecordedOptions {
  record?: RunRecorder;
  onFrame?: (direction: "guest" | "host", line: string) => unknown;
  onStderr?: (chunk: string) => void;
}

/**
 * Options with `record` folded into `onFrame` and `onStderr` (the caller's own still called first),
 * `begin`, which writes runCode's body as a note once every option has been checked, and `finish`, which
 * writes the report note. Throws a TypeError naming the option when `record` is not a recorder. `record`
 * absent: the options as they are, and `begin` and `finish` do nothing.
 */
export function recordedRun<Options extends RecordedOptions>(
  options: Options,
  caller: string,
): { options: Omit<Options, "record">; begin: (code: string) => void; finish: (report: RunReport) => RunReport } {
  if (typeof options !== "object" || options === null || options.record === undefined) {
    return { options, begin: () => {}, finish: (report) => report };
  }
  const { record: recorder, ...rest } = options;
  const isFunction = (value: unknown) => typeof value === "function";
  if (
    typeof recorder !== "object" ||
    recorder === null ||
    !isFunction(recorder.onFrame) ||
    !isFunction(recorder.stderr) ||
    !isFunction(recorder.report) ||
    (recorder.code !== undefined && !isFunction(recorder.code))
  ) {
    throw new TypeError(
      `${caller}: options.record must be a recorder, e.g. recordTo("run.ndjson", { timed: true }) from @posoco/ears/host`,
    );
  }
  const { onFrame, onStderr } = rest;
  return {
    begin: (code) => recorder.code?.(code),
    options: {
      ...rest,
      onFrame: (direction: "guest" | "host", line: string) => {
        const theirs = onFrame?.(direction, line);
        const recorded = recorder.onFrame(direction, line);
        // Either may ask the host to wait (a full sink): it waits for both.
        if (isThenable(theirs) || isThenable(recorded)) return Promise.all([theirs, recorded]);
        return theirs;
      },
      onStderr: (chunk: string) => {
        onStderr?.(chunk);
        recorder.stderr(chunk);
      },
    } as Omit<Options, "record">,
    finish: (report) => {
      try {
        recorder.report(report);
      } catch {
        // A recorder closed before the run ended: what it failed to write, close() has already said.
      }
      return report;
    },
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}
