/**
 * One run's limits (src/host/limits/limits.ts, RunLimits) over a cgroup file system given as data
 * (fake-cgroup-files.ts): what prepare creates or refuses, what the watch does when a counter passes a
 * limit, and the verdict and usage finish reports. Nothing here reaches the machine's cgroups or
 * processes, so it runs under Stryker; the spawned proof is limits.test.ts. Nothing of src/ is called
 * while the suite is collected.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CgroupPlan } from "../../../src/host/limits/cgroup.js";
import { LAUNCHER_FAILED, LAUNCHER_MARK } from "../../../src/host/limits/launcher.js";
import {
  CGROUP_FIX,
  limitSupport,
  RunLimits,
  supportOn,
  WATCH_MS,
  type HostTools,
  type ResourceLimits,
  type RunHost,
} from "../../../src/host/limits/limits.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import type { HostFailure, ResourceLimitName, RunReport } from "../../../src/host/api/types.js";
import { addProcesses, fakeCgroupFiles } from "./fake-cgroup-files.js";
import { proc, type FakeProcess } from "./fake-proc.js";
import { DATA_RLIMIT_HEADROOM, onUnenforcedDefault } from "../../../src/host/limits/limits.js";

const PARENTS = { memory: "/cg/memory/host", pids: "/cg/pids", cpu: "/cg/cpuacct" };
const V1: CgroupPlan = { version: "v1", parents: PARENTS };
const V2_PARENT = "/cg2/host";
const V2: CgroupPlan = { version: "v2", parent: V2_PARENT, controllers: ["memory", "pids", "cpu"], enable: [] };
const NONE: CgroupPlan = { version: null, reason: "no cgroup here (test)" };
const UNLIMITED: ResourceLimits = { memoryBytes: Infinity, processes: Infinity, cpuTimeMs: Infinity, tmpBytes: Infinity };
const none = new Set<ResourceLimitName>();
/** A machine with nothing but cgroups (not Linux, or no shell): no rlimits, no /proc watchdog. */
const BARE: HostTools = { rlimits: false, watchdog: false, root: false };
/** Linux, not root: rlimits and the watchdog. */
const LINUX: HostTools = { rlimits: true, watchdog: true, root: false };
const bare: RunHost = { tools: BARE, kill: (pid) => notKilled.push(pid) };
/** What the watch would have killed, where a test gave it no kill of its own. */
const notKilled: number[] = [];

function report(fields: Partial<RunReport> = {}): RunReport {
  return { ok: true, logs: [], droppedLogs: 0, calls: [], durationMs: 42, exit: { code: 0, signal: null }, ...fields } as RunReport;
}

function prepared(
  limits: Partial<ResourceLimits>,
  plan: CgroupPlan = V1,
  fake = fakeCgroupFiles({ dirs: [...Object.values(PARENTS), V2_PARENT] }),
  // Never a real kill here (a mutant under Stryker must not reach the machine's processes): recorded, not sent.
  host: RunHost = { tools: LINUX, userThreads: () => 0, kill: (pid) => notKilled.push(pid) },
) {
  const run = RunLimits.prepare({ ...UNLIMITED, ...limits }, none, "bubblewrap", plan, fake, host);
  if (typeof run === "string") throw new Error(run);
  return { run, fake };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("preparing a run's limits", () => {
  it("creates the run's cgroup with the plan's limits (also with no limit: for accounting)", () => {
    const { run, fake } = prepared({ memoryBytes: 4096, processes: 9 });
    expect(run.cgroup?.version).toBe("v1");
    expect(fake.written.sort()).toStrictEqual([
      `${run.cgroup!.dirs.memory}/memory.limit_in_bytes <- 4096`,
      `${run.cgroup!.dirs.pids}/pids.max <- 9`,
    ]);
    const accounting = prepared({});
    expect(accounting.run.cgroup?.directories).toHaveLength(3);
    expect(accounting.fake.written).toStrictEqual([]);
  });

  it("without a cgroup plan: no cgroup, nothing made", () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(PARENTS) });
    const { run } = prepared({ cpuTimeMs: 2000 }, NONE, fake);
    expect(run.cgroup).toBeUndefined();
    expect(run.plan.cpuRlimitSeconds).toBe(2);
    expect(fake.dirs.size).toBe(3);
  });

  it("a limit asked for that cannot be enforced is refused before anything is made", () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(PARENTS) });
    const refusal = RunLimits.prepare({ ...UNLIMITED, memoryBytes: 5 }, new Set(["memoryBytes"]), "bubblewrap", NONE, fake, bare);
    expect(refusal).toMatch(
      /^limits\.memoryBytes \(5\) was asked for but cannot be enforced: no cgroup memory controller .*no cgroup here \(test\)/,
    );
    expect(fake.dirs.size).toBe(3);
  });

  it("a cgroup that cannot be created: an asked-for limit is refused with where and why; a default runs without one, noted", () => {
    const refusing = () => fakeCgroupFiles({ dirs: Object.values(PARENTS), refuseMkdir: () => true });
    const asked = RunLimits.prepare({ ...UNLIMITED, memoryBytes: 5 }, new Set(["memoryBytes"]), "bubblewrap", V1, refusing(), bare);
    expect(asked).toMatch(
      /^limits\.memoryBytes \(5\) was asked for but cannot be enforced: no cgroup memory controller can be used here \(the run's cgroup could not be created under \/cg\/memory\/host, \/cg\/pids, \/cg\/cpuacct \(EACCES: /,
    );
    const v2Asked = RunLimits.prepare({ ...UNLIMITED, processes: 5 }, new Set(["processes"]), "bubblewrap", V2, refusing(), bare);
    expect(v2Asked).toContain(`could not be created under ${V2_PARENT} (`);
    const fallback = RunLimits.prepare({ ...UNLIMITED, memoryBytes: 5 }, none, "bubblewrap", V1, refusing(), bare);
    if (typeof fallback === "string") throw new Error(fallback);
    expect(fallback.cgroup).toBeUndefined();
    expect(fallback.plan.report.memoryBytes).toMatchObject({
      value: 5,
      enforcedBy: null,
      note: expect.stringContaining("could not be created"),
    });
  });
});

