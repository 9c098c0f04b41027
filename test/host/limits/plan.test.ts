/**
 * Where a run's cgroup goes and what enforces each limit, as data: /proc/self/cgroup and the mount table
 * of machines with cgroup v1 (this project's CI), a delegated cgroup v2 subtree, the v2 root, hybrids and
 * containers; then the limit plan over every combination (fast-check): a limit with a value is enforced,
 * refused (asked for) or reported as not enforced (a default), never silently dropped.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { planCgroups, ownCgroupDirs, field, type CgroupLook } from "../../../src/host/limits/cgroup.js";
import {
  CGROUP_FIX,
  DATA_RLIMIT_HEADROOM,
  limitPlan,
  WATCH_MS,
  type CgroupOffer,
  type Confinement,
  type HostTools,
  type ResourceLimits,
} from "../../../src/host/limits/limits.js";
import type { ResourceLimitName } from "../../../src/host/api/types.js";

const V1_MOUNTS = [
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
  "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
].join("\n");
const V1_SELF = ["8:pids:/", "4:memory:/process_api/789c", "2:cpuacct:/", "1:cpu:/", "0::/"].join("\n");
const V2_MOUNTS = "30 23 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate";
const V2_DELEGATED = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/ears.scope";

/** A machine as files: contents by path, and the directories that may be written. */
function machine(files: Record<string, string>, writable: string[]): CgroupLook {
  return { read: (path) => files[path], writable: (path) => writable.includes(path) };
}

