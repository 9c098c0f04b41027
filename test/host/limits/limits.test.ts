/**
 * Resource limits for real (issue 18): a guest (fixtures/hostile/consume.mjs) takes memory, processes,
 * CPU time and /tmp past its limits, sandboxed and not; each ends the way docs/host.md "Resource limits"
 * says, the host lives on, the report says what enforced each limit and what the run cost, and no cgroup
 * or process is left behind. Runs where the host can create cgroups (CI: root, cgroup v1).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { createLinkedPair } from "../../../src/wires/memory.js";
import { limitSupport, runGuest, runHost, type GuestCommand, type RunReport } from "../../../src/host/index.js";
import { launcherCommand, machineShells } from "../../../src/host/limits/launcher.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { DATA_RLIMIT_HEADROOM, RunLimits } from "../../../src/host/limits/limits.js";
import { DEFAULT_HOST_LIMITS } from "../../../src/host/settings.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneWithin, killAllWith, uniqueMarker } from "../../helpers/processes.js";

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../../", import.meta.url));
const consume = `${root}fixtures/hostile/consume.mjs`;
const MiB = 1024 * 1024;
// Nothing of src/ is called while the suite is collected (that would count as load-time coverage, which
// makes Stryker run every test for each mutant it reaches): the plan is read by the first test that needs
// it, and tests that need a cgroup skip themselves without one.
const hasBwrap = bwrapPath !== undefined;
let plan: ReturnType<typeof hostCgroupPlan> | undefined;
/** The host's cgroup plan, read when a test first needs it. */
const hostPlan = () => (plan ??= hostCgroupPlan());
/** What the report names as the cgroup's enforcer. */
const enforcerName = () => (hostPlan().version === "v1" ? "cgroup-v1" : "cgroup-v2");
/** Skips the test where this host can have no cgroup. */
const needCgroup = (ctx: { skip: (note?: string) => void }) => {
  if (hostPlan().version === null) ctx.skip("no writable cgroup here");
};
const markers: string[] = [];

/** The host's cgroup directories runs are created in. */
function parents(): string[] {
  const plan = hostPlan();
  if (plan.version === null) return [];
  return plan.version === "v2" ? [plan.parent] : Object.values(plan.parents);
}

/** This process's run cgroups still on disk. */
function leftoverCgroups(): string[] {
  return parents().flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.startsWith(`ears-${process.pid}-`))
      .map((name) => join(dir, name)),
  );
}

function consumeRun(input: Record<string, unknown>, options: Omit<GuestCommand, "command"> = {}): Promise<RunReport> {
  return runGuest({ command: process.execPath, args: [consume], cwd: root, killGraceMs: 500, input: input as never, ...options });
}

afterEach(() => {
  for (const marker of markers.splice(0)) killAllWith(marker);
});

