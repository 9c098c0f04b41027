/**
 * Linux control groups for one run: where the host may create them (planned from /proc/self/cgroup and the
 * mount table, as data, so the plan is tested without a kernel), and the run's own cgroup: created under
 * the host's own cgroup (never above it, so limits on the host still hold), limited, read for usage,
 * emptied and removed when the run ends.
 */
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { CgroupJoin } from "./launcher.js";

/** The controllers a run uses: memory (memoryBytes), pids (processes), CPU accounting (cpuTimeMs, usage). */
export type Controller = "memory" | "pids" | "cpu";

/** How the plan looks at the machine: reads a file (undefined when it cannot) and asks whether a directory is writable. */
export interface CgroupLook {
  read(path: string): string | undefined;
  writable(path: string): boolean;
}

/** Where this host can create per-run cgroups, with what, or why it cannot. */
export type CgroupPlan =
  /** cgroup v2: one directory, under which a child may use `controllers` (those in `enable` still have to be switched on). */
  | { version: "v2"; parent: string; controllers: Controller[]; enable: Controller[] }
  /** cgroup v1: the host's own directory in each controller's hierarchy that is mounted and writable. */
  | { version: "v1"; parents: Partial<Record<Controller, string>> }
  | { version: null; reason: string };

// The tables below are built when asked, not at load: a value computed while a module loads is, to Stryker,
// a "static" mutant that needs every test of the suite (CONTRIBUTING.md, "Mutation testing").

/** The controllers a run uses, in the order they are planned. */
function usedControllers(): Controller[] {
  return ["memory", "pids", "cpu"];
}

/** The v1 hierarchy that carries a controller we use (CPU time is read from `cpuacct`). */
function v1Name(controller: Controller): string {
  return controller === "cpu" ? "cpuacct" : controller;
}

interface Mount {
  root: string;
  point: string;
  type: string;
  superOptions: string[];
  readOnly: boolean;
}

/** The cgroup mounts in a /proc/self/mountinfo text. Octal escapes in paths (\040 for a space) are decoded. */
export function cgroupMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [left, right] = line.split(" - ");
    if (left === undefined || right === undefined) continue;
    const fields = left.split(" ");
    const [type, , superOptions = ""] = right.split(" ");
    if (type !== "cgroup" && type !== "cgroup2") continue;
    const root = unescapeMount(fields[3] ?? "");
    const point = unescapeMount(fields[4] ?? "");
    const options = (fields[5] ?? "").split(",");
    mounts.push({ root, point, type, superOptions: superOptions.split(","), readOnly: options.includes("ro") });
  }
  return mounts;
}

function unescapeMount(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * The host's own cgroup directory in each hierarchy: `v2` for the unified one, and per v1 controller,
 * from /proc/self/cgroup ("id:controllers:path") and the mounts (a mount whose root is not above the
 * host's path cannot reach it).
 */
export function ownCgroupDirs(procSelfCgroup: string, mountinfo: string): { v2?: string; v1: Partial<Record<Controller, string>> } {
  const mounts = cgroupMounts(mountinfo).filter((mount) => !mount.readOnly);
  const dirs: { v2?: string; v1: Partial<Record<Controller, string>> } = { v1: {} };
  const inside = (mount: Mount, path: string): string | undefined => {
    const below =
      mount.root === "/" ? path : path === mount.root || path.startsWith(`${mount.root}/`) ? path.slice(mount.root.length) : undefined;
    // join keeps a trailing slash ("/" -> "/sys/fs/cgroup/pids/"); a directory is named without one.
    return below === undefined ? undefined : join(mount.point, below).replace(/(.)\/+$/, "$1");
  };
  for (const line of procSelfCgroup.split("\n")) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, id, names = "", path = "/"] = match;
    if (id === "0" && names === "") {
      const mount = mounts.find((m) => m.type === "cgroup2");
      const dir = mount === undefined ? undefined : inside(mount, path);
      if (dir !== undefined) dirs.v2 = dir;
      continue;
    }
    const list = names.split(",");
    for (const controller of usedControllers()) {
      if (!list.includes(v1Name(controller))) continue;
      const mount = mounts.find((m) => m.type === "cgroup" && m.superOptions.includes(v1Name(controller)));
      const dir = mount === undefined ? undefined : inside(mount, path);
      if (dir !== undefined) dirs.v1[controller] = dir;
    }
  }
  return dirs;
}