describe("the host's cgroups, from /proc/self/cgroup and the mount table", () => {
  it("cgroup v1 (this project's machines): a directory per controller under the host's own, CPU time from cpuacct", () => {
    expect(ownCgroupDirs(V1_SELF, V1_MOUNTS)).toStrictEqual({
      v2: "/sys/fs/cgroup/unified",
      v1: { memory: "/sys/fs/cgroup/memory/process_api/789c", pids: "/sys/fs/cgroup/pids", cpu: "/sys/fs/cgroup/cpuacct" },
    });
    const dirs = ["/sys/fs/cgroup/memory/process_api/789c", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/unified"];
    // The unified hierarchy of a hybrid machine offers no controller: v1 it is.
    const look = machine({ "/sys/fs/cgroup/unified/cgroup.controllers": "\n" }, dirs);
    expect(planCgroups(V1_SELF, V1_MOUNTS, look)).toStrictEqual({
      version: "v1",
      parents: { memory: dirs[0], pids: dirs[1], cpu: dirs[2] },
    });
  });

  it("cgroup v1 where the host may write only some controllers: those, and no others", () => {
    const look = machine({}, ["/sys/fs/cgroup/pids"]);
    expect(planCgroups(V1_SELF, V1_MOUNTS, look)).toStrictEqual({ version: "v1", parents: { pids: "/sys/fs/cgroup/pids" } });
  });

  it("cgroup v2 delegated to the host: its own directory, controllers switched on only where they are not yet", () => {
    const dir = "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/ears.scope";
    const look = machine({ [`${dir}/cgroup.controllers`]: "cpu io memory pids\n", [`${dir}/cgroup.subtree_control`]: "memory\n" }, [dir]);
    expect(planCgroups(V2_DELEGATED, V2_MOUNTS, look)).toStrictEqual({
      version: "v2",
      parent: dir,
      controllers: ["memory", "pids", "cpu"],
      enable: ["pids", "cpu"],
    });
  });

  it("cgroup v2 at the root (a container's own namespace): the root itself", () => {
    const look = machine({ "/sys/fs/cgroup/cgroup.controllers": "memory pids", "/sys/fs/cgroup/cgroup.subtree_control": "memory pids" }, [
      "/sys/fs/cgroup",
    ]);
    expect(planCgroups("0::/", V2_MOUNTS, look)).toStrictEqual({
      version: "v2",
      parent: "/sys/fs/cgroup",
      controllers: ["memory", "pids"],
      enable: [],
    });
  });

  it("cgroup v2 not delegated, or without memory and pids: no cgroup, with both reasons", () => {
    const dir = "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/ears.scope";
    const notMine = machine({ [`${dir}/cgroup.controllers`]: "memory pids cpu" }, []);
    const plan = planCgroups(V2_DELEGATED, V2_MOUNTS, notMine);
    expect(plan).toMatchObject({ version: null, reason: expect.stringContaining("not delegated") });
    const bare = machine({ [`${dir}/cgroup.controllers`]: "cpu" }, [dir]);
    expect(planCgroups(V2_DELEGATED, V2_MOUNTS, bare)).toMatchObject({
      version: null,
      reason: expect.stringMatching(/does not offer the memory and pids controllers \(it offers: cpu\).*no cgroup v1/),
    });
  });

  it("a mount of part of a hierarchy (a container) reaches the host's cgroup below its root, and a read-only mount is never used", () => {
    const mounts = "50 40 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";
    expect(ownCgroupDirs("4:memory:/docker/abc/run\\0401", mounts).v1.memory).toBe("/sys/fs/cgroup/memory/run\\0401");
    expect(ownCgroupDirs("4:memory:/elsewhere", mounts).v1.memory).toBeUndefined();
    // The host's cgroup is the mount's root itself (a container's own cgroup): the mount point.
    expect(ownCgroupDirs("4:memory:/docker/abc", mounts).v1.memory).toBe("/sys/fs/cgroup/memory");
    expect(ownCgroupDirs("4:memory:/docker/abcd", mounts).v1.memory).toBeUndefined();
    const readOnly = "50 40 0:32 / /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory";
    expect(ownCgroupDirs("4:memory:/", readOnly).v1).toStrictEqual({});
    // Octal escapes in mount points are decoded.
    expect(ownCgroupDirs("0::/a", "1 0 0:1 / /mnt/c\\040g rw - cgroup2 cgroup2 rw").v2).toBe("/mnt/c g/a");
  });

  it("reads the files as the kernel writes them: trailing newlines, ids of two digits, other file systems and odd lines ignored", () => {
    const mounts = [
      "",
      "not a mount line",
      "60 31 0:50 / /sys/fs/cgroup/fake rw,relatime - tmpfs tmpfs rw,memory,pids",
      "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
      "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
      "",
    ].join("\n");
    // No cgroup2 mount for the "0::" line, and a line that only ends like one: neither counts.
    expect(ownCgroupDirs("12:pids:/a\n11:memory:/b\nnoise 9:cpuacct:/c\n0::/\n\n", mounts)).toStrictEqual({
      v1: { memory: "/sys/fs/cgroup/memory/b", pids: "/sys/fs/cgroup/pids/a" },
    });
    // A controller the host is in but whose hierarchy is not mounted: none.
    expect(ownCgroupDirs("3:pids:/\n", "")).toStrictEqual({ v1: {} });
  });

  it("this host's plan, from its /proc files: not Linux, or /proc unreadable, is no cgroup with the reason", async () => {
    const { cgroupPlanOn } = await import("../../../src/host/limits/cgroup.js");
    expect(cgroupPlanOn("darwin", machine({}, []))).toStrictEqual({ version: null, reason: "cgroups are a Linux feature; this is darwin" });
    const unreadable = { version: null, reason: "/proc/self/cgroup cannot be read" };
    expect(cgroupPlanOn("linux", machine({}, []))).toStrictEqual(unreadable);
    expect(cgroupPlanOn("linux", machine({ "/proc/self/cgroup": V1_SELF }, []))).toStrictEqual(unreadable);
    expect(cgroupPlanOn("linux", machine({ "/proc/self/mountinfo": V1_MOUNTS }, []))).toStrictEqual(unreadable);
    const both = machine({ "/proc/self/cgroup": V1_SELF, "/proc/self/mountinfo": V1_MOUNTS }, ["/sys/fs/cgroup/pids"]);
    expect(cgroupPlanOn("linux", both)).toStrictEqual({ version: "v1", parents: { pids: "/sys/fs/cgroup/pids" } });
  });

  it("the machine as it is: realLook reads files and tells writable directories", async () => {
    const { realLook } = await import("../../../src/host/limits/cgroup.js");
    const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "ears-look-"));
    try {
      writeFileSync(join(dir, "f"), "text");
      expect(realLook.read(join(dir, "f"))).toBe("text");
      expect(realLook.read(join(dir, "missing"))).toBeUndefined();
      expect(realLook.writable(dir)).toBe(true);
      expect(realLook.writable(join(dir, "missing"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("cgroup v2 offering memory but not pids, or nothing at all, or its controllers file unread: no v2, and what it offers", () => {
    const dir = "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/ears.scope";
    const memoryOnly = machine({ [`${dir}/cgroup.controllers`]: "cpu memory\n" }, [dir]);
    expect(planCgroups(V2_DELEGATED, V2_MOUNTS, memoryOnly)).toStrictEqual({
      version: null,
      reason:
        `the host's cgroup v2 ${dir} does not offer the memory and pids controllers (it offers: cpu memory); ` +
        "no cgroup v1 memory, pids or cpuacct hierarchy is mounted",
    });
    for (const look of [machine({ [`${dir}/cgroup.controllers`]: "\n" }, [dir]), machine({}, [dir])]) {
      expect(planCgroups(V2_DELEGATED, V2_MOUNTS, look)).toMatchObject({ reason: expect.stringContaining("(it offers: none)") });
    }
  });

  it("cgroup v1 mounted but none of it writable: no cgroup, and that reason", () => {
    expect(planCgroups(V1_SELF, V1_MOUNTS, machine({ "/sys/fs/cgroup/unified/cgroup.controllers": "" }, []))).toStrictEqual({
      version: null,
      reason:
        "the host's cgroup v2 /sys/fs/cgroup/unified does not offer the memory and pids controllers (it offers: none); " +
        "the host may not write its cgroup v1 memory, pids or cpuacct directories",
    });
  });

  it("no cgroup file system at all: none, and why", () => {
    expect(planCgroups("0::/", "22 1 0:21 / /proc rw - proc proc rw", machine({}, []))).toStrictEqual({
      version: null,
      reason: "no cgroup v1 memory, pids or cpuacct hierarchy is mounted",
    });
  });

  it.runIf(process.platform === "linux")("this host's plan: from its own /proc/self/cgroup and mount table, read once", async () => {
    // The module itself, whatever a setup file made of it (under Stryker, test/helpers/no-host-cgroups.ts).
    const cgroup = await vi.importActual<typeof import("../../../src/host/limits/cgroup.js")>("../../../src/host/limits/cgroup.js");
    const { readFileSync } = await import("node:fs");
    const expected = cgroup.planCgroups(
      readFileSync("/proc/self/cgroup", "utf8"),
      readFileSync("/proc/self/mountinfo", "utf8"),
      cgroup.realLook,
    );
    const plan = cgroup.hostCgroupPlan();
    expect(plan).toStrictEqual(expected);
    expect(cgroup.hostCgroupPlan()).toBe(plan);
  });

  it("reads the counters of cpu.stat, memory.events and memory.oom_control", () => {
    expect(field("usage_usec 1500\nuser_usec 1000\n", "usage_usec")).toBe(1500);
    expect(field("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill")).toBe(2);
    expect(field("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n", "oom_kill")).toBe(1);
    expect(field(undefined, "oom_kill")).toBeUndefined();
  });
});

const NAMES: ResourceLimitName[] = ["memoryBytes", "processes", "cpuTimeMs", "tmpBytes"];
const DEFAULTS: ResourceLimits = { memoryBytes: 2 ** 30, processes: 256, cpuTimeMs: Infinity, tmpBytes: 2 ** 28 };
/** Linux, not root: the launcher's rlimits and the /proc watchdog. */
const LINUX: HostTools = { rlimits: true, watchdog: true, root: false };
/** Nothing but cgroups. */
const BARE: HostTools = { rlimits: false, watchdog: false, root: false };

describe("the limit plan", () => {
  it("with cgroup v1 and a sandbox: memory and processes by the cgroup, /tmp by bubblewrap, CPU by the cgroup when asked", () => {
    const plan = limitPlan({
      limits: { ...DEFAULTS, cpuTimeMs: 500 },
      requested: new Set(["cpuTimeMs"]),
      confined: "bubblewrap",
      cgroup: { version: "v1", controllers: ["memory", "pids", "cpu"] },
      tools: LINUX,
    });
    expect(plan.report).toStrictEqual({
      memoryBytes: { value: 2 ** 30, requested: false, enforcedBy: "cgroup-v1" },
      processes: { value: 256, requested: false, enforcedBy: "cgroup-v1" },
      cpuTimeMs: { value: 500, requested: true, enforcedBy: "cgroup-v1" },
      tmpBytes: { value: 2 ** 28, requested: false, enforcedBy: "bubblewrap" },
    });
    expect(plan.cgroupLimits).toStrictEqual({ memoryBytes: 2 ** 30, processes: 256 });
    expect(plan.tmpBytes).toBe(2 ** 28);
    expect(plan.refusal).toBeUndefined();
    expect(plan.cpuRlimitSeconds).toBeUndefined();
    expect(plan.rlimits).toStrictEqual({});
    expect(plan.watch).toStrictEqual({});
    expect(plan.unenforced).toStrictEqual([]);
  });

  it("without a cgroup, on Linux: rlimits and the watchdog enforce memory, processes and CPU; nothing is refused", () => {
    const none: CgroupOffer = { version: null, reason: "no cgroup v1 memory, pids or cpuacct hierarchy is mounted" };
    const plan = limitPlan({
      limits: { ...DEFAULTS, memoryBytes: 1000, cpuTimeMs: 1500 },
      requested: new Set(["memoryBytes", "processes"]),
      confined: "bubblewrap",
      cgroup: none,
      tools: LINUX,
    });
    expect(plan.refusal).toBeUndefined();
    expect(plan.report).toStrictEqual({
      memoryBytes: {
        value: 1000,
        requested: true,
        enforcedBy: "rlimit+watchdog",
        note:
          "RLIMIT_DATA per process at the limit plus 1 GiB, a backstop (allocation past it fails); " +
          `the host's watchdog over the tree's resident memory, every ${WATCH_MS} ms`,
      },
      processes: {
        value: 256,
        requested: true,
        enforcedBy: "rlimit+watchdog",
        note:
          "RLIMIT_NPROC, per user machine-wide, set to the user's threads at the start plus twice the limit; " +
          `the host's watchdog over the tree's processes and threads, every ${WATCH_MS} ms`,
      },
      cpuTimeMs: {
        value: 1500,
        requested: false,
        enforcedBy: "rlimit+watchdog",
        note: `RLIMIT_CPU per process, in whole seconds; the host's watchdog over the tree's CPU time, every ${WATCH_MS} ms`,
      },
      tmpBytes: { value: 2 ** 28, requested: false, enforcedBy: "bubblewrap" },
    });
    expect(plan.rlimits).toStrictEqual({ dataBytes: 1000 + DATA_RLIMIT_HEADROOM, processes: 256, cpuSeconds: 2 });
    expect(plan.watch).toStrictEqual({ memoryBytes: 1000, processes: 256, cpuTimeMs: 1500 });
    expect(plan.cpuRlimitSeconds).toBe(2);
    expect(plan.cgroupLimits).toStrictEqual({});
    // Root: the kernel exempts it from RLIMIT_NPROC, so the watchdog alone bounds processes.
    const root = limitPlan({
      limits: DEFAULTS,
      requested: new Set(),
      confined: "bubblewrap",
      cgroup: none,
      tools: { ...LINUX, root: true },
    });
    expect(root.report.processes.enforcedBy).toBe("watchdog");
    expect(root.rlimits).toStrictEqual({ dataBytes: 2 ** 30 + DATA_RLIMIT_HEADROOM });
    // rlimits without the watchdog (no children lists), the watchdog without rlimits (no shell).
    const rlimitsOnly = limitPlan({
      limits: DEFAULTS,
      requested: new Set(),
      confined: "bubblewrap",
      cgroup: none,
      tools: { ...LINUX, watchdog: false },
    });
    expect(rlimitsOnly.report.memoryBytes).toMatchObject({
      enforcedBy: "rlimit",
      note: "RLIMIT_DATA per process at the limit plus 1 GiB, a backstop (allocation past it fails)",
    });
    expect(rlimitsOnly.watch).toStrictEqual({});
    const watchOnly = limitPlan({
      limits: DEFAULTS,
      requested: new Set(),
      confined: "bubblewrap",
      cgroup: none,
      tools: { ...LINUX, rlimits: false },
    });
    expect(watchOnly.report.processes.enforcedBy).toBe("watchdog");
    expect(watchOnly.rlimits).toStrictEqual({});
  });

  it("with neither cgroup nor rlimits nor watchdog: asked-for memory is refused with the fix, defaults are noted and listed", () => {
    const none: CgroupOffer = { version: null, reason: "no cgroup v1 memory, pids or cpuacct hierarchy is mounted" };
    const asked = limitPlan({
      limits: { ...DEFAULTS, memoryBytes: 1000 },
      requested: new Set(["memoryBytes"]),
      confined: "bubblewrap",
      cgroup: none,
      tools: BARE,
    });
    expect(asked.refusal).toMatch(
      /^limits\.memoryBytes \(1000\) was asked for but cannot be enforced: no cgroup memory controller can be used here \(no cgroup v1 .*\), nor rlimits/,
    );
    expect(asked.refusal).toContain(
      "; run the host as root where the cgroup v1 memory, pids and cpuacct hierarchies are mounted writable, " +
        "or in a cgroup v2 subtree delegated to it",
    );
    const defaults = limitPlan({
      limits: { ...DEFAULTS, cpuTimeMs: 1500 },
      requested: new Set(),
      confined: "bubblewrap",
      cgroup: none,
      tools: BARE,
    });
    expect(defaults.refusal).toBeUndefined();
    expect(defaults.report.memoryBytes).toMatchObject({ value: 2 ** 30, enforcedBy: null, note: expect.stringMatching(/^not enforced: /) });
    expect(defaults.report.cpuTimeMs).toMatchObject({ value: 1500, enforcedBy: null });
    expect(defaults.unenforced).toStrictEqual([
      expect.stringMatching(/^limits\.memoryBytes \(default 1073741824\) is not enforced: no cgroup memory controller/),
      expect.stringMatching(/^limits\.processes \(default 256\) is not enforced: no cgroup pids controller/),
      expect.stringMatching(/^limits\.cpuTimeMs \(default 1500\) is not enforced: no cgroup cpu controller/),
    ]);
  });

  it("a cgroup without a controller: the limit it would enforce is refused saying so; two refusals are both given", () => {
    const plan = limitPlan({
      limits: { ...DEFAULTS, memoryBytes: 100, processes: 5 },
      requested: new Set(["memoryBytes", "processes"]),
      confined: "bubblewrap",
      cgroup: { version: "v1", controllers: ["cpu"] },
      tools: BARE,
    });
    const nor = "nor rlimits and a /proc watchdog (Linux only)";
    expect(plan.refusal).toBe(
      [
        "limits.memoryBytes (100) was asked for but cannot be enforced: no cgroup memory controller can be used here " +
          `(the host's cgroup has no memory controller), ${nor}; ${CGROUP_FIX}`,
        "limits.processes (5) was asked for but cannot be enforced: no cgroup pids controller can be used here " +
          `(the host's cgroup has no pids controller), ${nor}; ${CGROUP_FIX}`,
      ].join("; "),
    );
    // On Linux the same cgroup gets the fallback for what it lacks, beside the cgroup for what it has.
    const linux = limitPlan({
      limits: { ...DEFAULTS, memoryBytes: 100, processes: 5, cpuTimeMs: 10 },
      requested: new Set(["memoryBytes", "processes"]),
      confined: "bubblewrap",
      cgroup: { version: "v1", controllers: ["cpu"] },
      tools: LINUX,
    });
    expect([linux.report.memoryBytes.enforcedBy, linux.report.processes.enforcedBy, linux.report.cpuTimeMs.enforcedBy]).toStrictEqual([
      "rlimit+watchdog",
      "rlimit+watchdog",
      "cgroup-v1",
    ]);
    expect(linux.watch).toStrictEqual({ memoryBytes: 100, processes: 5 });
  });

  it("Landlock (no private /tmp): tmpBytes is RLIMIT_FSIZE per file where rlimits can be set, else refused or noted", () => {
    const cgroup: CgroupOffer = { version: "v2", controllers: ["memory", "pids", "cpu"] };
    const plan = limitPlan({ limits: DEFAULTS, requested: new Set(["tmpBytes"]), confined: "landlock", cgroup, tools: LINUX });
    expect(plan.report.tmpBytes).toStrictEqual({
      value: 2 ** 28,
      requested: true,
      enforcedBy: "rlimit",
      note: "RLIMIT_FSIZE: each file the run writes, not their total (no private /tmp without bubblewrap)",
    });
    expect(plan.rlimits).toStrictEqual({ fileBytes: 2 ** 28 });
    expect(plan.tmpBytes).toBeUndefined();
    const bare = limitPlan({ limits: DEFAULTS, requested: new Set(["tmpBytes"]), confined: "landlock", cgroup, tools: BARE });
    expect(bare.refusal).toMatch(/^limits\.tmpBytes \(268435456\) was asked for but cannot be enforced: the sandbox has no private \/tmp/);
    expect(limitPlan({ limits: DEFAULTS, requested: new Set(), confined: "bubblewrap", cgroup, tools: BARE }).tmpBytes).toBe(2 ** 28);
    expect(
      limitPlan({ limits: DEFAULTS, requested: new Set(), confined: "none", cgroup, tools: LINUX }).report.tmpBytes.enforcedBy,
    ).toBeNull();
  });

  it("unconfined: /tmp cannot be bounded, refused when asked, reported when default", () => {
    const cgroup: CgroupOffer = { version: "v2", controllers: ["memory", "pids", "cpu"] };
    expect(limitPlan({ limits: DEFAULTS, requested: new Set(["tmpBytes"]), confined: "none", cgroup, tools: LINUX }).refusal).toMatch(
      /limits\.tmpBytes .* unconfined/,
    );
    const plan = limitPlan({ limits: DEFAULTS, requested: new Set(), confined: "none", cgroup, tools: LINUX });
    expect(plan.report.tmpBytes).toMatchObject({ enforcedBy: null, note: expect.stringContaining("unconfined") });
    expect(plan.report.memoryBytes.enforcedBy).toBe("cgroup-v2");
  });

  it("never drops a limit silently (fast-check): each with a value is enforced, refused if asked, or noted if default", () => {
    const limitArb = fc.constantFrom(1, 4096, Infinity);
    fc.assert(
      fc.property(
        fc.record({ memoryBytes: limitArb, processes: limitArb, cpuTimeMs: limitArb, tmpBytes: limitArb }),
        fc.subarray(NAMES),
        fc.constantFrom<Confinement>("bubblewrap", "landlock", "none"),
        fc.oneof(
          fc.constant<CgroupOffer>({ version: null, reason: "none here" }),
          fc.record({ version: fc.constantFrom<"v1" | "v2">("v1", "v2"), controllers: fc.subarray(["memory", "pids", "cpu"] as const) }),
        ),
        fc.record({ rlimits: fc.boolean(), watchdog: fc.boolean(), root: fc.boolean() }),
        (limits, requested, confined, cgroup, tools) => {
          const plan = limitPlan({ limits, requested: new Set(requested), confined, cgroup, tools });
          for (const name of NAMES) {
            const state = plan.report[name];
            expect(state.requested).toBe(requested.includes(name));
            if (limits[name] === Infinity) {
              expect(state).toStrictEqual({ value: null, requested: state.requested, enforcedBy: null });
              continue;
            }
            expect(state.value).toBe(limits[name]);
            if (state.enforcedBy === null) {
              expect(state.note).toMatch(/^not enforced: /);
              if (state.requested) expect(plan.refusal).toContain(`limits.${name} (${limits[name]})`);
              // A default nothing enforces is said (once per process, on stderr): never dropped.
              else expect(plan.unenforced).toContainEqual(expect.stringMatching(new RegExp(`^limits\\.${name} \\(default `)));
            } else if (!state.enforcedBy.startsWith("cgroup") && state.enforcedBy !== "bubblewrap") {
              // A fallback says what it means.
              expect(state.note).toBeDefined();
            }
            // The watchdog watches exactly the limits the report says it enforces.
            if (name !== "tmpBytes")
              expect(plan.watch[name]).toBe(state.enforcedBy?.endsWith("watchdog") === true ? limits[name] : undefined);
            // On Linux (rlimits and the watchdog), only /tmp outside a sandbox can go unenforced.
            if (tools.rlimits && tools.watchdog && name !== "tmpBytes") expect(state.enforcedBy).not.toBeNull();
            // What the report says enforces a limit is what the plan hands the mechanism.
            if (name === "memoryBytes")
              expect(plan.cgroupLimits.memoryBytes).toBe(state.enforcedBy?.startsWith("cgroup") ? limits[name] : undefined);
            if (name === "processes")
              expect(plan.cgroupLimits.processes).toBe(state.enforcedBy?.startsWith("cgroup") ? limits[name] : undefined);
            if (name === "tmpBytes") expect(plan.tmpBytes).toBe(state.enforcedBy === "bubblewrap" ? limits[name] : undefined);
            if (name === "cpuTimeMs") expect(plan.cpuRlimitSeconds !== undefined).toBe(state.enforcedBy?.startsWith("rlimit") === true);
            if (name === "cpuTimeMs") expect(plan.rlimits.cpuSeconds).toBe(plan.cpuRlimitSeconds);
            if (name === "memoryBytes")
              expect(plan.rlimits.dataBytes).toBe(state.enforcedBy?.startsWith("rlimit") ? limits[name] + DATA_RLIMIT_HEADROOM : undefined);
            if (name === "processes")
              expect(plan.rlimits.processes).toBe(state.enforcedBy?.startsWith("rlimit") ? limits[name] : undefined);
            if (name === "processes" && tools.root) expect(state.enforcedBy?.startsWith("rlimit") ?? false).toBe(false);
            if (name === "tmpBytes") expect(plan.rlimits.fileBytes).toBe(state.enforcedBy === "rlimit" ? limits[name] : undefined);
          }
          const refusedAny = NAMES.some(
            (name) => plan.report[name].requested && plan.report[name].enforcedBy === null && limits[name] !== Infinity,
          );
          expect(plan.refusal !== undefined).toBe(refusedAny);
        },
      ),
      { seed: 1818 },
    );
  });
});

describe("a run's cgroup v2, on a directory tree shaped like one", () => {
  it("switches on what the plan says, writes the limits, reads the counters, and removes itself", async () => {
    const { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync, unlinkSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { RunCgroup, realCgroupFiles } = await import("../../../src/host/limits/cgroup.js");
    // The real files, in a temporary directory; kill is a recorder, so nothing here can reach a process.
    const files = { ...realCgroupFiles(), kill: (pid: number) => void pid };
    const parent = mkdtempSync(join(tmpdir(), "ears-fake-cgroup-"));
    try {
      const cgroup = RunCgroup.create(
        { version: "v2", parent, controllers: ["memory", "pids", "cpu"], enable: ["pids", "cpu"] },
        { memoryBytes: 4096, processes: 7 },
        files,
      );
      expect(readFileSync(join(parent, "cgroup.subtree_control"), "utf8")).toBe("+pids +cpu");
      const [dir] = cgroup.directories;
      expect(cgroup.joins).toStrictEqual([{ file: join(dir!, "cgroup.procs"), as: "process" }]);
      expect(readFileSync(join(dir!, "memory.max"), "utf8")).toBe("4096");
      expect(readFileSync(join(dir!, "pids.max"), "utf8")).toBe("7");
      writeFileSync(join(dir!, "cpu.stat"), "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
      writeFileSync(join(dir!, "memory.peak"), "1048576\n");
      writeFileSync(join(dir!, "memory.events"), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
      writeFileSync(join(dir!, "pids.peak"), "5\n");
      writeFileSync(join(dir!, "cgroup.procs"), "31\n32\n");
      expect(cgroup.read()).toStrictEqual({ cpuMs: 2.5, peakMemoryBytes: 1048576, oomKills: 1, peakTasks: 5, processes: 2 });
      // A real cgroup directory can be removed with its files in it; this one only once they are gone.
      for (const file of readdirSync(dir!)) unlinkSync(join(dir!, file));
      expect(await cgroup.remove(1000)).toBe(true);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it("cgroup v1: a directory per hierarchy, joined by the launcher's thread through each one's tasks file", async () => {
    const { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { RunCgroup, realCgroupFiles } = await import("../../../src/host/limits/cgroup.js");
    // The real files, in a temporary directory; kill is a recorder, so nothing here can reach a process.
    const files = { ...realCgroupFiles(), kill: (pid: number) => void pid };
    const parent = mkdtempSync(join(tmpdir(), "ears-fake-cgroup-"));
    const parents = { memory: join(parent, "memory"), pids: join(parent, "pids"), cpu: join(parent, "cpuacct") };
    for (const dir of Object.values(parents)) mkdirSync(dir);
    try {
      const cgroup = RunCgroup.create({ version: "v1", parents }, { memoryBytes: 4096, processes: 7 }, files);
      const dirs = cgroup.directories;
      expect(dirs.map((dir) => dir.slice(0, dir.lastIndexOf("/")))).toStrictEqual(Object.values(parents));
      // "tasks", by thread: the write that skips the kernel's global threadgroup lock (BENCHMARKS.md).
      expect(cgroup.joins).toStrictEqual(dirs.map((dir) => ({ file: join(dir, "tasks"), as: "thread" })));
      expect(readFileSync(join(cgroup.dirs.memory!, "memory.limit_in_bytes"), "utf8")).toBe("4096");
      expect(readFileSync(join(cgroup.dirs.pids!, "pids.max"), "utf8")).toBe("7");
      for (const dir of dirs) for (const file of readdirSync(dir)) unlinkSync(join(dir, file));
      expect(await cgroup.remove(1000)).toBe(true);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  it("the real files: reads, writes, writes only what exists, makes and removes directories, as CgroupFiles says", async () => {
    const { existsSync, mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { realCgroupFiles } = await import("../../../src/host/limits/cgroup.js");
    const dir = mkdtempSync(join(tmpdir(), "ears-fake-cgroup-"));
    try {
      const files = realCgroupFiles();
      const sub = join(dir, "sub");
      files.mkdir(sub);
      expect(() => files.mkdir(sub)).toThrow(expect.objectContaining({ code: "EEXIST" }));
      expect(() => files.mkdir(join(dir, "no", "parent"))).toThrow(expect.objectContaining({ code: "ENOENT" }));
      expect(files.read(join(sub, "knob"))).toBeUndefined();
      expect(files.writeIfPresent(join(sub, "knob"), "1")).toBe(false);
      expect(existsSync(join(sub, "knob"))).toBe(false);
      files.write(join(sub, "knob"), "2");
      expect(files.writeIfPresent(join(sub, "knob"), "3")).toBe(true);
      expect(files.read(join(sub, "knob"))).toBe("3");
      expect(() => files.write(join(dir, "no", "file"), "x")).toThrow(expect.objectContaining({ code: "ENOENT" }));
      expect(files.rmdir(sub)).toBe(false);
      rmSync(join(sub, "knob"));
      expect(files.rmdir(sub)).toBe(true);
      expect(files.rmdir(sub)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves nothing behind when a limit cannot be written", async () => {
    const { mkdtempSync, mkdirSync, readdirSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { RunCgroup, realCgroupFiles } = await import("../../../src/host/limits/cgroup.js");
    // The real files, in a temporary directory; kill is a recorder, so nothing here can reach a process.
    const files = { ...realCgroupFiles(), kill: (pid: number) => void pid };
    const parent = mkdtempSync(join(tmpdir(), "ears-fake-cgroup-"));
    const memory = join(parent, "memory");
    const pids = join(parent, "pids-missing");
    mkdirSync(memory);
    try {
      expect(() => RunCgroup.create({ version: "v1", parents: { memory, pids } }, { memoryBytes: 4096 }, files)).toThrow(/ENOENT/);
      expect(readdirSync(memory)).toStrictEqual([]);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe("switching cgroup v2 controllers on for a delegated cgroup that holds the host", () => {
  /** A cgroup file system as a map; subtree_control refuses (EBUSY) while `parent` holds processes. */
  function fakeTree(parent: string, procs: string[]) {
    const files = new Map<string, string>([[`${parent}/cgroup.procs`, procs.join("\n")]]);
    const dirs = new Set<string>([parent]);
    const written: string[] = [];
    const fs = {
      read: (path: string) => files.get(path),
      mkdir: (path: string) => void dirs.add(path),
      write(path: string, text: string) {
        written.push(`${path} <- ${text}`);
        if (path === `${parent}/cgroup.subtree_control` && (files.get(`${parent}/cgroup.procs`) ?? "").trim() !== "") {
          throw Object.assign(new Error("EBUSY: resource busy or locked, write"), { code: "EBUSY" });
        }
        if (path.endsWith("/cgroup.procs")) {
          // Moving a process takes it out of wherever it was.
          for (const [file, list] of files) {
            if (file.endsWith("/cgroup.procs"))
              files.set(
                file,
                list
                  .split("\n")
                  .filter((pid) => pid !== text)
                  .join("\n"),
              );
          }
          files.set(path, [files.get(path), text].filter(Boolean).join("\n"));
          if (!dirs.has(path.slice(0, -"/cgroup.procs".length))) throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
          return;
        }
        files.set(path, text);
      },
    };
    return { fs, files, written };
  }

  it("moves the cgroup's own processes to a leaf of their own, then switches the controllers on", async () => {
    const { enableControllers, HOST_LEAF } = await import("../../../src/host/limits/cgroup.js");
    const parent = "/sys/fs/cgroup/app.slice/ears.scope";
    const tree = fakeTree(parent, ["100", "200"]);
    enableControllers(parent, ["memory", "pids"], tree.fs);
    expect(tree.files.get(`${parent}/cgroup.subtree_control`)).toBe("+memory +pids");
    expect(tree.files.get(`${parent}/${HOST_LEAF}/cgroup.procs`)).toBe("100\n200");
    expect(tree.files.get(`${parent}/cgroup.procs`)).toBe("");
  });

  it("an empty cgroup (or the root) needs no move; any other refusal is thrown", async () => {
    const { enableControllers } = await import("../../../src/host/limits/cgroup.js");
    const parent = "/sys/fs/cgroup";
    const empty = fakeTree(parent, []);
    enableControllers(parent, ["cpu"], empty.fs);
    expect(empty.written).toStrictEqual([`${parent}/cgroup.subtree_control <- +cpu`]);
    const made: string[] = [];
    const refusing = {
      read: () => undefined,
      mkdir: (path: string) => void made.push(path),
      write: (): void => {
        throw Object.assign(new Error("EACCES"), { code: "EACCES" });
      },
    };
    expect(() => enableControllers(parent, ["cpu"], refusing)).toThrow("EACCES");
    // Only "busy" moves the cgroup's processes: nothing else is touched.
    expect(made).toStrictEqual([]);
  });
});