describe("resource limits, enforced by a cgroup", () => {
  let enforcer = "";
  beforeEach((ctx) => {
    needCgroup(ctx);
    enforcer = enforcerName();
  });

  for (const sandbox of hasBwrap ? [true, false] : [false]) {
    const where = sandbox ? "sandboxed" : "unconfined";

    it(`${where}: memory past memoryBytes is MemoryLimit, the host lives on; the same body succeeds under a larger limit`, async () => {
      const tight = await consumeRun({ action: "memory", mib: 160 }, { sandbox, limits: { memoryBytes: 96 * MiB } });
      expect(tight.failure?.code, JSON.stringify(tight.failure)).toBe("MemoryLimit");
      expect(tight.failure?.message).toContain(`96 MiB (${96 * MiB} bytes; limits.memoryBytes)`);
      expect(tight.limits?.memoryBytes).toEqual({ value: 96 * MiB, requested: true, enforcedBy: enforcer });
      expect(tight.usage?.peakMemoryBytes).toBeLessThanOrEqual(96 * MiB);
      const roomy = await consumeRun({ action: "memory", mib: 160 }, { sandbox, limits: { memoryBytes: 320 * MiB } });
      expect(roomy.ok, JSON.stringify(roomy.failure)).toBe(true);
      expect(roomy.outcome?.structured).toBe(160);
      expect(leftoverCgroups()).toEqual([]);
    });

    it(`${where}: a process flood gets at most \`processes\` (EAGAIN inside, the run goes on) and leaves nothing behind`, async () => {
      const marker = uniqueMarker();
      markers.push(marker);
      const report = await consumeRun({ action: "fork", count: 40, marker }, { sandbox, limits: { processes: 24 } });
      expect(report.ok, JSON.stringify(report.failure ?? report.outcome)).toBe(true);
      const result = report.outcome?.structured as { started: number; errors: string[]; failed: number };
      expect(result.failed).toBeGreaterThan(0);
      expect(result.errors).toEqual(["EAGAIN"]);
      expect(result.started).toBeLessThan(24);
      expect(report.usage?.peakProcesses).toBeLessThanOrEqual(24);
      expect(report.limits?.processes).toEqual({ value: 24, requested: true, enforcedBy: enforcer });
      expect(await goneWithin(marker, 5000)).toEqual([]);
      expect(leftoverCgroups()).toEqual([]);
    });

    it(`${where}: a process bomb that never stops (EAGAIN ignored) ends as ProcessLimit, not RunTimeout, leaving nothing`, async () => {
      const marker = uniqueMarker();
      markers.push(marker);
      const report = await consumeRun({ action: "bomb", marker }, { sandbox, limits: { processes: 40, runTimeoutMs: 3000 } });
      expect(report.failure?.code, JSON.stringify(report.failure ?? report.outcome)).toBe("ProcessLimit");
      expect(report.failure?.message).toContain("was refused processes at its limit of 40 processes and threads (limits.processes)");
      expect(report.limits?.processes).toEqual({ value: 40, requested: true, enforcedBy: enforcer });
      expect(await goneWithin(marker, 5000)).toEqual([]);
      expect(leftoverCgroups()).toEqual([]);
    });

    it(`${where}: a busy loop ends as CpuLimit, not RunTimeout`, async () => {
      const report = await consumeRun({ action: "burn", ms: 60_000 }, { sandbox, limits: { cpuTimeMs: 400, runTimeoutMs: 30_000 } });
      expect(report.failure?.code, JSON.stringify(report.failure)).toBe("CpuLimit");
      expect(report.failure?.message).toContain("past its limit of 400 ms (limits.cpuTimeMs)");
      expect(report.usage?.cpuMs).toBeGreaterThan(400);
      expect(report.limits?.cpuTimeMs).toEqual({ value: 400, requested: true, enforcedBy: enforcer });
      expect(leftoverCgroups()).toEqual([]);
    });
  }

  it("usage is within the documented tolerance of what the body burned and held", async () => {
    const report = await consumeRun({ action: "hold", mib: 64, ms: 300 }, { sandbox: hasBwrap });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    const usage = report.usage!;
    expect(usage.source).toBe(enforcer);
    // docs/host.md "Resource limits": cpuMs includes the runtime's start (and bubblewrap's); the peak, its heap.
    expect(usage.cpuMs).toBeGreaterThanOrEqual(300);
    expect(usage.cpuMs).toBeLessThanOrEqual(300 + 1500);
    expect(usage.peakMemoryBytes).toBeGreaterThanOrEqual(64 * MiB);
    expect(usage.peakMemoryBytes).toBeLessThanOrEqual(64 * MiB + 128 * MiB);
    expect(usage.peakProcesses).toBeGreaterThanOrEqual(1);
    expect(usage.calls).toBe(0);
    expect(usage.wallMs).toBe(report.durationMs);
  });

  it("reports every limit, with the defaults, and what enforced each", async () => {
    const report = await consumeRun({ action: "memory", mib: 1 }, { sandbox: hasBwrap });
    expect(report.limits).toEqual({
      memoryBytes: { value: DEFAULT_HOST_LIMITS.memoryBytes, requested: false, enforcedBy: enforcer },
      processes: { value: DEFAULT_HOST_LIMITS.processes, requested: false, enforcedBy: enforcer },
      cpuTimeMs: { value: null, requested: false, enforcedBy: null },
      tmpBytes: hasBwrap
        ? { value: DEFAULT_HOST_LIMITS.tmpBytes, requested: false, enforcedBy: "bubblewrap" }
        : { value: DEFAULT_HOST_LIMITS.tmpBytes, requested: false, enforcedBy: null, note: expect.stringContaining("unconfined") },
    });
  });

  it("a launcher that cannot join the run's cgroup fails the run as SandboxUnavailable, naming it, and the cgroup is removed", async () => {
    const limits = RunLimits.prepare({ ...DEFAULT_HOST_LIMITS }, new Set(), "none");
    if (typeof limits === "string") throw new Error(limits);
    expect(leftoverCgroups().length).toBeGreaterThan(0);
    const report = {
      ok: false,
      failure: { code: "NoHello", message: "the guest's output ended before it said hello" },
      logs: [],
      droppedLogs: 0,
      calls: [],
      durationMs: 3,
      exit: { code: 125, signal: null },
      stderr: "ears-launcher: could not join the run's cgroup (/sys/fs/cgroup/x/cgroup.procs)\n",
    } as RunReport;
    const end = await limits.finish(report);
    expect(end.failure).toEqual({
      code: "SandboxUnavailable",
      message: "the guest was not started: could not join the run's cgroup (/sys/fs/cgroup/x/cgroup.procs)",
    });
    // The same status from a guest that said hello is the guest's own.
    expect(leftoverCgroups()).toEqual([]);
  });
});

