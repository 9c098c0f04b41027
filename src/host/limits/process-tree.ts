/**
 * Usage where a run has no cgroup (issue 18's "the kernel's accounting of the child otherwise"): the
 * guest's process tree, walked from its first process through /proc's children lists, sampled while it
 * lives. Each sample sums the tree's CPU time (its processes' own and that of the children they waited
 * for), its resident memory and its threads; the run's usage is the largest of each seen, and a process's
 * own high-water mark (VmHWM) where that is larger; processes and threads are counted apart. A lower
 * bound: what the tree did after the last sample, and processes that came and went between two samples,
 * are not seen (docs/host.md, "Resource limits"). Linux only; reads the file system through {@link ProcFiles}, so it is tested on data.
 */
import { readdirSync, readFileSync } from "node:fs";

/** How the sampler reads /proc (the real one by default; data in tests). */
export interface ProcFiles {
  /** A file's text, or undefined when it cannot be read (the process is gone). */
  read(path: string): string | undefined;
  /** A directory's entries, or undefined when it cannot be read. */
  list(path: string): string[] | undefined;
}

export const realProcFiles: ProcFiles = {
  read: (path) => {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  },
  list: (path) => {
    try {
      return readdirSync(path);
    } catch {
      return undefined;
    }
  },
};

/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every architecture Node runs on. */
const TICKS_PER_SECOND = 100;
/** At most this many processes are read per sample: a fork bomb must not make the host's sampling unbounded. */
export const MAX_SAMPLED_PROCESSES = 2000;

/** One look at the tree. */
export interface TreeSample {
  /** User + system CPU of the tree's processes and of the children they reaped, in ms. */
  cpuMs: number;
  /** The tree's resident memory now (sum of VmRSS), and the largest VmHWM of one of its processes, in bytes. */
  residentBytes: number;
  highWaterBytes: number;
  /** Threads in the tree (what a pids cgroup counts). */
  threads: number;
  /** Processes read (at most {@link MAX_SAMPLED_PROCESSES}). */
  processes: number;
  /** The largest VmData of one of its processes (what RLIMIT_DATA bounds), in bytes. */
  dataBytes: number;
  /** The pids read, root first. */
  pids: number[];
}

/**
 * The children of every thread of `pid` (Linux's /proc/<pid>/task/<tid>/children); empty when the process
 * is gone, undefined when this kernel has no children lists (its own task has none to read).
 */
export function childrenOf(pid: number, files: ProcFiles = realProcFiles): number[] | undefined {
  const children: number[] = [];
  for (const task of files.list(`/proc/${pid}/task`) ?? []) {
    const text = files.read(`/proc/${pid}/task/${task}/children`);
    if (text === undefined && task === String(pid)) return undefined;
    for (const word of (text ?? "").split(" ")) {
      const child = Number(word);
      // An empty word is Number("") = 0: skipped with the other non-pids.
      if (Number.isSafeInteger(child) && child > 0) children.push(child);
    }
  }
  return children;
}

/** The pids of the tree under and including `root`, breadth first, at most `max`. */
export function processTree(root: number, files: ProcFiles = realProcFiles, max = MAX_SAMPLED_PROCESSES): number[] {
  const tree = [root];
  const seen = new Set(tree);
  for (let next = 0; next < tree.length && tree.length < max; next += 1) {
    for (const child of childrenOf(tree[next]!, files) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      tree.push(child);
      if (tree.length >= max) break;
    }
  }
  return tree;
}

/** The value of a "Name:   123 kB" line of /proc/<pid>/status, in bytes. */
function statusBytes(status: string, name: string): number {
  const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, "m").exec(status);
  return match === null ? 0 : Number(match[1]) * 1024;
}

/** Samples the tree under `root` once; undefined when its first process is gone. */
export function sampleTree(root: number, files: ProcFiles = realProcFiles): TreeSample | undefined {
  const sample: TreeSample = { cpuMs: 0, residentBytes: 0, highWaterBytes: 0, threads: 0, processes: 0, dataBytes: 0, pids: [] };
  for (const pid of processTree(root, files)) {
    const stat = files.read(`/proc/${pid}/stat`);
    const status = files.read(`/proc/${pid}/status`);
    if (stat === undefined || status === undefined) {
      if (pid === root) return undefined;
      continue;
    }
    // After the command name (which may hold spaces and parentheses): state is field 3; utime, stime,
    // cutime, cstime are 14 to 17; num_threads 20.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = [11, 12, 13, 14].reduce((sum, at) => sum + (Number(fields[at]) || 0), 0);
    sample.cpuMs += (ticks * 1000) / TICKS_PER_SECOND;
    sample.threads += Number(fields[17]) || 0;
    sample.residentBytes += statusBytes(status, "VmRSS");
    sample.highWaterBytes = Math.max(sample.highWaterBytes, statusBytes(status, "VmHWM"));
    sample.dataBytes = Math.max(sample.dataBytes, statusBytes(status, "VmData"));
    sample.processes += 1;
    sample.pids.push(pid);
  }
  return sample;
}

/** The largest of each figure over a run's samples. */
export class TreeUsage {
  private samples = 0;
  cpuMs = 0;
  peakMemoryBytes = 0;
  peakProcesses = 0;
  peakThreads = 0;
  /** The largest VmData of one process seen. */
  peakDataBytes = 0;
  /** The newest sample, while the tree was there. */
  last: TreeSample | undefined;

  constructor(
    private readonly root: number,
    private readonly files: ProcFiles = realProcFiles,
  ) {}

  /** Takes one sample (nothing when the tree is gone); returns it. */
  sample(): TreeSample | undefined {
    const sample = sampleTree(this.root, this.files);
    if (sample === undefined) return undefined;
    this.samples += 1;
    this.last = sample;
    this.peakDataBytes = Math.max(this.peakDataBytes, sample.dataBytes);
    this.cpuMs = Math.max(this.cpuMs, sample.cpuMs);
    this.peakMemoryBytes = Math.max(this.peakMemoryBytes, sample.residentBytes, sample.highWaterBytes);
    this.peakProcesses = Math.max(this.peakProcesses, sample.processes);
    this.peakThreads = Math.max(this.peakThreads, sample.threads);
    return sample;
  }

  /** Whether any sample saw the tree. */
  get seen(): boolean {
    return this.samples > 0;
  }
}

/**
 * The threads (tasks) of every process whose real uid is `uid`: what the kernel compares with RLIMIT_NPROC
 * (it counts threads, machine-wide per user). A count made now: processes come and go meanwhile.
 */
export function userThreads(uid: number, files: ProcFiles = realProcFiles): number {
  let threads = 0;
  for (const entry of files.list("/proc") ?? []) {
    if (!/^\d+$/.test(entry)) continue;
    const status = files.read(`/proc/${entry}/status`);
    const real = status === undefined ? null : /^Uid:\s+(\d+)/m.exec(status);
    if (real === null || real === undefined || Number(real[1]) !== uid) continue;
    threads += Number(/^Threads:\s+(\d+)$/m.exec(status!)?.[1] ?? 1);
  }
  return threads;
}