/**
 * Where runs get their cgroups. cgroup v2 when the host's own v2 cgroup offers memory and pids to a
 * child (delegated, or the root), else the v1 hierarchies that are mounted and writable, else none with
 * the reason. Pure over `look`.
 */
export function planCgroups(procSelfCgroup: string, mountinfo: string, look: CgroupLook): CgroupPlan {
  const own = ownCgroupDirs(procSelfCgroup, mountinfo);
  let v2Reason: string | undefined;
  if (own.v2 !== undefined) {
    const offered = words(look.read(join(own.v2, "cgroup.controllers")));
    const enabled = words(look.read(join(own.v2, "cgroup.subtree_control")));
    const controllers = usedControllers().filter((c) => offered.includes(c));
    if (!controllers.includes("memory") || !controllers.includes("pids")) {
      const offers = offered.join(" ") || "none";
      v2Reason = `the host's cgroup v2 ${own.v2} does not offer the memory and pids controllers (it offers: ${offers})`;
    } else if (!look.writable(own.v2)) {
      v2Reason = `the host may not write its cgroup v2 ${own.v2} (not delegated to this user)`;
    } else {
      return { version: "v2", parent: own.v2, controllers, enable: controllers.filter((c) => !enabled.includes(c)) };
    }
  }
  const parents: Partial<Record<Controller, string>> = {};
  for (const controller of usedControllers()) {
    const dir = own.v1[controller];
    if (dir !== undefined && look.writable(dir)) parents[controller] = dir;
  }
  if (Object.keys(parents).length > 0) return { version: "v1", parents };
  const v1Reason =
    Object.keys(own.v1).length > 0
      ? "the host may not write its cgroup v1 memory, pids or cpuacct directories"
      : "no cgroup v1 memory, pids or cpuacct hierarchy is mounted";
  return { version: null, reason: v2Reason === undefined ? v1Reason : `${v2Reason}; ${v1Reason}` };
}

function words(text: string | undefined): string[] {
  return (text ?? "").split(/\s+/).filter((word) => word !== "");
}

/** The machine as it is: the real files. */
export const realLook: CgroupLook = {
  read(path) {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  },
  writable(path) {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  },
};

let planned: CgroupPlan | undefined;

/** This process's plan, read once (a host does not move between cgroups while it runs guests). */
export function hostCgroupPlan(): CgroupPlan {
  return (planned ??= cgroupPlanOn(process.platform, realLook));
}

/** The plan of a process on `platform` whose /proc and cgroup files `look` reads. */
export function cgroupPlanOn(platform: NodeJS.Platform, look: CgroupLook): CgroupPlan {
  if (platform !== "linux") return { version: null, reason: `cgroups are a Linux feature; this is ${platform}` };
  const procSelfCgroup = look.read("/proc/self/cgroup");
  const mountinfo = look.read("/proc/self/mountinfo");
  if (procSelfCgroup === undefined || mountinfo === undefined) return { version: null, reason: "/proc/self/cgroup cannot be read" };
  return planCgroups(procSelfCgroup, mountinfo, look);
}

/** What one run's cgroup sets: each value finite, or left out (no limit, accounting only). */
export interface CgroupLimits {
  memoryBytes?: number;
  processes?: number;
}

