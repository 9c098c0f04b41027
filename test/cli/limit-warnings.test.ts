/**
 * The CLI's words for limits and their mechanisms (src/cli/report-output.ts) and the timeline's reading of a
 * recorded report's limits (src/transcripts/timeline.ts), on data: a warning per limit with a value that
 * nothing enforced, escaped; the one-line list; a recording's odd limits taken apart safely.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/host/index.js";
import { limitsLine, printLimitWarnings, reportedLimits } from "../../src/cli/report-output.js";
import { timelineOf } from "../../src/transcripts/timeline.js";

function captured(write: (stream: PassThrough) => void): string {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
  write(stream);
  return text;
}

const LIMITS: NonNullable<RunReport["limits"]> = {
  memoryBytes: { value: 2 ** 30, requested: false, enforcedBy: null, note: "not enforced: no cgroup memory controller here" },
  processes: { value: 64, requested: true, enforcedBy: "rlimit+watchdog", note: "RLIMIT_NPROC ..." },
  cpuTimeMs: { value: null, requested: false, enforcedBy: null },
  tmpBytes: { value: 2 ** 28, requested: true, enforcedBy: null, note: "not enforced: the guest runs unconfined\u001b[2J" },
};

describe("limits in the CLI's words", () => {
  it("warns of each limit with a value that nothing enforced: its name, flag, value, that it is not enforced and why", () => {
    const text = captured((stream) => printLimitWarnings({ limits: LIMITS }, stream));
    expect(text.split("\n")).toEqual([
      "ears: warning: limits.memoryBytes (--memory, default 1 GiB) is not enforced: no cgroup memory controller here",
      // Asked for (no "default"); the note's control characters escaped.
      "ears: warning: limits.tmpBytes (--tmp-size, 256 MiB) is not enforced: the guest runs unconfined\\x1b[2J",
      "",
    ]);
    expect(captured((stream) => printLimitWarnings({}, stream))).toBe("");
    const unknown = captured((stream) =>
      printLimitWarnings({ limits: { other: { value: 3, requested: false, enforcedBy: null } } as never }, stream),
    );
    expect(unknown).toBe("ears: warning: limits.other (default 3) is not enforced\n");
  });

  it("lists the limits with a value and their mechanisms on one line; none, nothing", () => {
    expect(limitsLine(reportedLimits(LIMITS))).toBe(
      "memory 1 GiB (NOT ENFORCED), processes 64 (rlimit+watchdog), /tmp 256 MiB (NOT ENFORCED)",
    );
    expect(limitsLine(reportedLimits({ ...LIMITS, cpuTimeMs: { value: 1500, requested: true, enforcedBy: "cgroup-v2" } }))).toContain(
      "CPU time 1.5 s (cgroup-v2)",
    );
    expect(limitsLine([])).toBeUndefined();
    expect(limitsLine(reportedLimits(undefined))).toBeUndefined();
  });

  it("the timeline takes a recording's limits as data: odd entries dropped, odd fields as null, a ProcessLimit as the run's end", () => {
    const timeline = timelineOf([
      {
        from: "host",
        report: {
          ok: false,
          failure: { code: "ProcessLimit", message: "the guest tree had 41 threads, past its limit of 40 processes" },
          limits: {
            memoryBytes: { value: 5, enforcedBy: "watchdog", note: "n" },
            processes: { value: "x", enforcedBy: 7 },
            bad: 3,
            list: [],
          },
          durationMs: 10,
        },
      },
    ]);
    expect(timeline.report?.limits).toEqual([
      { name: "memoryBytes", value: 5, enforcedBy: "watchdog", note: "n" },
      { name: "processes", value: null, enforcedBy: null },
    ]);
    expect(timeline.marks).toEqual([
      expect.objectContaining({ kind: "end", text: expect.stringMatching(/^ProcessLimit: the guest tree had 41/) }),
    ]);
    expect(timelineOf([{ from: "host", report: { ok: true, limits: [] } }]).report?.limits).toBeUndefined();
  });
});
