/**
 * RunLimits' watchdog where no cgroup can be had, at its edges (run-limits.test.ts has the main paths): the run's
 * process tree given as /proc data (fake-proc.ts), the watch's timer under fake timers, a kill that records. What a
 * sample shows becomes the run's usage figure for figure; a tree whose first process is gone trips nothing; only the
 * processes the tripping sample saw are killed, once; a verdict the watch reached wins over what the run's end says.
 * Nothing here reaches the machine's processes, so it runs under Stryker (stryker.watchdog.json).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CgroupPlan } from "../../../src/host/limits/cgroup.js";
import {
  DATA_RLIMIT_HEADROOM,
  RunLimits,
  WATCH_MS,
  type HostTools,
  type ResourceLimits,
  type RunHost,
} from "../../../src/host/limits/limits.js";
import type { HostFailure, ResourceLimitName, RunReport } from "../../../src/host/api/types.js";
import { fakeCgroupFiles } from "./fake-cgroup-files.js";
import { proc, type FakeProcess } from "./fake-proc.js";

const NONE: CgroupPlan = { version: null, reason: "no cgroup here (test)" };
const UNLIMITED: ResourceLimits = { memoryBytes: Infinity, processes: Infinity, cpuTimeMs: Infinity, tmpBytes: Infinity };
const LINUX: HostTools = { rlimits: true, watchdog: true, root: false };
const KiB = 1024;

function report(fields: Partial<RunReport> = {}): RunReport {
  return { ok: true, logs: [], droppedLogs: 0, calls: [], durationMs: 42, exit: { code: 0, signal: null }, ...fields } as RunReport;
}

/** A run with no cgroup whose /proc shows the latest of `show`'s trees, watched from pid 5. */
function watched(limits: Partial<ResourceLimits>, host: Partial<RunHost> = {}, asked: ResourceLimitName[] = []) {
  let tree: Record<number, FakeProcess> = { 5: {} };
  const killed: number[] = [];
  const files = { list: (path: string) => proc(tree).list(path), read: (path: string) => proc(tree).read(path) };
  const run = RunLimits.prepare({ ...UNLIMITED, ...limits }, new Set(asked), "landlock", NONE, undefined, {
    tools: LINUX,
    proc: files,
    kill: (pid) => killed.push(pid),
    userThreads: () => 0,
    ...host,
  });
  if (typeof run === "string") throw new Error(run);
  const tripped: HostFailure[] = [];
  const show = (next: Record<number, FakeProcess>) => {
    tree = next;
    vi.advanceTimersByTime(WATCH_MS);
  };
  return { run, killed, tripped, show, trip: (failure: HostFailure) => tripped.push(failure) };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the watchdog's usage and verdicts, on /proc as data", () => {
  it("reports the largest of each figure the samples saw, exactly: CPU, resident or high-water memory, processes, threads", async () => {
    vi.useFakeTimers();
    const { run, show, trip } = watched({});
    run.watch(trip, 5);
    show({ 5: { ticks: [10, 5, 0, 0], rssKiB: 100, hwmKiB: 50, threads: 7, children: { 5: [6, 7] } }, 6: { rssKiB: 20 }, 7: {} });
    show({ 5: { ticks: [20, 5, 3, 2], rssKiB: 10, hwmKiB: 400, threads: 2 } });
    const { usage, failure } = await run.finish(report({ calls: [{} as never], droppedCalls: 2 }));
    expect(failure).toBeUndefined();
    expect(usage).toStrictEqual({
      source: "proc",
      wallMs: 42,
      calls: 3,
      // (20 + 5 + 3 + 2) ticks of 10 ms; the first sample's 120 KiB resident beside the second's 400 KiB high-water mark.
      cpuMs: 300,
      peakMemoryBytes: 400 * KiB,
      peakProcesses: 3,
      peakThreads: 9,
    });
  });

  it("watches nothing without a pid to watch: no timer, no usage from /proc", async () => {
    vi.useFakeTimers();
    const before = vi.getTimerCount();
    const { run, trip } = watched({ memoryBytes: 1 });
    run.watch(trip);
    expect(vi.getTimerCount()).toBe(before);
    run.sample();
    expect((await run.finish(report())).usage).toStrictEqual({ source: "none", wallMs: 42, calls: 0 });
  });

  it("a sample whose first process is gone trips nothing and kills nothing; the watch goes on and trips on the next", () => {
    vi.useFakeTimers();
    const { run, killed, tripped, show, trip } = watched({ memoryBytes: 1024 * KiB });
    run.watch(trip, 5);
    // Pid 5 is not there (the tree's first process exited); its former child is far past the limit.
    show({ 6: { rssKiB: 1 << 20 } });
    expect(tripped).toStrictEqual([]);
    expect(killed).toStrictEqual([]);
    expect(vi.getTimerCount()).toBe(1);
    show({ 5: { rssKiB: 1025, children: { 5: [9] } }, 9: {} });
    expect(tripped.map((failure) => failure.code)).toStrictEqual(["MemoryLimit"]);
    expect(killed).toStrictEqual([5, 9]);
  });

  it("trips once: the tripping sample's processes are killed, the timer is gone, and the verdict is that failure", async () => {
    vi.useFakeTimers();
    const { run, killed, tripped, show, trip } = watched({ processes: 4, memoryBytes: 1 << 30 });
    run.watch(trip, 5);
    show({ 5: { threads: 3, children: { 5: [6, 7] } }, 6: {}, 7: {} });
    expect(tripped).toHaveLength(1);
    expect(tripped[0]).toStrictEqual({
      code: "ProcessLimit",
      message: expect.stringContaining("had 5 threads, past its limit of 4 processes"),
    });
    expect(vi.getTimerCount()).toBe(0);
    show({ 5: { threads: 99 } });
    expect(tripped).toHaveLength(1);
    expect(killed).toStrictEqual([5, 6, 7]);
    // The run's own end said it ran out of memory: the limit the watch tripped on is still the failure.
    const crashed = report({ ok: false, failure: { code: "GuestCrashed", message: "x" }, stderr: "out of memory" } as Partial<RunReport>);
    expect((await run.finish(crashed)).failure).toBe(tripped[0]);
  });

  it("checks each limit it enforces against its own figure: memory by resident bytes, CPU by CPU time, not the others", () => {
    vi.useFakeTimers();
    // CPU 1000 ms: a tree of 2000 threads and 1 GiB resident trips nothing; 101 ticks (1010 ms) does.
    const cpu = watched({ cpuTimeMs: 1000 });
    cpu.run.watch(cpu.trip, 5);
    cpu.show({ 5: { threads: 2000, rssKiB: 1 << 20, ticks: [100, 0, 0, 0] } });
    expect(cpu.tripped).toStrictEqual([]);
    cpu.show({ 5: { ticks: [100, 0, 0, 1] } });
    expect(cpu.tripped).toStrictEqual([
      { code: "CpuLimit", message: expect.stringMatching(/used 1010 ms of CPU time, past its limit of 1000 ms/) },
    ]);
    // Memory 1 MiB: 2000 threads and 10 s of CPU trip nothing.
    const memory = watched({ memoryBytes: 1024 * KiB });
    memory.run.watch(memory.trip, 5);
    memory.show({ 5: { threads: 2000, ticks: [1000, 0, 0, 0], rssKiB: 1024 } });
    expect(memory.tripped).toStrictEqual([]);
  });

  it("RLIMIT_NPROC is this user's threads now plus twice the allowance; no processes limit, no RLIMIT_NPROC", () => {
    const uid = process.getuid?.() ?? 0;
    const threadsOf = (asked: number) => (asked === uid ? 40 : 1000);
    expect(watched({ processes: 8 }, { userThreads: threadsOf }).run.rlimits).toStrictEqual({ processes: 40 + 16 });
    expect(watched({ memoryBytes: 4096 }, { userThreads: threadsOf }).run.rlimits).toStrictEqual({
      dataBytes: 4096 + DATA_RLIMIT_HEADROOM,
    });
  });

  it("a crash that still carries an outcome is not named out of memory by its stderr", async () => {
    const { run } = watched({ memoryBytes: 1 << 30 });
    const answered = report({
      ok: false,
      failure: { code: "GuestCrashed", message: "x" },
      outcome: { status: "success", content: "1" },
      stderr: "JavaScript heap out of memory",
    } as Partial<RunReport>);
    expect((await run.finish(answered)).failure).toBeUndefined();
    // Without the outcome, the same stderr is the limit.
    expect((await run.finish({ ...answered, outcome: undefined } as RunReport)).failure).toMatchObject({ code: "MemoryLimit" });
  });

  it("a processes limit watched by a watchdog that never ran (no pid given): a crash is the run's own, not ProcessLimit", async () => {
    const { run } = watched({ processes: 1 });
    const crashed = report({ ok: false, failure: { code: "GuestCrashed", message: "x" }, stderr: "" } as Partial<RunReport>);
    // No limit failure replaces the run's own (and nothing is read of a tree that was never sampled).
    expect((await run.finish(crashed)).failure).toBeUndefined();
  });
});