describe("watching a run's cgroup", () => {
  it("ends the run once when memory is passed: kills every process, stops reading, calls trip once", () => {
    vi.useFakeTimers();
    const { run, fake } = prepared({ memoryBytes: 4096 });
    const memory = run.cgroup!.dirs.memory!;
    const tripped: HostFailure[] = [];
    run.watch((failure) => tripped.push(failure));
    addProcesses(fake, memory, [70, 71]);
    fake.files.set(`${memory}/memory.oom_control`, "oom_kill 0\n");
    vi.advanceTimersByTime(WATCH_MS * 3);
    expect(tripped).toStrictEqual([]);
    expect(fake.killed).toStrictEqual([]);
    fake.files.set(`${memory}/memory.oom_control`, "oom_kill 1\n");
    vi.advanceTimersByTime(WATCH_MS);
    expect(tripped).toStrictEqual([expect.objectContaining({ code: "MemoryLimit", message: expect.stringContaining("4096 bytes") })]);
    expect(fake.killed).toStrictEqual([70, 71]);
    // The watch is over: no timer of its own is left.
    expect(vi.getTimerCount()).toBe(0);
    addProcesses(fake, memory, [72]);
    vi.advanceTimersByTime(WATCH_MS * 5);
    expect(tripped).toHaveLength(1);
    expect(fake.killed).toStrictEqual([70, 71]);
  });

  it("ends the run when CPU time is passed, not at it", () => {
    vi.useFakeTimers();
    const { run, fake } = prepared({ cpuTimeMs: 50 });
    const cpu = run.cgroup!.dirs.cpu!;
    const tripped: HostFailure[] = [];
    run.watch((failure) => tripped.push(failure));
    fake.files.set(`${cpu}/cpuacct.usage`, String(50 * 1e6));
    vi.advanceTimersByTime(WATCH_MS);
    expect(tripped).toStrictEqual([]);
    fake.files.set(`${cpu}/cpuacct.usage`, String(51 * 1e6));
    vi.advanceTimersByTime(WATCH_MS);
    expect(tripped).toStrictEqual([
      expect.objectContaining({ code: "CpuLimit", message: expect.stringContaining("used 51 ms of CPU time, past its limit of 50 ms") }),
    ]);
  });

  it("an OOM kill without a memory limit, or CPU without a limit, is no failure; without a cgroup nothing is watched", () => {
    vi.useFakeTimers();
    const { run, fake } = prepared({});
    const tripped: HostFailure[] = [];
    run.watch((failure) => tripped.push(failure));
    fake.files.set(`${run.cgroup!.dirs.memory}/memory.oom_control`, "oom_kill 3\n");
    fake.files.set(`${run.cgroup!.dirs.cpu}/cpuacct.usage`, String(1e15));
    vi.advanceTimersByTime(WATCH_MS * 2);
    expect(tripped).toStrictEqual([]);
    const bare = prepared({ cpuTimeMs: 1 }, NONE);
    const timers = vi.getTimerCount();
    bare.run.watch(() => tripped.push({} as HostFailure));
    expect(vi.getTimerCount()).toBe(timers);
  });
});