/** Counters read from a run's cgroup; each field is absent when the kernel does not offer it. */
export interface CgroupCounters {
  cpuMs?: number;
  memoryBytes?: number;
  peakMemoryBytes?: number;
  /** Processes (thread-group leaders: the distinct pids of cgroup.procs) in the cgroup now. */
  processes?: number;
  /** Tasks (threads) now and at most, as the pids controller counts them (pids.current, pids.peak). */
  tasks?: number;
  peakTasks?: number;
  oomKills?: number;
  /** How many times the pids controller refused a fork at its limit (pids.events "max"). */
  pidsRefused?: number;
}

/**
 * What a run's cgroup does to the machine: the real files and `kill` by default ({@link realCgroupFiles}),
 * a fake in tests, so that the tests of this code (and its mutants under Stryker) never reach a cgroup or
 * a process of the machine.
 */
export interface CgroupFiles {
  /** A file's text, or undefined when it cannot be read. */
  read(path: string): string | undefined;
  /** Writes a file; throws what the kernel said. */
  write(path: string, text: string): void;
  /** Writes a file that exists (an optional knob: swap limits, cgroup.kill); false when it is absent or refused. */
  writeIfPresent(path: string, text: string): boolean;
  /** Creates a directory whose parent exists; throws when it cannot (also when it exists). */
  mkdir(path: string): void;
  /** Removes an empty directory; true when it is gone (removed now, or already). */
  rmdir(path: string): boolean;
  /** SIGKILLs a process; nothing when it is gone already. */
  kill(pid: number): void;
}

/** The machine's own files and processes. */
export function realCgroupFiles(): CgroupFiles {
  return {
    read: (path) => realLook.read(path),
    write: (path, text) => writeFileSync(path, text),
    writeIfPresent(path, text) {
      try {
        writeFileSync(path, text, { flag: "r+" });
        return true;
      } catch {
        return false;
      }
    },
    mkdir: (path) => mkdirSync(path),
    rmdir(path) {
      try {
        rmdirSync(path);
        return true;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === "ENOENT";
      }
    },
    kill(pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    },
  };
}

/**
 * Whether `dir` is a run's cgroup made by the process `pid` (by default this host): its name is
 * `ears-<pid>-<sequence>-<random>`, as {@link RunCgroup.create} names them. Never the host's own cgroup, a
 * parent, {@link HOST_LEAF} or another host's run. A run's cgroup kills and removes only directories
 * that pass, so a wrong path (a bug, or a mutant under Stryker) cannot empty the host's own cgroup.
 */
export function isRunCgroupDir(dir: string, pid: number = process.pid): boolean {
  const match = /^ears-(\d+)-\d+-[0-9a-z]*$/.exec(basename(dir));
  return match !== null && match[1] === String(pid);
}

/**
 * Whether a pid read from a run's cgroup.procs may be killed: a process's own number (1 and up; 0 and
 * negatives name process groups to kill()), never init (1) and never this host.
 */
function killable(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 1 && pid !== process.pid;
}

let sequence = 0;

/** One run's cgroup (one directory per v1 hierarchy, one in v2). */
export class RunCgroup {
  private constructor(
    readonly version: "v1" | "v2",
    /** The run's directory per controller (v2: the same one for all). */
    readonly dirs: Partial<Record<Controller, string>>,
    private readonly files: CgroupFiles,
  ) {}

  /** Every directory, once each: what the watchdog and `remove` clear. */
  get directories(): string[] {
    return [...new Set(Object.values(this.dirs))];
  }

  /** What the launcher writes itself into: each v1 hierarchy's `tasks` (by thread, see {@link CgroupJoin}), v2's `cgroup.procs`. */
  get joins(): CgroupJoin[] {
    return this.directories.map((dir) =>
      this.version === "v1" ? { file: join(dir, "tasks"), as: "thread" } : { file: join(dir, "cgroup.procs"), as: "process" },
    );
  }

  /** Which controllers this cgroup has. */
  has(controller: Controller): boolean {
    return this.dirs[controller] !== undefined;
  }

