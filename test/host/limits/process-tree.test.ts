/**
 * Usage without a cgroup (src/host/limits/process-tree.ts) on /proc given as data: the tree is walked
 * through every thread's children list, each figure is summed over the tree, the peak is the largest
 * of the samples (and of a process's own high-water mark), and a gone process or a huge tree cannot
 * make a sample wrong or unbounded.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  childrenOf,
  MAX_SAMPLED_PROCESSES,
  processTree,
  realProcFiles,
  sampleTree,
  TreeUsage,
  type ProcFiles,
} from "../../../src/host/limits/process-tree.js";

interface FakeProcess {
  comm?: string;
  ticks?: [number, number, number, number];
  threads?: number;
  rssKiB?: number;
  hwmKiB?: number;
  /** Children per task (thread id → pids). */
  children?: Record<string, number[]>;
}

/** A /proc holding these processes. */
function proc(processes: Record<number, FakeProcess>): ProcFiles {
  const files = new Map<string, string>();
  const dirs = new Map<string, string[]>();
  for (const [pid, p] of Object.entries(processes)) {
    const [utime, stime, cutime, cstime] = p.ticks ?? [0, 0, 0, 0];
    // Fields 3.. after the command name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime priority nice num_threads ...
    const rest = ["S", 1, 1, 1, 0, -1, 0, 0, 0, 0, 0, utime, stime, cutime, cstime, 20, 0, p.threads ?? 1, 0, 0].join(" ");
    files.set(`/proc/${pid}/stat`, `${pid} (${p.comm ?? "node"}) ${rest}`);
    files.set(
      `/proc/${pid}/status`,
      `Name:\tnode\nVmHWM:\t  ${p.hwmKiB ?? 0} kB\nVmRSS:\t  ${p.rssKiB ?? 0} kB\nThreads:\t${p.threads ?? 1}\n`,
    );
    const tasks = Object.entries(p.children ?? { [pid]: [] });
    dirs.set(
      `/proc/${pid}/task`,
      tasks.map(([task]) => task),
    );
    for (const [task, children] of tasks) files.set(`/proc/${pid}/task/${task}/children`, children.map((c) => `${c} `).join(""));
  }
  return { read: (path) => files.get(path), list: (path) => dirs.get(path) };
}

