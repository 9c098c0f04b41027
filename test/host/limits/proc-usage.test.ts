/**
 * Usage on a host with no cgroup (issue 18: "the kernel's accounting of the child otherwise"): the same
 * body as limits.test.ts's tolerance test, run with the host's cgroup plan taken away, reports `source:
 * "proc"` and figures within docs/host.md's tolerance for that source (a lower bound, sampled), sandboxed
 * and not.
 *
 * The process count of a body that starts three children: runCode's runner exits as soon as it has written its
 * result, and its children are then handed to init (or, sandboxed, to bubblewrap's), out of the tree, so the host's
 * last look at the result may find them gone from it; only a look while the runner lived counts them. Once a test
 * relied on a 100 ms sample landing between the spawns and the result, which a loaded machine did not ensure. Here
 * the body returns only after the test saw a sample of the whole tree (the sampler is wrapped to say so) and told it
 * to, through a file.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { runGuest } from "../../../src/host/index.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { runThreeChildren } from "../../helpers/three-children.js";
import { goneWithin } from "../../helpers/processes.js";

vi.mock("../../../src/host/limits/cgroup.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../../src/host/limits/cgroup.js")>()),
  hostCgroupPlan: () => ({ version: null, reason: "no cgroup in this test (test/host/limits/proc-usage.test.ts)" }),
}));

/** Told when the watch's sampler saw a tree of at least `processes` processes. */
const watch = vi.hoisted(() => ({ processes: Infinity, saw: () => {} }));
vi.mock("../../../src/host/limits/process-tree.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/host/limits/process-tree.js")>();
  class TreeUsage extends real.TreeUsage {
    override sample() {
      const sample = super.sample();
      if (sample !== undefined && sample.processes >= watch.processes) watch.saw();
      return sample;
    }
  }
  return { ...real, TreeUsage };
});

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../../", import.meta.url));
const consume = `${root}fixtures/hostile/consume.mjs`;
const MiB = 1024 * 1024;

describe.runIf(process.platform === "linux")("usage without a cgroup, from /proc", () => {
  for (const sandbox of bwrapPath === undefined ? [false] : [false, true]) {
    it(`${sandbox ? "sandboxed" : "unconfined"}: CPU, peak memory and processes of what the body burned and held`, async () => {
      const report = await runGuest({
        command: process.execPath,
        args: [consume],
        cwd: root,
        sandbox,
        input: { action: "hold", mib: 64, ms: 300 },
      });
      expect(report.ok, JSON.stringify(report.failure)).toBe(true);
      const usage = report.usage!;
      expect(usage.source).toBe("proc");
      // Sampled when the result arrives, after the burn: at least the body's 300 ms (less one 10 ms tick).
      expect(usage.cpuMs).toBeGreaterThanOrEqual(290);
      expect(usage.cpuMs).toBeLessThanOrEqual(300 + 1500);
      // Resident memory, which counts the runtime's mapped binary and heap beside the 64 MiB.
      expect(usage.peakMemoryBytes).toBeGreaterThanOrEqual(64 * MiB);
      expect(usage.peakMemoryBytes).toBeLessThanOrEqual(64 * MiB + 192 * MiB);
      // One Node guest (and bubblewrap's two); its threads are counted apart.
      expect(usage.peakProcesses).toBe(sandbox ? 3 : 1);
      expect(usage.peakThreads).toBeGreaterThan(usage.peakProcesses!);
      expect(report.limits?.memoryBytes.enforcedBy).toBe("rlimit+watchdog");
    });
  }

  for (const sandbox of bwrapPath === undefined ? [false] : [false, true]) {
    it(`${sandbox ? "sandboxed" : "unconfined"}: three children make at least four processes, not their threads`, async () => {
      // The runner (bubblewrap and its init too, sandboxed) and its three children.
      const whole = (sandbox ? 3 : 1) + 3;
      const seen = new Promise<void>((resolve) => Object.assign(watch, { processes: whole, saw: resolve }));
      try {
        const { report, marker } = await runThreeChildren(sandbox, seen);
        expect(report.outcome?.structured, JSON.stringify(report.failure)).toBe(3);
        expect(report.usage?.source).toBe("proc");
        expect(report.usage?.peakProcesses).toBe(whole);
        expect(report.usage?.peakThreads).toBeGreaterThan(report.usage!.peakProcesses!);
        // Killed with the run (a bound, not an ordering: the kill is sent before the report resolves).
        expect(await goneWithin(marker, 30_000)).toEqual([]);
      } finally {
        watch.processes = Infinity;
      }
    }, 240_000);
  }
});
