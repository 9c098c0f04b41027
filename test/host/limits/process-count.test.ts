/**
 * report.usage counts processes, not threads (issue 29 item 8): one Node body is one process (bubblewrap's
 * two more when sandboxed), a body that starts three children has at least four, and the threads the pids
 * limit counts are reported apart (peakThreads). From the run's cgroup here; test/host/limits/proc-usage.test.ts
 * does the same from /proc.
 *
 * The count is sampled (the kernel keeps no peak of cgroup.procs): at the guest's hello, every 100 ms, and at the
 * result. runCode's runner exits as soon as it has written its result and, sandboxed, takes its pid namespace (the
 * children) with it, so the look at the result may find nothing left; a loaded machine once ran such a body to its
 * end before the 100 ms watch looked at all, and the count was missing. The hello look is what makes one body's
 * count certain; for the three children, the body returns only after the test saw the cgroup read with all of them
 * (the read is wrapped to say so) and told it to, through a file.
 */
import { describe, expect, it, vi } from "vitest";
import { runCode, runGuest } from "../../../src/host/index.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { runThreeChildren } from "../../helpers/three-children.js";
import { goneWithin, liveWith, uniqueMarker } from "../../helpers/processes.js";

/** Told when a read of a run's cgroup counted at least `processes` processes. */
const watch = vi.hoisted(() => ({ processes: Infinity, saw: () => {} }));
vi.mock("../../../src/host/limits/cgroup.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/host/limits/cgroup.js")>();
  const read = real.RunCgroup.prototype.read;
  real.RunCgroup.prototype.read = function (this: import("../../../src/host/limits/cgroup.js").RunCgroup) {
    const counters = read.call(this);
    if ((counters.processes ?? 0) >= watch.processes) watch.saw();
    return counters;
  };
  return real;
});

failOnUnhandledRejections();

describe.runIf(hostCgroupPlan().version !== null)("process counts from the run's cgroup", () => {
  for (const sandbox of bwrapPath === undefined ? [false] : [false, true]) {
    const where = sandbox ? "sandboxed" : "unconfined";
    // bubblewrap runs two processes of its own (the one the host started, and the namespace's init).
    const own = sandbox ? 3 : 1;

    it(`${where}: one Node body is ${own} process${own === 1 ? "" : "es"}, with its threads counted apart`, async () => {
      const report = await runCode({ code: "return 1;", sandbox });
      expect(report.ok, JSON.stringify(report.failure)).toBe(true);
      expect(report.usage?.peakProcesses).toBe(own);
      // Node's own threads (V8's, libuv's): what `limits.processes` counts, never reported as processes.
      expect(report.usage?.peakThreads).toBeGreaterThan(own);
    });

    it(`${where}: a guest gone before the host reads its result is still counted, from the look at its hello`, async () => {
      // A shell guest: hello, the invoke read, a log, the result, and out. The host's log callback holds its event
      // loop (no watch tick, no read) until no process of the run is left alive (bubblewrap's carry the marker
      // too), so every later look finds nothing.
      const marker = uniqueMarker();
      const script = [
        `echo '{"type":"hello","protocol":1}'`,
        "read invoke",
        `echo '{"type":"log","content":"done soon"}'`,
        `echo '{"type":"result","outcome":{"status":"success","content":"done"}}'`,
      ].join("; ");
      const report = await runGuest({
        command: "sh",
        args: ["-c", script, "guest", marker],
        sandbox,
        onLog: () => {
          const pause = new Int32Array(new SharedArrayBuffer(4));
          for (const end = Date.now() + 60_000; liveWith(marker).length > 0 && Date.now() < end;) Atomics.wait(pause, 0, 0, 10);
        },
      });
      expect(report.ok, JSON.stringify(report.failure)).toBe(true);
      expect(report.outcome).toMatchObject({ status: "success", content: "done" });
      expect(report.usage?.peakProcesses).toBe(sandbox ? 3 : 1);
    });

    it(`${where}: a body that starts three children reports at least four processes`, async () => {
      const seen = new Promise<void>((resolve) => Object.assign(watch, { processes: own + 3, saw: resolve }));
      try {
        const { report, marker } = await runThreeChildren(sandbox, seen);
        expect(report.outcome?.structured, JSON.stringify(report.failure)).toBe(3);
        expect(report.usage?.peakProcesses).toBeGreaterThanOrEqual(4);
        expect(report.usage?.peakProcesses).toBeLessThanOrEqual(own + 3);
        expect(report.usage?.peakThreads).toBeGreaterThanOrEqual(report.usage!.peakProcesses!);
        // Killed with the run (a bound, not an ordering: the kill is sent before the report resolves).
        expect(await goneWithin(marker, 30_000)).toEqual([]);
      } finally {
        watch.processes = Infinity;
      }
    }, 240_000);
  }
});
