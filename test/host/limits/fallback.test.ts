/**
 * Limits without a cgroup (docs/host.md "Resource limits", "No cgroup here"): with the host's cgroup plan
 * taken away, a memory bomb ends as MemoryLimit and a process bomb as ProcessLimit, sandboxed and not, the
 * host lives on and nothing is left behind; the report names the mechanism of each limit. The same runs as
 * an unprivileged uid and without user namespaces are in fallback-environments.test.ts.
 */
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runGuest, type GuestCommand, type RunReport } from "../../../src/host/index.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneWithin, killAllWith, uniqueMarker } from "../../helpers/processes.js";

vi.mock("../../../src/host/limits/cgroup.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../../src/host/limits/cgroup.js")>()),
  hostCgroupPlan: () => ({ version: null, reason: "no cgroup in this test (test/host/limits/fallback.test.ts)" }),
}));

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../../", import.meta.url));
const consume = `${root}fixtures/hostile/consume.mjs`;
const MiB = 1024 * 1024;
const markers: string[] = [];
const isRoot = process.getuid?.() === 0;

function consumeRun(input: Record<string, unknown>, options: Omit<GuestCommand, "command"> = {}): Promise<RunReport> {
  return runGuest({ command: process.execPath, args: [consume], cwd: root, killGraceMs: 500, input: input as never, ...options });
}

afterEach(() => {
  for (const marker of markers.splice(0)) killAllWith(marker);
});

describe.runIf(process.platform === "linux")("limits without a cgroup: rlimits and the host's watchdog", () => {
  for (const sandbox of bwrapPath === undefined ? [false] : [false, true]) {
    const where = sandbox ? "sandboxed" : "unconfined";

    it(`${where}: a memory bomb ends as MemoryLimit, the host lives on; the same body succeeds under a larger limit`, async () => {
      const bomb = await consumeRun({ action: "memory", mib: 2048 }, { sandbox, limits: { memoryBytes: 160 * MiB, runTimeoutMs: 60_000 } });
      expect(bomb.failure?.code, JSON.stringify(bomb.failure ?? bomb.outcome)).toBe("MemoryLimit");
      expect(bomb.limits?.memoryBytes).toMatchObject({ value: 160 * MiB, requested: true, enforcedBy: "rlimit+watchdog" });
      const fits = await consumeRun({ action: "memory", mib: 32 }, { sandbox, limits: { memoryBytes: 256 * MiB } });
      expect(fits.outcome?.structured, JSON.stringify(fits.failure)).toBe(32);
    });

    it(`${where}: a process bomb ends as ProcessLimit and leaves nothing behind`, async () => {
      const marker = uniqueMarker();
      markers.push(marker);
      const report = await consumeRun({ action: "bomb", marker }, { sandbox, limits: { processes: 40, runTimeoutMs: 60_000 } });
      expect(report.failure?.code, JSON.stringify(report.failure ?? report.outcome)).toBe("ProcessLimit");
      expect(report.failure?.message).toMatch(/past its limit of 40 processes and threads \(limits\.processes\)/);
      expect(report.limits?.processes).toMatchObject({ value: 40, requested: true, enforcedBy: isRoot ? "watchdog" : "rlimit+watchdog" });
      expect(await goneWithin(marker, 10_000)).toEqual([]);
    });
  }

  it("a busy loop ends as CpuLimit, enforced by RLIMIT_CPU and the watchdog over the tree", async () => {
    const report = await consumeRun({ action: "burn", ms: 60_000 }, { sandbox: false, limits: { cpuTimeMs: 700, runTimeoutMs: 30_000 } });
    expect(report.failure?.code, JSON.stringify(report.failure)).toBe("CpuLimit");
    expect(report.limits?.cpuTimeMs).toMatchObject({ value: 700, requested: true, enforcedBy: "rlimit+watchdog" });
  });

  it("reports the mechanism of every default, and a body within them succeeds", async () => {
    const report = await consumeRun({ action: "hold", mib: 16, ms: 50 }, { sandbox: false });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    expect(report.limits?.memoryBytes).toMatchObject({ value: 2 ** 30, requested: false, enforcedBy: "rlimit+watchdog" });
    expect(report.limits?.processes.enforcedBy).toBe(isRoot ? "watchdog" : "rlimit+watchdog");
    expect(report.limits?.tmpBytes).toMatchObject({ enforcedBy: null, note: expect.stringMatching(/^not enforced: .*unconfined/) });
  });
});