describe("the watchdog over a run's process tree (no cgroup)", () => {
  /** A run without a cgroup whose /proc shows `looks[at]`; what it killed. */
  function watched(limits: Partial<ResourceLimits>, tools: HostTools = LINUX) {
    const looks: Record<number, FakeProcess>[] = [{ 5: {} }];
    let at = 0;
    const killed: number[] = [];
    const files = { list: (path: string) => proc(looks[at]!).list(path), read: (path: string) => proc(looks[at]!).read(path) };
    const { run } = prepared(limits, NONE, undefined, { tools, proc: files, kill: (pid) => killed.push(pid), userThreads: () => 30 });
    const tripped: HostFailure[] = [];
    run.watch((failure) => tripped.push(failure), 5);
    const show = (tree: Record<number, FakeProcess>) => {
      looks.push(tree);
      at = looks.length - 1;
      vi.advanceTimersByTime(WATCH_MS);
    };
    return { run, killed, tripped, show };
  }

  it("ends the run once when the tree's resident memory passes memoryBytes, not at it, and kills the tree it saw", () => {
    vi.useFakeTimers();
    const { run, killed, tripped, show } = watched({ memoryBytes: 2048 * 1024 });
    expect(run.plan.report.memoryBytes.enforcedBy).toBe("rlimit+watchdog");
    expect(run.rlimits).toStrictEqual({ dataBytes: 2048 * 1024 + DATA_RLIMIT_HEADROOM });
    show({ 5: { rssKiB: 1024, children: { 5: [6] } }, 6: { rssKiB: 1024 } });
    expect(tripped).toStrictEqual([]);
    show({ 5: { rssKiB: 1024, children: { 5: [6] } }, 6: { rssKiB: 1025 } });
    expect(tripped).toStrictEqual([expect.objectContaining({ code: "MemoryLimit", message: expect.stringContaining("2097152 bytes") })]);
    expect(killed).toStrictEqual([5, 6]);
    expect(vi.getTimerCount()).toBe(0);
    show({ 5: { rssKiB: 9999 } });
    expect(tripped).toHaveLength(1);
  });

  it("ends the run as ProcessLimit when the tree has more threads than allowed; RLIMIT_NPROC is the user's threads plus it", () => {
    vi.useFakeTimers();
    const { run, killed, tripped, show } = watched({ processes: 12 });
    // Twice over: the watchdog meets a tree past the limit before the rlimit refuses it a fork.
    expect(run.rlimits).toStrictEqual({ processes: 30 + 2 * 12 });
    show({ 5: { threads: 11, children: { 5: [7] } }, 7: { threads: 1 } });
    expect(tripped).toStrictEqual([]);
    show({ 5: { threads: 11, children: { 5: [7, 8] } }, 7: {}, 8: {} });
    expect(tripped).toStrictEqual([
      expect.objectContaining({ code: "ProcessLimit", message: expect.stringContaining("had 13 threads, past its limit of 12 processes") }),
    ]);
    expect(killed).toStrictEqual([5, 7, 8]);
  });

  it("ends the run as CpuLimit past the tree's CPU time; a root host gets no RLIMIT_NPROC (the kernel exempts root)", () => {
    vi.useFakeTimers();
    const { run, tripped, show } = watched({ cpuTimeMs: 100, processes: 50 }, { ...LINUX, root: true });
    expect(run.rlimits).toStrictEqual({ cpuSeconds: 1 });
    expect(run.plan.report.processes.enforcedBy).toBe("watchdog");
    show({ 5: { ticks: [10, 0, 0, 0] } });
    expect(tripped).toStrictEqual([]);
    show({ 5: { ticks: [5, 3, 2, 1] } });
    expect(tripped).toStrictEqual([expect.objectContaining({ code: "CpuLimit", message: expect.stringContaining("used 110 ms") })]);
  });

  it("watches nothing without the tools (not Linux), and checks no limit it does not enforce", () => {
    vi.useFakeTimers();
    const timers = vi.getTimerCount();
    const bare = watched({}, BARE);
    expect(vi.getTimerCount()).toBe(timers);
    expect(bare.run.rlimits).toStrictEqual({});
    const none = watched({});
    none.show({ 5: { rssKiB: 1 << 30, threads: 5000, ticks: [1e6, 0, 0, 0] } });
    expect(none.tripped).toStrictEqual([]);
    expect(none.killed).toStrictEqual([]);
  });
});