  /**
   * Creates the run's cgroup under the host's own and writes `limits`. Throws (after removing what it
   * made) when a directory cannot be made or a limit cannot be written. `files`: the machine by default.
   */
  static create(plan: Exclude<CgroupPlan, { version: null }>, limits: CgroupLimits, files: CgroupFiles = realCgroupFiles()): RunCgroup {
    sequence += 1;
    const name = `ears-${process.pid}-${sequence}-${Math.random().toString(36).slice(2, 8)}`;
    const made: string[] = [];
    try {
      if (plan.version === "v2") {
        if (plan.enable.length > 0) enableControllers(plan.parent, plan.enable, files);
        const dir = join(plan.parent, name);
        files.mkdir(dir);
        made.push(dir);
        const cgroup = new RunCgroup("v2", Object.fromEntries(plan.controllers.map((c) => [c, dir])), files);
        if (limits.memoryBytes !== undefined) {
          files.write(join(dir, "memory.max"), String(limits.memoryBytes));
          // The limit bounds memory, not memory plus swap: a guest over it is killed, not swapped out.
          files.writeIfPresent(join(dir, "memory.swap.max"), "0");
        }
        if (limits.processes !== undefined) files.write(join(dir, "pids.max"), String(limits.processes));
        return cgroup;
      }
      const dirs: Partial<Record<Controller, string>> = {};
      for (const [controller, parent] of Object.entries(plan.parents) as [Controller, string][]) {
        const dir = join(parent, name);
        files.mkdir(dir);
        made.push(dir);
        dirs[controller] = dir;
      }
      if (limits.memoryBytes !== undefined && dirs.memory !== undefined) {
        files.write(join(dirs.memory, "memory.limit_in_bytes"), String(limits.memoryBytes));
        files.writeIfPresent(join(dirs.memory, "memory.memsw.limit_in_bytes"), String(limits.memoryBytes));
      }
      if (limits.processes !== undefined && dirs.pids !== undefined) files.write(join(dirs.pids, "pids.max"), String(limits.processes));
      return new RunCgroup("v1", dirs, files);
    } catch (error) {
      for (const dir of made.reverse()) removeRunDir(files, dir);
      throw error;
    }
  }

  /** The counters now. */
  read(): CgroupCounters {
    const counters: CgroupCounters = {};
    const { memory, pids, cpu } = this.dirs;
    const text = (dir: string, file: string) => this.files.read(join(dir, file));
    const number = (dir: string, file: string) => numberIn(text(dir, file));
    if (this.version === "v2") {
      if (cpu !== undefined) {
        const usec = field(text(cpu, "cpu.stat"), "usage_usec");
        if (usec !== undefined) counters.cpuMs = usec / 1000;
      }
      if (memory !== undefined) {
        assign(counters, "memoryBytes", number(memory, "memory.current"));
        assign(counters, "peakMemoryBytes", number(memory, "memory.peak"));
        assign(counters, "oomKills", field(text(memory, "memory.events"), "oom_kill"));
      }
    } else {
      if (cpu !== undefined) {
        const ns = number(cpu, "cpuacct.usage");
        if (ns !== undefined) counters.cpuMs = ns / 1e6;
      }
      if (memory !== undefined) {
        assign(counters, "memoryBytes", number(memory, "memory.usage_in_bytes"));
        assign(counters, "peakMemoryBytes", number(memory, "memory.max_usage_in_bytes"));
        assign(counters, "oomKills", field(text(memory, "memory.oom_control"), "oom_kill"));
      }
    }
    if (pids !== undefined) {
      assign(counters, "tasks", number(pids, "pids.current"));
      assign(counters, "peakTasks", number(pids, "pids.peak"));
      assign(counters, "pidsRefused", field(text(pids, "pids.events"), "max"));
    }
    // Processes, not threads: cgroup.procs lists thread-group leaders (v1 may list one twice). The launcher
    // joins every hierarchy, so their lists agree but for a process that is joining or leaving: the largest.
    for (const dir of this.directories) {
      const procs = text(dir, "cgroup.procs");
      if (procs !== undefined) counters.processes = Math.max(counters.processes ?? 0, new Set(words(procs)).size);
    }
    return counters;
  }