describe("the process tree", () => {
  it("is walked through every thread's children, each process once, a cycle or a bad word ignored", () => {
    const files = proc({
      10: { children: { 10: [11], 12: [13, 10] } },
      11: { children: { 11: [14] } },
      13: {},
      14: { children: { 14: [10, 11] } },
    });
    expect(processTree(10, files)).toEqual([10, 11, 13, 14]);
    const odd: ProcFiles = { read: (path) => (path.endsWith("children") ? "x -3 0 7 " : undefined), list: () => ["1"] };
    expect(processTree(5, odd)).toEqual([5, 7]);
  });

  it("a process's children: every thread's, none when it is gone, undefined when the kernel keeps no children lists", () => {
    const files = proc({ 10: { children: { 10: [11], 12: [13] } } });
    expect(childrenOf(10, files)).toEqual([11, 13]);
    expect(childrenOf(99, files)).toEqual([]);
    const noLists: ProcFiles = { list: () => ["10", "12"], read: () => undefined };
    expect(childrenOf(10, noLists)).toBeUndefined();
    // Another thread's list missing (it ended meanwhile) is no answer about the kernel.
    expect(childrenOf(10, { ...files, read: (path) => (path.includes("/task/12/") ? undefined : files.read(path)) })).toEqual([11]);
  });

  it("stops at its bound, however many processes a fork bomb makes", () => {
    const wide: ProcFiles = {
      list: () => ["1"],
      read: (path) => {
        const pid = Number(/^\/proc\/(\d+)\//.exec(path)![1]);
        return `${pid * 3 + 1} ${pid * 3 + 2} ${pid * 3 + 3} `;
      },
    };
    expect(processTree(1, wide, 50)).toHaveLength(50);
    expect(processTree(1, wide)).toHaveLength(MAX_SAMPLED_PROCESSES);
  });
});

describe("reading the real /proc", () => {
  it("gives this process's files, and nothing (no throw) for a process or directory that is not there", () => {
    if (process.platform !== "linux") return;
    expect(realProcFiles.read(`/proc/${process.pid}/stat`)).toMatch(new RegExp(`^${process.pid} \\(`));
    expect(realProcFiles.list(`/proc/${process.pid}/task`)).toContain(String(process.pid));
    expect(realProcFiles.read("/proc/0/stat")).toBeUndefined();
    expect(realProcFiles.list("/proc/0/task")).toBeUndefined();
  });
});

describe("a sample", () => {
  it("takes a status without a VmRSS or VmHWM line (a kernel thread, a zombie) as 0, not NaN", () => {
    const files = proc({ 1: { ticks: [2, 0, 0, 0] } });
    const bare: ProcFiles = { ...files, read: (path) => (path.endsWith("/status") ? "Name:\tx\n" : files.read(path)) };
    expect(sampleTree(1, bare)).toMatchObject({ cpuMs: 20, residentBytes: 0, highWaterBytes: 0 });
  });

  it("sums CPU (own and reaped children's), resident memory and threads over the tree; the high-water mark is the largest one", () => {
    const files = proc({
      1: { comm: "a) (b c", ticks: [10, 5, 3, 2], threads: 7, rssKiB: 1000, hwmKiB: 4000, children: { 1: [2] } },
      2: { ticks: [1, 1, 0, 0], threads: 1, rssKiB: 500, hwmKiB: 600 },
    });
    expect(sampleTree(1, files)).toEqual({
      cpuMs: 220, // (20 + 2) ticks of 10 ms
      residentBytes: 1500 * 1024,
      highWaterBytes: 4000 * 1024,
      threads: 8,
      processes: 2,
    });
  });

  it("is nothing when the first process is gone, and leaves out a child that went between the walk and its read", () => {
    expect(sampleTree(1, proc({}))).toBeUndefined();
    // Gone between its two reads (stat there, status not), or the other way round.
    const half = proc({ 1: { ticks: [1, 0, 0, 0] } });
    expect(sampleTree(1, { ...half, read: (path) => (path.endsWith("/status") ? undefined : half.read(path)) })).toBeUndefined();
    expect(sampleTree(1, { ...half, read: (path) => (path.endsWith("/stat") ? undefined : half.read(path)) })).toBeUndefined();
    const files = proc({ 1: { ticks: [1, 0, 0, 0], children: { 1: [2] } } });
    expect(sampleTree(1, files)).toMatchObject({ cpuMs: 10, processes: 1 });
  });

  it("over a run: the largest of each figure seen, whichever sample it came from (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            ticks: fc.nat(1000),
            threads: fc.integer({ min: 1, max: 50 }),
            children: fc.nat(4),
            rssKiB: fc.nat(1 << 20),
            hwmKiB: fc.nat(1 << 20),
          }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        (samples) => {
          let at = 0;
          // The first process and its children, each child one thread of its own.
          const looks = samples.map((s) => {
            const pids = Array.from({ length: s.children }, (_, i) => i + 2);
            const tree: Record<number, FakeProcess> = { 1: { ...s, ticks: [s.ticks, 0, 0, 0], children: { 1: pids } } };
            for (const pid of pids) tree[pid] = { ticks: [0, 0, 0, 0], threads: 1 };
            return proc(tree);
          });
          const files: ProcFiles = { list: (path) => looks[at]!.list(path), read: (path) => looks[at]!.read(path) };
          const usage = new TreeUsage(1, files);
          expect(usage.seen).toBe(false);
          for (at = 0; at < samples.length; at += 1) usage.sample();
          expect(usage.seen).toBe(true);
          expect(usage.cpuMs).toBe(Math.max(...samples.map((s) => s.ticks * 10)));
          // Processes and threads apart: a process of 50 threads is one process.
          expect(usage.peakProcesses).toBe(Math.max(...samples.map((s) => 1 + s.children)));
          expect(usage.peakThreads).toBe(Math.max(...samples.map((s) => s.threads + s.children)));
          expect(usage.peakMemoryBytes).toBe(Math.max(...samples.flatMap((s) => [s.rssKiB * 1024, s.hwmKiB * 1024])));
        },
      ),
      { seed: 1818 },
    );
  });

  it("a tree that is gone is not a sample", () => {
    const usage = new TreeUsage(1, proc({}));
    usage.sample();
    expect(usage.seen).toBe(false);
    expect(usage.cpuMs).toBe(0);
  });
});