describe.runIf(hasBwrap)("the sandbox's /tmp", () => {
  beforeEach((ctx) => needCgroup(ctx));
  it("a /tmp fill stops at tmpBytes with ENOSPC inside the guest; the run goes on", async () => {
    const report = await consumeRun({ action: "tmp", mib: 40 }, { limits: { tmpBytes: 8 * MiB } });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    expect(report.outcome?.structured).toEqual({ written: 8 * MiB, error: "ENOSPC" });
    expect(report.limits?.tmpBytes).toEqual({ value: 8 * MiB, requested: true, enforcedBy: "bubblewrap" });
  });
});

describe.runIf(process.platform === "linux")("limits that cannot apply", () => {
  it("tmpBytes asked for in an unconfined run is refused and nothing starts", async () => {
    const report = await consumeRun({ action: "memory", mib: 1 }, { sandbox: false, limits: { tmpBytes: 8 * MiB } });
    expect(report.failure?.code).toBe("SandboxUnavailable");
    expect(report.failure?.message).toMatch(
      /^the guest was not started: limits\.tmpBytes \(8388608\) was asked for but cannot be enforced: the guest runs unconfined/,
    );
    expect(report.pid).toBeUndefined();
  });

  it("checks the limits like the others: positive integers (or Infinity); CPU time in milliseconds", () => {
    const run = (limits: Record<string, unknown>) => () => runGuest({ command: process.execPath, limits: limits as never });
    expect(run({ memoryBytes: -1 })).toThrow(
      new RangeError("runGuest: limits.memoryBytes must be a positive integer (or Infinity), got -1"),
    );
    expect(run({ processes: 2.5 })).toThrow(RangeError);
    expect(run({ tmpBytes: Number.NaN })).toThrow(RangeError);
    expect(run({ cpuTimeMs: 0 })).toThrow(
      new RangeError("runGuest: limits.cpuTimeMs must be a positive number of milliseconds (or Infinity), got 0"),
    );
  });

  it("Infinity means no limit: reported as none, and nothing enforces it", async () => {
    const limits = { memoryBytes: Infinity, processes: Infinity, tmpBytes: Infinity, cpuTimeMs: Infinity };
    const report = await consumeRun({ action: "memory", mib: 1 }, { sandbox: false, limits });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    for (const state of Object.values(report.limits!)) expect(state).toEqual({ value: null, requested: true, enforcedBy: null });
  });
});