describe("a directory the watchdog bounds (a session's scratch copy under Landlock)", () => {
  const PAST: HostFailure = { code: "WorkspaceNotKept", message: "past the bound (test)" };
  /** A check whose answers the test gives, one look at a time: `answer` settles the look under way. */
  function directory(fileBytes = 4096) {
    const looks: ((failure: HostFailure | undefined) => void)[] = [];
    return {
      looks,
      dir: { fileBytes, check: () => new Promise<HostFailure | undefined>((settle) => looks.push(settle)) },
      answer: async (failure: HostFailure | undefined) => {
        looks.shift()!(failure);
        await Promise.resolve();
        await Promise.resolve();
      },
    };
  }

  it("sets RLIMIT_FSIZE to the smaller of its file bound and tmpBytes's; refused where no rlimit can be set", () => {
    const own = prepared({}, NONE).run;
    expect(own.watchDirectory(directory(4096).dir)).toBeUndefined();
    expect(own.rlimits.fileBytes).toBe(4096);
    const tmp = RunLimits.prepare({ ...UNLIMITED, tmpBytes: 1024 }, none, "landlock", NONE, undefined, {
      tools: LINUX,
      userThreads: () => 0,
    }) as RunLimits;
    expect(tmp.rlimits.fileBytes).toBe(1024);
    expect(tmp.watchDirectory(directory(4096).dir)).toBeUndefined();
    expect(tmp.rlimits.fileBytes).toBe(1024);
    const larger = RunLimits.prepare({ ...UNLIMITED, tmpBytes: 8192 }, none, "landlock", NONE, undefined, {
      tools: LINUX,
      userThreads: () => 0,
    }) as RunLimits;
    larger.watchDirectory(directory(4096).dir);
    expect(larger.rlimits.fileBytes).toBe(4096);
    const noShell = prepared({}, NONE, undefined, { tools: BARE, userThreads: () => 0 }).run;
    expect(noShell.watchDirectory(directory().dir)).toMatch(/needs the launcher's RLIMIT_FSIZE .* no \/bin\/sh/);
    expect(noShell.rlimits.fileBytes).toBeUndefined();
  });

  it("looks every WATCH_MS, one look at a time; past the bound it ends the tree at once, trips once, and is the verdict", async () => {
    vi.useFakeTimers();
    const ended: number[] = [];
    const { run, fake } = prepared({}, V1, undefined, {
      tools: LINUX,
      userThreads: () => 0,
      kill: (pid) => notKilled.push(pid),
      end: (pid) => ended.push(pid),
    });
    const { dir, looks, answer } = directory();
    run.watchDirectory(dir);
    const tripped: HostFailure[] = [];
    run.watch((failure) => tripped.push(failure), 77);
    addProcesses(fake, run.cgroup!.dirs.memory!, [78]);
    vi.advanceTimersByTime(WATCH_MS);
    expect(looks).toHaveLength(1);
    // A slow look: no second one starts meanwhile.
    vi.advanceTimersByTime(WATCH_MS * 3);
    expect(looks).toHaveLength(1);
    await answer(undefined);
    expect(tripped).toStrictEqual([]);
    vi.advanceTimersByTime(WATCH_MS);
    expect(looks).toHaveLength(1);
    await answer(PAST);
    expect(tripped).toStrictEqual([PAST]);
    expect(ended).toStrictEqual([77]);
    expect(fake.killed).toStrictEqual([78]);
    expect(vi.getTimerCount()).toBe(0);
    expect((await run.finish(report())).failure).toStrictEqual(PAST);
  });

  it("a look that answers after the run's end, or after another limit tripped, changes nothing", async () => {
    vi.useFakeTimers();
    const ended: number[] = [];
    const linux = prepared({}, NONE, undefined, {
      tools: { ...BARE, rlimits: true },
      userThreads: () => 0,
      end: (pid) => ended.push(pid),
    }).run;
    const { dir, looks, answer } = directory();
    linux.watchDirectory(dir);
    const tripped: HostFailure[] = [];
    linux.watch((failure) => tripped.push(failure), 90);
    vi.advanceTimersByTime(WATCH_MS);
    expect(looks).toHaveLength(1);
    expect((await linux.finish(report())).failure).toBeUndefined();
    await answer(PAST);
    expect(tripped).toStrictEqual([]);
    expect(ended).toStrictEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("the verdict where rlimits stand in", () => {
  const crashedReport = (stderr: string, code = "GuestCrashed") =>
    report({ ok: false, failure: { code, message: "x" }, stderr, exit: { code: 134, signal: null } } as Partial<RunReport>);

  it("a run that crashed out of memory under RLIMIT_DATA is MemoryLimit: said on stderr, or seen near the limit by the watch", async () => {
    const { run } = prepared({ memoryBytes: 1 << 30 }, NONE);
    for (const said of [
      "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
      "MemoryError",
      "std::bad_alloc",
      "Cannot allocate memory",
    ]) {
      expect((await run.finish(crashedReport(said))).failure, said).toMatchObject({ code: "MemoryLimit" });
    }
    expect((await run.finish(crashedReport("Segmentation fault"))).failure).toBeUndefined();
    expect((await run.finish(crashedReport("out of memory", "RunTimeout"))).failure).toBeUndefined();
    expect((await run.finish(report({ stderr: "out of memory" } as Partial<RunReport>))).failure).toBeUndefined();
    const noRlimit = prepared({}, NONE).run;
    expect((await noRlimit.finish(crashedReport("out of memory"))).failure).toBeUndefined();
  });

  it("a body that threw V8's refusal of memory under RLIMIT_DATA is MemoryLimit, naming it; another throw is the body's own", async () => {
    const threw = (content: string, code = "GuestFailed") =>
      report({ ok: false, outcome: { status: "failure", code, content }, exit: { code: 0, signal: null } } as Partial<RunReport>);
    const { run } = prepared({ memoryBytes: 1 << 30 }, NONE);
    for (const said of ["Array buffer allocation failed", "could not allocate memory"]) {
      const failure = (await run.finish(threw(`RangeError: ${said} (at code.ts:1:64)`))).failure;
      expect(failure, said).toStrictEqual({
        code: "MemoryLimit",
        message:
          "the guest reached its memory limit of 1 GiB (1073741824 bytes; limits.memoryBytes): " +
          `an allocation past it was refused and the body failed (${said})`,
      });
    }
    // Another throw, a failure the body returned with another code, or a run the host ended already: unchanged.
    expect((await run.finish(threw("TypeError: x is not a function"))).failure).toBeUndefined();
    expect((await run.finish(threw("Array buffer allocation failed", "OutOfStock"))).failure).toBeUndefined();
    const ended = { ...threw("Array buffer allocation failed"), failure: { code: "RunTimeout", message: "x" } } as RunReport;
    expect((await run.finish(ended)).failure).toBeUndefined();
    // No RLIMIT_DATA (a cgroup bounds memory, or no memory limit): the throw is the body's.
    expect((await prepared({ memoryBytes: 1 << 30 }).run.finish(threw("Array buffer allocation failed"))).failure).toBeUndefined();
    expect((await prepared({}, NONE).run.finish(threw("Array buffer allocation failed"))).failure).toBeUndefined();
  });

  it("the watch's largest VmData of one process, at half its RLIMIT_DATA or more, names a silent crash MemoryLimit", async () => {
    vi.useFakeTimers();
    // RLIMIT_DATA is memoryBytes (1 MiB) plus the headroom; half of it, in KiB.
    const half = (1024 * 1024 + DATA_RLIMIT_HEADROOM) / 2 / 1024;
    const looks = [{ 5: { dataKiB: half } }, { 5: { dataKiB: half - 1 } }];
    for (const [index, look] of looks.entries()) {
      const files = { list: (path: string) => proc(look).list(path), read: (path: string) => proc(look).read(path) };
      const { run } = prepared({ memoryBytes: 1024 * 1024 }, NONE, undefined, {
        tools: LINUX,
        proc: files,
        kill: () => {},
        userThreads: () => 0,
      });
      run.watch(() => {}, 5);
      vi.advanceTimersByTime(WATCH_MS);
      const failure = (await run.finish(crashedReport(""))).failure;
      expect(failure?.code).toBe(index === 0 ? "MemoryLimit" : undefined);
    }
  });

  it("a run that failed after the cgroup refused it processes is ProcessLimit; one that went on to its result is not", async () => {
    for (const [code, expected] of [
      ["GuestCrashed", "ProcessLimit"],
      ["NoResult", "ProcessLimit"],
      ["NoHello", "ProcessLimit"],
      ["RunTimeout", "ProcessLimit"],
      ["Aborted", undefined],
    ] as const) {
      const { run, fake } = prepared({ processes: 20 });
      fake.files.set(`${run.cgroup!.dirs.pids}/pids.events`, "max 3\n");
      expect((await run.finish(crashedReport("", code))).failure?.code, code).toBe(expected);
    }
    const ok = prepared({ processes: 20 });
    ok.fake.files.set(`${ok.run.cgroup!.dirs.pids}/pids.events`, "max 3\n");
    expect((await ok.run.finish(report())).failure).toBeUndefined();
    const notRefused = prepared({ processes: 20 });
    notRefused.fake.files.set(`${notRefused.run.cgroup!.dirs.pids}/pids.events`, "max 0\n");
    expect((await notRefused.run.finish(crashedReport(""))).failure).toBeUndefined();
    // Without a cgroup: the watchdog saw the tree at the limit (the machine-wide RLIMIT_NPROC may refuse it there).
    vi.useFakeTimers();
    for (const threads of [20, 19]) {
      const look = { 5: { threads } };
      const files = { list: (path: string) => proc(look).list(path), read: (path: string) => proc(look).read(path) };
      const host = { tools: LINUX, proc: files, kill: () => {}, userThreads: () => 0 };
      const { run } = prepared({ processes: 20 }, NONE, undefined, host);
      run.watch(() => {}, 5);
      vi.advanceTimersByTime(WATCH_MS);
      expect((await run.finish(crashedReport("", "RunTimeout"))).failure?.code, `${threads}`).toBe(
        threads === 20 ? "ProcessLimit" : undefined,
      );
    }
    vi.useRealTimers();
    // Refusals with no limit of the run's own (a parent's): not this run's limit.
    const unlimited = prepared({});
    unlimited.fake.files.set(`${unlimited.run.cgroup!.dirs.pids}/pids.events`, "max 3\n");
    expect((await unlimited.run.finish(crashedReport(""))).failure).toBeUndefined();
  });
});

describe("a default nothing enforces", () => {
  it("is said once per process (per limit), and not at all for a limit that is enforced", () => {
    const said: string[] = [];
    const before = onUnenforcedDefault((line) => said.push(line));
    try {
      for (let i = 0; i < 3; i += 1) {
        const run = RunLimits.prepare({ ...UNLIMITED, tmpBytes: 1000 + i, memoryBytes: 5000 }, none, "none", NONE, undefined, {
          tools: LINUX,
          userThreads: () => 0,
        });
        expect(typeof run).not.toBe("string");
      }
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/^limits\.tmpBytes \(default 1000\) is not enforced: the guest runs unconfined/);
    } finally {
      onUnenforcedDefault(before);
    }
  });
});

describe("finishing a run", () => {
  it("reports the cgroup's usage (v1) and removes it", async () => {
    const { run, fake } = prepared({ memoryBytes: 4096, processes: 9 });
    const { memory, pids, cpu } = run.cgroup!.dirs;
    fake.files.set(`${cpu}/cpuacct.usage`, "7000000");
    fake.files.set(`${memory}/memory.max_usage_in_bytes`, "2048");
    fake.files.set(`${pids}/pids.peak`, "4");
    addProcesses(fake, pids!, [80]);
    const end = await run.finish(report({ calls: [{}, {}] as RunReport["calls"], droppedCalls: 3 }));
    expect(end).toStrictEqual({
      limits: run.plan.report,
      // One process (cgroup.procs), four threads (pids.peak): counted apart.
      usage: { source: "cgroup-v1", wallMs: 42, calls: 5, cpuMs: 7, peakMemoryBytes: 2048, peakProcesses: 1, peakThreads: 4 },
    });
    expect(fake.killed).toStrictEqual([80]);
    expect(run.cgroup!.directories.filter((dir) => fake.dirs.has(dir))).toStrictEqual([]);
  });

  it("v2 usage; the peak process and thread counts seen by the watch (cgroup.procs has no peak, old kernels no pids.peak)", async () => {
    vi.useFakeTimers();
    const { run, fake } = prepared({}, V2);
    const [dir] = run.cgroup!.directories;
    run.watch(() => {});
    fake.files.set(`${dir}/pids.current`, "6");
    addProcesses(fake, dir!, [90, 91, 92]);
    vi.advanceTimersByTime(WATCH_MS);
    fake.files.set(`${dir}/pids.current`, "2");
    fake.files.set(`${dir}/cgroup.procs`, "90");
    vi.useRealTimers();
    const end = await run.finish(report({ calls: [] }));
    expect(end.usage).toStrictEqual({ source: "cgroup-v2", wallMs: 42, calls: 0, peakProcesses: 3, peakThreads: 6 });
    expect(end.failure).toBeUndefined();
  });

  it("the last look when the result arrives counts the processes there, which are gone by the run's end", async () => {
    const { run, fake } = prepared({});
    const { pids } = run.cgroup!.dirs;
    addProcesses(fake, pids!, [60, 61, 62, 63]);
    run.sample();
    fake.files.set(`${pids}/cgroup.procs`, "");
    expect((await run.finish(report())).usage.peakProcesses).toBe(4);
  });

  it("without a cgroup: wall time and calls only", async () => {
    const { run } = prepared({}, NONE);
    expect((await run.finish(report())).usage).toStrictEqual({ source: "none", wallMs: 42, calls: 0 });
  });

  it("without a cgroup, on Linux: the watched process tree's figures from /proc (this process, by the watch and once more)", async () => {
    if (process.platform !== "linux") return;
    vi.useFakeTimers();
    const { run } = prepared({}, NONE);
    // By the watch alone, and by the last look alone: each one measures.
    run.watch(() => {}, process.pid);
    vi.advanceTimersByTime(WATCH_MS);
    const { usage } = await run.finish(report());
    expect(usage.source).toBe("proc");
    expect(usage.cpuMs).toBeGreaterThan(0);
    expect(usage.peakMemoryBytes).toBeGreaterThan(1024 * 1024);
    expect(usage.peakProcesses).toBeGreaterThanOrEqual(1);
    const { run: last } = prepared({}, NONE);
    last.watch(() => {}, process.pid);
    last.sample();
    expect((await last.finish(report())).usage.source).toBe("proc");
    // A tree never seen (its first process is gone) measured nothing.
    const { run: gone } = prepared({}, NONE);
    gone.watch(() => {}, 2 ** 30);
    vi.advanceTimersByTime(WATCH_MS);
    gone.sample();
    expect((await gone.finish(report())).usage).toStrictEqual({ source: "none", wallMs: 42, calls: 0 });
  });

  it("stops its watch, and a run that never exited (no exit in the report) is judged without one", async () => {
    vi.useFakeTimers();
    const { run } = prepared({ cpuTimeMs: 1500 });
    run.watch(() => {});
    expect(vi.getTimerCount()).toBe(1);
    vi.useRealTimers();
    const noExit = { ...report(), exit: undefined };
    expect(await run.finish(noExit)).toStrictEqual({
      limits: run.plan.report,
      // Nothing was ever seen in cgroup.procs: no process count is made up.
      usage: { source: "cgroup-v1", wallMs: 42, calls: 0, peakThreads: 0 },
    });
    const rlimit = prepared({ cpuTimeMs: 1500 }, NONE).run;
    expect((await rlimit.finish({ ...noExit, sandbox: {} as RunReport["sandbox"] })).failure).toBeUndefined();
  });

  it("a limit passed that the watch did not see yet is the run's failure", async () => {
    const { run, fake } = prepared({ memoryBytes: 4096, cpuTimeMs: 10 });
    fake.files.set(`${run.cgroup!.dirs.memory}/memory.oom_control`, "oom_kill 1\n");
    expect((await run.finish(report())).failure).toMatchObject({ code: "MemoryLimit" });
    const cpu = prepared({ cpuTimeMs: 10 });
    cpu.fake.files.set(`${cpu.run.cgroup!.dirs.cpu}/cpuacct.usage`, String(11e6));
    expect((await cpu.run.finish(report())).failure).toMatchObject({ code: "CpuLimit", message: expect.stringContaining("used 11 ms") });
  });

  it("RLIMIT_CPU's SIGXCPU (or bubblewrap's 152) with no outcome is CpuLimit; with an outcome or without the rlimit, not", async () => {
    const rlimit = () => prepared({ cpuTimeMs: 1500 }, NONE).run;
    const expected = { code: "CpuLimit", message: expect.stringContaining("used 2000 ms of CPU time, past its limit of 1500 ms") };
    expect((await rlimit().finish(report({ exit: { code: null, signal: "SIGXCPU" } }))).failure).toMatchObject(expected);
    const sandboxed = report({ exit: { code: 152, signal: null }, sandbox: {} as RunReport["sandbox"] });
    expect((await rlimit().finish(sandboxed)).failure).toMatchObject(expected);
    expect((await rlimit().finish(report({ exit: { code: 152, signal: null } }))).failure).toBeUndefined();
    expect((await rlimit().finish({ ...sandboxed, exit: { code: 1, signal: null } })).failure).toBeUndefined();
    const answered = report({ exit: { code: null, signal: "SIGXCPU" }, outcome: { status: "success", content: "1" } });
    expect((await rlimit().finish(answered)).failure).toBeUndefined();
    const { run } = prepared({ cpuTimeMs: 1500 });
    expect((await run.finish(report({ exit: { code: null, signal: "SIGXCPU" } }))).failure).toBeUndefined();
  });

  it("the launcher's own failure: its marked line, when it exited with its status before any hello", async () => {
    const stderr = `noise\n${LAUNCHER_MARK} could not join the run's cgroup (/x)\nmore`;
    const failed = report({ exit: { code: LAUNCHER_FAILED, signal: null }, stderr });
    expect((await prepared({}, NONE).run.finish(failed)).failure).toStrictEqual({
      code: "SandboxUnavailable",
      message: "the guest was not started: could not join the run's cgroup (/x)",
    });
    expect((await prepared({}, NONE).run.finish({ ...failed, hello: { protocol: 1 } })).failure).toBeUndefined();
    expect((await prepared({}, NONE).run.finish({ ...failed, exit: { code: 1, signal: null } })).failure).toBeUndefined();
    expect((await prepared({}, NONE).run.finish({ ...failed, stderr: "could not join" })).failure).toBeUndefined();
    expect((await prepared({}, NONE).run.finish({ ...failed, stderr: undefined })).failure).toBeUndefined();
  });

  it("a cgroup that cannot be removed is a host failure naming it, unless the run already failed on a limit", async () => {
    const busy = fakeCgroupFiles({ dirs: Object.values(PARENTS) });
    const { run } = prepared({}, V1, busy);
    addProcesses(busy, run.cgroup!.dirs.pids!, [process.pid]);
    const removeFast = run.cgroup!.remove.bind(run.cgroup);
    run.cgroup!.remove = () => removeFast(0);
    expect((await run.finish(report())).failure).toStrictEqual({
      code: "NoResult",
      message: `the host failed: the run's cgroup ${run.cgroup!.directories.join(", ")} could not be removed`,
    });
    const limited = prepared({ memoryBytes: 1 }, V1, fakeCgroupFiles({ dirs: Object.values(PARENTS) }));
    addProcesses(limited.fake, limited.run.cgroup!.dirs.pids!, [process.pid]);
    limited.fake.files.set(`${limited.run.cgroup!.dirs.memory}/memory.oom_control`, "oom_kill 1\n");
    const removeLimited = limited.run.cgroup!.remove.bind(limited.run.cgroup);
    limited.run.cgroup!.remove = () => removeLimited(0);
    expect((await limited.run.finish(report())).failure).toMatchObject({ code: "MemoryLimit" });
  });
});

describe("what a machine can enforce (ears doctor)", () => {
  const SANDBOX_FIX = "install bubblewrap (apt-get install bubblewrap) and run the guest sandboxed";

  it("cgroup v1 and a sandbox: every limit enforced, no fix to give", () => {
    expect(supportOn("bubblewrap", V1, LINUX)).toStrictEqual({
      cgroup: { version: "v1", controllers: ["memory", "pids", "cpu"] },
      limits: {
        memoryBytes: { enforcedBy: "cgroup-v1" },
        processes: { enforcedBy: "cgroup-v1" },
        cpuTimeMs: { enforcedBy: "cgroup-v1" },
        tmpBytes: { enforcedBy: "bubblewrap" },
      },
    });
  });

  it("cgroup v2, memory and pids only, unconfined: CPU by RLIMIT_CPU and the watchdog (cgroup fix), /tmp not (sandbox fix)", () => {
    const support = supportOn("none", { version: "v2", parent: V2_PARENT, controllers: ["memory", "pids"], enable: [] }, LINUX);
    expect(support.cgroup).toStrictEqual({ version: "v2", controllers: ["memory", "pids"] });
    expect(support.limits.memoryBytes).toStrictEqual({ enforcedBy: "cgroup-v2" });
    expect(support.limits.cpuTimeMs).toStrictEqual({
      enforcedBy: "rlimit+watchdog",
      note: `RLIMIT_CPU per process, in whole seconds; the host's watchdog over the tree's CPU time, every ${WATCH_MS} ms`,
      fix: CGROUP_FIX,
    });
    expect(support.limits.tmpBytes).toStrictEqual({
      enforcedBy: null,
      note: `the guest runs unconfined, so it has no private /tmp to bound; ${SANDBOX_FIX}`,
      fix: SANDBOX_FIX,
    });
  });

  it("no cgroup on Linux: memory and processes by rlimits and the watchdog (root: the watchdog alone), each with the cgroup fix", () => {
    const support = supportOn("bubblewrap", NONE, LINUX);
    expect(support.cgroup).toStrictEqual({ version: null, reason: "no cgroup here (test)", fix: CGROUP_FIX });
    expect(support.limits.memoryBytes).toStrictEqual({
      enforcedBy: "rlimit+watchdog",
      note:
        "RLIMIT_DATA per process at the limit plus 1 GiB, a backstop (allocation past it fails); " +
        `the host's watchdog over the tree's resident memory, every ${WATCH_MS} ms`,
      fix: CGROUP_FIX,
    });
    expect(support.limits.processes).toMatchObject({ enforcedBy: "rlimit+watchdog", note: expect.stringContaining("RLIMIT_NPROC") });
    const asRoot = supportOn("bubblewrap", NONE, { ...LINUX, root: true });
    expect(asRoot.limits.processes).toStrictEqual({
      enforcedBy: "watchdog",
      note: `the host's watchdog over the tree's processes and threads, every ${WATCH_MS} ms`,
      fix: CGROUP_FIX,
    });
    expect(supportOn("landlock", NONE, LINUX).limits.tmpBytes).toStrictEqual({
      enforcedBy: "rlimit",
      note: "RLIMIT_FSIZE: each file the run writes, not their total (no private /tmp without bubblewrap)",
      fix: SANDBOX_FIX,
    });
  });

  it("no cgroup and no rlimits or watchdog: the reason and the fix, and memory and processes not enforced, each with the fix", () => {
    const support = supportOn("bubblewrap", NONE, BARE);
    expect(support.cgroup).toStrictEqual({ version: null, reason: "no cgroup here (test)", fix: CGROUP_FIX });
    for (const name of ["memoryBytes", "processes", "cpuTimeMs"] as const) {
      expect(support.limits[name]).toStrictEqual({
        enforcedBy: null,
        note: expect.stringMatching(/^no cgroup (memory|pids|cpu) controller can be used here \(no cgroup here \(test\)\), nor rlimits/),
        fix: CGROUP_FIX,
      });
    }
    expect(support.limits.tmpBytes).toStrictEqual({ enforcedBy: "bubblewrap" });
    expect(supportOn("landlock", NONE, BARE).limits.tmpBytes).toMatchObject({ enforcedBy: null, fix: SANDBOX_FIX });
  });
});

describe("limitSupport, this machine", () => {
  it("bounds /tmp by the mechanism it is told (bubblewrap's tmpfs, Landlock's RLIMIT_FSIZE, none); default: bubblewrap", () => {
    expect(limitSupport("bubblewrap").limits.tmpBytes.enforcedBy).toBe("bubblewrap");
    expect(limitSupport("landlock").limits.tmpBytes.enforcedBy).toBe("rlimit");
    expect(limitSupport("none").limits.tmpBytes.enforcedBy).toBeNull();
    expect(limitSupport()).toStrictEqual(limitSupport(bwrapPath !== undefined ? "bubblewrap" : "none"));
  });
});