describe("a run reported at its result (finishAfter)", () => {
  it("gives the verdict now; the cgroup is removed once the processes are gone, and without one there is nothing to wait for", async () => {
    const parents = { memory: "/cg/memory/host", pids: "/cg/pids", cpu: "/cg/cpuacct" };
    const fake = fakeCgroupFiles({ dirs: Object.values(parents) });
    const host: RunHost = { tools: LINUX, userThreads: () => 0, kill: () => {} };
    const run = RunLimits.prepare({ ...UNLIMITED, memoryBytes: 4096 }, new Set(), "bubblewrap", { version: "v1", parents }, fake, host);
    if (typeof run === "string") throw new Error(run);
    let gone!: () => void;
    const { facts, removed } = run.finishAfter(report(), new Promise<void>((resolve) => (gone = resolve)));
    expect(facts.failure).toBeUndefined();
    expect(facts.usage.source).toBe("cgroup-v1");
    let settled = false;
    void removed.then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(fake.dirs.size).toBe(6);
    gone();
    expect(await removed).toBe(true);
    expect([...fake.dirs].sort()).toStrictEqual(Object.values(parents).sort());
    // No cgroup: removed at once, whatever the processes do.
    const bare = watched({});
    expect(await bare.run.finishAfter(report(), new Promise(() => {})).removed).toBe(true);
  });
});
