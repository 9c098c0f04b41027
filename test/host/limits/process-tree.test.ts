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
  userThreads,
  type ProcFiles,
} from "../../../src/host/limits/process-tree.js";
import { proc, type FakeProcess } from "./fake-proc.js";

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
      1: { comm: "a) (b c", ticks: [10, 5, 3, 2], threads: 7, rssKiB: 1000, hwmKiB: 4000, dataKiB: 300, children: { 1: [2] } },
      2: { ticks: [1, 1, 0, 0], threads: 1, rssKiB: 500, hwmKiB: 600, dataKiB: 900 },
    });
    expect(sampleTree(1, files)).toEqual({
      cpuMs: 220, // (20 + 2) ticks of 10 ms
      residentBytes: 1500 * 1024,
      highWaterBytes: 4000 * 1024,
      threads: 8,
      processes: 2,
      // The largest one process holds: what RLIMIT_DATA bounds, per process.
      dataBytes: 900 * 1024,
      pids: [1, 2],
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

describe("the user's threads (what RLIMIT_NPROC counts)", () => {
  it("sums the threads of the processes whose real uid is the user's, skipping other entries and processes gone meanwhile", () => {
    const files = proc({
      10: { uid: 1000, threads: 11 },
      11: { uid: 1000, threads: 1 },
      12: { uid: 0, threads: 40 },
      13: { uid: 10000, threads: 5 },
    });
    expect(userThreads(1000, files)).toBe(12);
    expect(userThreads(0, files)).toBe(40);
    expect(userThreads(1, files)).toBe(0);
    // A status without a Threads line counts as one; an unreadable /proc as none.
    const bare: ProcFiles = { list: () => ["7", "x"], read: () => "Uid:\t5\t5\t5\t5\n" };
    expect(userThreads(5, bare)).toBe(1);
    expect(userThreads(5, { list: () => undefined, read: () => undefined })).toBe(0);
  });

  it("counts this process on the real machine", () => {
    if (process.platform !== "linux") return;
    expect(userThreads(process.getuid!())).toBeGreaterThanOrEqual(1);
  });
});
