/**
 * report.usage counts processes, not threads (issue 29 item 8): one Node body is one process (bubblewrap's
 * two more when sandboxed), a body that starts three children has at least four, and the threads the pids
 * limit counts are reported apart (peakThreads). From the run's cgroup here; test/host/limits/proc-usage.test.ts
 * does the same from /proc.
 */
import { describe, expect, it } from "vitest";
import { runCode } from "../../../src/host/index.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneWithin, threeChildrenBody, uniqueMarker } from "../../helpers/processes.js";

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

    it(`${where}: a body that starts three children reports at least four processes`, async () => {
      const marker = uniqueMarker();
      const report = await runCode({ code: threeChildrenBody(marker), sandbox });
      expect(report.outcome?.structured, JSON.stringify(report.failure)).toBe(3);
      expect(report.usage?.peakProcesses).toBeGreaterThanOrEqual(4);
      expect(report.usage?.peakProcesses).toBeLessThanOrEqual(own + 3);
      expect(report.usage?.peakThreads).toBeGreaterThanOrEqual(report.usage!.peakProcesses!);
      expect(await goneWithin(marker, 5000)).toEqual([]);
    });
  }
});