describe.runIf(process.platform === "linux")("without a cgroup", () => {
  it("CPU time falls back to RLIMIT_CPU: the kernel ends the guest with SIGXCPU, which the run reports as CpuLimit", async () => {
    const limits = RunLimits.prepare({ ...DEFAULT_HOST_LIMITS, cpuTimeMs: 1000 }, new Set(["cpuTimeMs"]), "none", {
      version: null,
      reason: "none here",
    });
    if (typeof limits === "string") throw new Error(limits);
    expect(limits.plan.report.cpuTimeMs).toMatchObject({ value: 1000, enforcedBy: "rlimit+watchdog" });
    expect(limits.plan.refusal).toBeUndefined();
    // The launcher as runGuest would build it, around a busy loop.
    const command = launcherCommand({
      command: process.execPath,
      args: ["-e", "for (;;) {}"],
      closeFds: [],
      keepFds: [],
      cgroupJoins: [],
      rlimits: { cpuSeconds: limits.plan.cpuRlimitSeconds! },
      env: {},
      shells: machineShells(),
    });
    if ("problem" in command) throw new Error(command.problem);
    const burnt = spawnSync(command.command, command.args, { timeout: 20_000 });
    expect(burnt.signal).toBe("SIGXCPU");
    const report = {
      ok: false,
      failure: { code: "GuestCrashed", message: "the guest crashed (signal SIGXCPU) before it said hello" },
      logs: [],
      droppedLogs: 0,
      calls: [],
      durationMs: 1000,
      exit: { code: null, signal: "SIGXCPU" },
    } as RunReport;
    const end = await limits.finish(report);
    expect(end.failure?.code).toBe("CpuLimit");
    expect(end.usage).toEqual({ source: "none", wallMs: 1000, calls: 0 });
  });

  it("memory asked for is refused with the fix where nothing can enforce it; on Linux rlimits and the watchdog enforce it", () => {
    const none = { version: null, reason: "no cgroup v1 memory, pids or cpuacct hierarchy is mounted" } as const;
    const bare = { tools: { rlimits: false, watchdog: false, root: false } };
    const refused = RunLimits.prepare(
      { ...DEFAULT_HOST_LIMITS, memoryBytes: 64 * MiB },
      new Set(["memoryBytes"]),
      "bubblewrap",
      none,
      undefined,
      bare,
    );
    expect(refused).toMatch(
      /^limits\.memoryBytes \(67108864\) was asked for but cannot be enforced: .*systemd-run --user --scope -p Delegate=yes/,
    );
    const here = RunLimits.prepare({ ...DEFAULT_HOST_LIMITS, memoryBytes: 64 * MiB }, new Set(["memoryBytes"]), "bubblewrap", none);
    if (typeof here === "string") throw new Error(here);
    expect(here.cgroup).toBeUndefined();
    expect(here.plan.report.memoryBytes).toMatchObject({ value: 64 * MiB, enforcedBy: "rlimit+watchdog" });
    expect(here.rlimits.dataBytes).toBe(64 * MiB + DATA_RLIMIT_HEADROOM);
  });
});

describe("limits outside a guest process", () => {
  it("runHost refuses a resource limit it cannot enforce (a wire has no process), before anything is sent", () => {
    const [, hostEnd] = createLinkedPair();
    expect(() => runHost(hostEnd, { limits: { memoryBytes: 1024 } })).toThrow(
      new TypeError(
        "runHost: limits.memoryBytes bounds a guest process (runGuest, runCode); runHost runs over a wire and cannot enforce it",
      ),
    );
  });

  it.runIf(process.platform === "linux")(
    "limitSupport says, for this machine, what enforces each limit and how to fix what is missing",
    async () => {
      const support = limitSupport();
      for (const name of ["memoryBytes", "processes", "cpuTimeMs", "tmpBytes"] as const) {
        const { enforcedBy, fix } = support.limits[name];
        // Either something enforces it, or there is a line that fixes it.
        expect(enforcedBy !== null || (typeof fix === "string" && fix.length > 0), name).toBe(true);
      }
      const cgroupVersion = hostPlan().version;
      if (cgroupVersion !== null) {
        expect(support.cgroup).toMatchObject({ version: cgroupVersion });
        expect(support.limits.memoryBytes.enforcedBy).toBe(enforcerName());
      } else expect(support.cgroup).toMatchObject({ version: null, fix: expect.stringContaining("Delegate=yes") });
      expect(limitSupport("none").limits.tmpBytes).toMatchObject({ enforcedBy: null, fix: expect.stringContaining("bubblewrap") });
    },
  );
});

describe.runIf(process.platform === "linux")("starting through the launcher", () => {
  it("a missing or non-executable command is still SpawnFailed with the same advice, not the shell's complaint", async () => {
    const missing = await runGuest({ command: "./no-such-guest", cwd: root, sandbox: false, limits: { cpuTimeMs: 60_000 } });
    expect(missing.failure?.code).toBe("SpawnFailed");
    expect(missing.failure?.message).toMatch(/ENOENT; check that the program exists/);
    const notExecutable = await runGuest({ command: "./package.json", cwd: root, sandbox: false, limits: { cpuTimeMs: 60_000 } });
    expect(notExecutable.failure?.code).toBe("SpawnFailed");
    expect(notExecutable.failure?.message).toMatch(/EACCES; check that the file is executable/);
    expect(leftoverCgroups()).toEqual([]);
  });
});