  /**
   * SIGKILLs every process in the cgroup (v2's cgroup.kill where the kernel has it). A directory that is
   * not a run's cgroup of this host ({@link isRunCgroupDir}) is left alone, and so is a pid that names no
   * single other process.
   */
  killAll(): void {
    for (const dir of this.directories) {
      if (!isRunCgroupDir(dir)) continue;
      if (this.version === "v2" && this.files.writeIfPresent(join(dir, "cgroup.kill"), "1")) continue;
      for (const word of words(this.files.read(join(dir, "cgroup.procs")))) {
        const pid = Number(word);
        if (killable(pid)) this.files.kill(pid);
      }
    }
  }

  /**
   * Kills what is left and removes the directories; retries while the kernel still counts dying
   * processes in them (rmdir fails with EBUSY until they are gone). True when every directory is gone;
   * false when one is not a run's cgroup of this host ({@link isRunCgroupDir}: it is never touched).
   */
  async remove(withinMs = 5000): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    const refused = this.directories.filter((dir) => !isRunCgroupDir(dir));
    let left = this.directories.filter((dir) => isRunCgroupDir(dir));
    // The kernel usually lets go of the tree's last processes within a few milliseconds of the exit the host
    // saw: ask again soon at first (a run's report waits for this), then every 20 ms.
    for (let tries = 0; ; tries += 1) {
      this.killAll();
      left = left.filter((dir) => !removeRunDir(this.files, dir));
      if (left.length === 0 || Date.now() >= deadline) return left.length === 0 && refused.length === 0;
      await new Promise((resolve) => setTimeout(resolve, Math.min(20, 2 ** tries)));
    }
  }
}

/** Removes a run's cgroup directory (only one that {@link isRunCgroupDir} accepts); true when it is gone. */
function removeRunDir(files: CgroupFiles, dir: string): boolean {
  return isRunCgroupDir(dir) && files.rmdir(dir);
}

/** The leaf a delegated cgroup v2's own processes move to, so the cgroup may give its children controllers. */
export const HOST_LEAF = "ears-host";

/** How {@link enableControllers} touches the cgroup file system (the real one by default; a fake in tests). */
export type CgroupWriter = Pick<CgroupFiles, "read" | "write" | "mkdir">;

/**
 * Switches `controllers` on for the children of the cgroup v2 `parent`. The kernel refuses (EBUSY) while
 * `parent` holds processes of its own (the "no internal processes" rule), which a delegated cgroup
 * holding the host does; then its processes (the host, and whatever else the delegation put there) move
 * to a leaf of their own, {@link HOST_LEAF}, as systemd's delegation guide advises, and it is tried again.
 * Runs' cgroups stay under `parent`, beside the leaf. Throws when it still cannot.
 */
export function enableControllers(parent: string, controllers: readonly Controller[], fs: CgroupWriter = realCgroupFiles()): void {
  const control = join(parent, "cgroup.subtree_control");
  const text = controllers.map((c) => `+${c}`).join(" ");
  try {
    fs.write(control, text);
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EBUSY") throw error;
  }
  const leaf = join(parent, HOST_LEAF);
  try {
    fs.mkdir(leaf);
  } catch (error) {
    // A host started before in this cgroup made it already.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  for (const pid of words(fs.read(join(parent, "cgroup.procs")))) fs.write(join(leaf, "cgroup.procs"), pid);
  fs.write(control, text);
}

function numberIn(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || !/^\d+$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

/** The number after `name` in a "name value" per line file (cpu.stat, memory.events, memory.oom_control). */
export function field(text: string | undefined, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\d+)$`, "m").exec(text ?? "");
  return match === null ? undefined : Number(match[1]);
}

function assign(counters: CgroupCounters, key: keyof CgroupCounters, value: number | undefined): void {
  if (value !== undefined) counters[key] = value;
}
