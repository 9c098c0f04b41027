/** /proc given as data, for the process tree's tests and the watchdog's (run-limits.test.ts). */
import type { ProcFiles } from "../../../src/host/limits/process-tree.js";

export interface FakeProcess {
  comm?: string;
  ticks?: [number, number, number, number];
  threads?: number;
  rssKiB?: number;
  hwmKiB?: number;
  dataKiB?: number;
  /** The real uid (0 unless given). */
  uid?: number;
  /** Children per task (thread id → pids). */
  children?: Record<string, number[]>;
}

/** A /proc holding these processes. */
export function proc(processes: Record<number, FakeProcess>): ProcFiles {
  const files = new Map<string, string>();
  const dirs = new Map<string, string[]>();
  dirs.set("/proc", ["self", "sys", ...Object.keys(processes)]);
  for (const [pid, p] of Object.entries(processes)) {
    const [utime, stime, cutime, cstime] = p.ticks ?? [0, 0, 0, 0];
    // Fields 3.. after the command name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime priority nice num_threads ...
    const rest = ["S", 1, 1, 1, 0, -1, 0, 0, 0, 0, 0, utime, stime, cutime, cstime, 20, 0, p.threads ?? 1, 0, 0].join(" ");
    files.set(`/proc/${pid}/stat`, `${pid} (${p.comm ?? "node"}) ${rest}`);
    const uid = p.uid ?? 0;
    files.set(
      `/proc/${pid}/status`,
      `Name:\tnode\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\nVmHWM:\t  ${p.hwmKiB ?? 0} kB\nVmRSS:\t  ${p.rssKiB ?? 0} kB\n` +
        `VmData:\t  ${p.dataKiB ?? 0} kB\nThreads:\t${p.threads ?? 1}\n`,
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
