/**
 * A cgroup file system and process table as data, for RunCgroup and RunLimits in-process: nothing here
 * touches the machine, so neither a test nor a mutant of src/host/limits/ under Stryker can reach a
 * cgroup or a process of the host. It keeps the kernel's rules the code relies on: a directory is made
 * only under an existing one and only once; a cgroup's knob files exist as soon as it does (when the
 * test says the kernel has them); rmdir fails while a cgroup holds a process; a killed process leaves
 * every cgroup.procs (unless the test makes it survive a first kill, as a dying one does).
 */
import { dirname } from "node:path";
import type { CgroupFiles } from "../../../src/host/limits/cgroup.js";

function errno(code: string, path: string): Error {
  return Object.assign(new Error(`${code}: ${path}`), { code });
}

export interface FakeCgroupFiles extends CgroupFiles {
  files: Map<string, string>;
  dirs: Set<string>;
  /** Every pid kill() was called with, in order. */
  killed: number[];
  /** Every rmdir() called, in order. */
  removed: string[];
  /** Every write, as "path <- text", in order (writeIfPresent too, when the file exists). */
  written: string[];
}

export interface FakeOptions {
  /** Existing directories (the parents a plan names). */
  dirs: string[];
  /** Files in new directories as soon as they exist (the kernel's knobs), by name. */
  knobs?: string[];
  /** Paths whose write fails (EACCES). */
  refuse?: (path: string) => boolean;
  /** Paths whose mkdir fails (EACCES). */
  refuseMkdir?: (path: string) => boolean;
  /** Pids that survive the first kill (still counted as dying), then go. */
  dying?: number[];
}

export function fakeCgroupFiles(options: FakeOptions): FakeCgroupFiles {
  const files = new Map<string, string>();
  const dirs = new Set(options.dirs);
  const dying = new Set(options.dying ?? []);
  const killed: number[] = [];
  const removed: string[] = [];
  const written: string[] = [];
  const fake: FakeCgroupFiles = {
    files,
    dirs,
    killed,
    removed,
    written,
    read: (path) => files.get(path),
    write(path, text) {
      if (!dirs.has(dirname(path))) throw errno("ENOENT", path);
      if (options.refuse?.(path)) throw errno("EACCES", path);
      written.push(`${path} <- ${text}`);
      files.set(path, text);
    },
    writeIfPresent(path, text) {
      if (!files.has(path) || options.refuse?.(path)) return false;
      written.push(`${path} <- ${text}`);
      files.set(path, text);
      return true;
    },
    mkdir(path) {
      if (dirs.has(path)) throw errno("EEXIST", path);
      if (!dirs.has(dirname(path))) throw errno("ENOENT", path);
      if (options.refuseMkdir?.(path)) throw errno("EACCES", path);
      dirs.add(path);
      for (const knob of options.knobs ?? []) files.set(`${path}/${knob}`, "");
    },
    rmdir(path) {
      removed.push(path);
      if (!dirs.has(path)) return true;
      if ((files.get(`${path}/cgroup.procs`) ?? "").trim() !== "") return false;
      dirs.delete(path);
      for (const file of [...files.keys()]) if (dirname(file) === path) files.delete(file);
      return true;
    },
    kill(pid) {
      killed.push(pid);
      if (dying.delete(pid)) return;
      for (const [file, text] of files) {
        if (!file.endsWith("/cgroup.procs")) continue;
        const left = text.split("\n").filter((word) => word.trim() !== "" && Number(word) !== pid);
        files.set(file, left.join("\n"));
      }
    },
  };
  return fake;
}

/** Puts processes into a cgroup directory of the fake (as the launcher's join and the guest's forks do). */
export function addProcesses(fake: FakeCgroupFiles, dir: string, pids: readonly (number | string)[]): void {
  const now = fake.files.get(`${dir}/cgroup.procs`) ?? "";
  fake.files.set(`${dir}/cgroup.procs`, [now, ...pids.map(String)].filter((word) => word !== "").join("\n"));
}
