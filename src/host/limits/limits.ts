/**
 * Resource limits of one run (memoryBytes, processes, cpuTimeMs, tmpBytes): what enforces each here (a
 * cgroup, an rlimit, bubblewrap's tmpfs size), the watch that ends a run past its memory or CPU limit,
 * the run's usage, and {@link limitSupport} for `ears doctor`. See docs/host.md "Resource limits".
 */
import { FailureCode } from "../../protocol/outcome.js";
import * as failures from "../report/failures.js";
import { RESOURCE_LIMITS } from "../settings.js";
import type { HostFailure, LimitEnforcer, LimitState, ResourceLimitName, ResourceUsage, RunReport } from "../api/types.js";
import {
  hostCgroupPlan,
  RunCgroup,
  type CgroupCounters,
  type CgroupFiles,
  type CgroupLimits,
  type CgroupPlan,
  type Controller,
} from "./cgroup.js";
import { LAUNCHER_FAILED, LAUNCHER_MARK, machineShells, type Rlimits } from "./launcher.js";
import { childrenOf, realProcFiles, TreeUsage, userThreads, type ProcFiles, type TreeSample } from "./process-tree.js";
import { sandboxMissing } from "../sandbox/index.js";

/** The one line that gives a host cgroups to create runs' cgroups in. */
export const CGROUP_FIX =
  "run the host as root where the cgroup v1 memory, pids and cpuacct hierarchies are mounted writable, " +
  "or in a cgroup v2 subtree delegated to it (e.g. systemd-run --user --scope -p Delegate=yes -- <host command>)";
/** The one line that gives a host a sandbox (and with it a bounded /tmp). */
const SANDBOX_FIX = "install bubblewrap (apt-get install bubblewrap) and run the guest sandboxed";
/** How often a live run's cgroup (or, without one, its process tree) is read: the CPU, memory and process watch's granularity. */
export const WATCH_MS = 100;

/** What the cgroup of a run can do: its version and controllers, or why there is none. */
export type CgroupOffer = { version: "v1" | "v2"; controllers: readonly Controller[] } | { version: null; reason: string };

/**
 * How a run is confined, as far as its limits care: bubblewrap gives it a private `/tmp` tmpfs of a size;
 * Landlock, without one, bounds each file it writes by RLIMIT_FSIZE; none, nothing.
 */
export type Confinement = "bubblewrap" | "landlock" | "none";

/**
 * What the host can use besides a cgroup: `rlimits`, a launcher shell that sets them (Linux with /bin/sh);
 * `watchdog`, /proc's children lists to walk the run's tree (Linux); `root`, whether the host runs as root
 * (the kernel exempts root from RLIMIT_NPROC).
 */
export interface HostTools {
  rlimits: boolean;
  watchdog: boolean;
  root: boolean;
}

/** A run's limits, as resolved ({@link DEFAULT_HOST_LIMITS} filled in; Infinity: none). */
export type ResourceLimits = Record<ResourceLimitName, number>;

/** How one run's limits are enforced, decided from data (see {@link limitPlan}). */
export interface LimitPlan {
  report: Record<ResourceLimitName, LimitState>;
  /** A limit the host asked for that cannot be enforced here: the run must not start. */
  refusal?: string;
  /** Defaults that nothing here enforces, one line each (said once per process on stderr). */
  unenforced: string[];
  /** What the run's cgroup must write. */
  cgroupLimits: CgroupLimits;
  /**
   * The rlimits for the launcher. `processes` is the run's allowance: RLIMIT_NPROC is per user and
   * machine-wide, so the launcher is given the user's threads at the start plus this.
   */
  rlimits: Rlimits;
  /** What the watchdog checks the run's process tree against (no cgroup). */
  watch: { memoryBytes?: number; processes?: number; cpuTimeMs?: number };
  /** RLIMIT_CPU for the launcher to set (no cgroup to account CPU time); also in `rlimits`. */
  cpuRlimitSeconds?: number;
  /** The size of the sandbox's /tmp, for bubblewrap. */
  tmpBytes?: number;
}

/** The cgroup controller that enforces a limit, if one does (built when asked: see cgroup.ts on "static" mutants). */
function controllerOf(name: ResourceLimitName): Controller | undefined {
  return name === "memoryBytes" ? "memory" : name === "processes" ? "pids" : name === "cpuTimeMs" ? "cpu" : undefined;
}

/** The enforcer of a pair: an rlimit, the watchdog, both, or neither. */
function pairOf(rlimit: boolean, watchdog: boolean): LimitEnforcer | null {
  if (rlimit && watchdog) return "rlimit+watchdog";
  return rlimit ? "rlimit" : watchdog ? "watchdog" : null;
}

/**
 * What RLIMIT_DATA allows besides memoryBytes: a backstop against a process that allocates faster than the
 * watchdog samples, not the limit itself (the watchdog's resident-memory sum is). Node 24's V8 maps about
 * 570 MiB of private writable memory before the first instruction (Node 20 and 22: 48 MiB), and does not
 * start under it, so the rlimit cannot be the limit.
 */
export const DATA_RLIMIT_HEADROOM = 1024 * 1024 * 1024;

/** What an rlimit and the watchdog mean for each limit, said in its report's note. */
function fallbackNote(name: ResourceLimitName, by: LimitEnforcer): string {
  const rlimit =
    name === "memoryBytes"
      ? "RLIMIT_DATA per process at the limit plus 1 GiB, a backstop (allocation past it fails)"
      : name === "processes"
        ? "RLIMIT_NPROC, per user machine-wide, set to the user's threads at the start plus twice the limit"
        : "RLIMIT_CPU per process, in whole seconds";
  const watchdog =
    name === "memoryBytes"
      ? "the tree's resident memory"
      : name === "processes"
        ? "the tree's processes and threads"
        : "the tree's CPU time";
  const watched = `the host's watchdog over ${watchdog}, every ${WATCH_MS} ms`;
  return by === "rlimit+watchdog" ? `${rlimit}; ${watched}` : by === "rlimit" ? rlimit : watched;
}

/**
 * Decides, for each limit, what enforces it. A cgroup (v1 or v2) where its controller can be used; else,
 * on Linux, the launcher's rlimits with the host's watchdog over the run's process tree: memoryBytes by
 * RLIMIT_DATA (a process's private writable memory: V8's PROT_NONE reservations do not count) and the
 * tree's summed resident memory; processes by the tree's thread count and, for a host that is not root,
 * RLIMIT_NPROC (per user, machine-wide: a backstop); cpuTimeMs by RLIMIT_CPU per process and the tree's
 * CPU time; tmpBytes by bubblewrap's tmpfs, or RLIMIT_FSIZE per file where the confinement has no private
 * `/tmp`. A limit asked for that nothing can enforce is a refusal; a default one is reported with a note
 * and listed in `unenforced`.
 */
export function limitPlan(input: {
  limits: ResourceLimits;
  requested: ReadonlySet<ResourceLimitName>;
  confined: Confinement;
  cgroup: CgroupOffer;
  tools: HostTools;
}): LimitPlan {
  const { limits, requested, confined: confinement, cgroup, tools } = input;
  const plan: LimitPlan = { report: {} as LimitPlan["report"], unenforced: [], cgroupLimits: {}, rlimits: {}, watch: {} };
  const refusals: string[] = [];
  for (const name of RESOURCE_LIMITS) {
    const value = limits[name];
    const asked = requested.has(name);
    if (value === Infinity) {
      plan.report[name] = { value: null, requested: asked, enforcedBy: null };
      continue;
    }
    let enforcedBy: LimitEnforcer | null = null;
    let missing = "";
    let note: string | undefined;
    const controller = controllerOf(name);
    if (controller !== undefined && cgroup.version !== null && cgroup.controllers.includes(controller)) {
      enforcedBy = cgroup.version === "v1" ? "cgroup-v1" : "cgroup-v2";
      if (name === "memoryBytes") plan.cgroupLimits.memoryBytes = value;
      if (name === "processes") plan.cgroupLimits.processes = value;
    } else if (controller !== undefined) {
      // The kernel exempts root from RLIMIT_NPROC: only the watchdog bounds a root host's processes.
      const rlimit = tools.rlimits && !(name === "processes" && tools.root);
      enforcedBy = pairOf(rlimit, tools.watchdog);
      if (enforcedBy === null) {
        const why = cgroup.version === null ? cgroup.reason : `the host's cgroup has no ${controller} controller`;
        const nor = "nor rlimits and a /proc watchdog (Linux only)";
        missing = `no cgroup ${controller} controller can be used here (${why}), ${nor}; ${CGROUP_FIX}`;
      } else {
        note = fallbackNote(name, enforcedBy);
        if (rlimit && name === "memoryBytes") plan.rlimits.dataBytes = value + DATA_RLIMIT_HEADROOM;
        if (rlimit && name === "processes") plan.rlimits.processes = value;
        if (rlimit && name === "cpuTimeMs") plan.rlimits.cpuSeconds = plan.cpuRlimitSeconds = Math.max(1, Math.ceil(value / 1000));
        if (tools.watchdog) plan.watch[name as keyof LimitPlan["watch"]] = value;
      }
    } else if (confinement === "bubblewrap") {
      enforcedBy = "bubblewrap";
      plan.tmpBytes = value;
    } else if (confinement === "landlock" && tools.rlimits) {
      enforcedBy = "rlimit";
      plan.rlimits.fileBytes = value;
      note = "RLIMIT_FSIZE: each file the run writes, not their total (no private /tmp without bubblewrap)";
    } else {
      missing =
        confinement === "none"
          ? `the guest runs unconfined, so it has no private /tmp to bound; ${SANDBOX_FIX}`
          : `the sandbox has no private /tmp and no rlimit can bound the files here; ${SANDBOX_FIX}`;
    }
    if (enforcedBy === null) {
      if (asked) refusals.push(`limits.${name} (${value}) was asked for but cannot be enforced: ${missing}`);
      else plan.unenforced.push(`limits.${name} (default ${value}) is not enforced: ${missing}`);
      note = `not enforced: ${missing}`;
    }
    plan.report[name] = note === undefined ? { value, requested: asked, enforcedBy } : { value, requested: asked, enforcedBy, note };
  }
  if (refusals.length > 0) plan.refusal = refusals.join("; ");
  return plan;
}

/**
 * A directory the run writes whose total the host's watchdog bounds (a session's scratch copy under Landlock,
 * where no tmpfs can: workspace/copy-workspace.ts).
 */
export interface WatchedDirectory {
  /** The largest file a process of the run may write there (RLIMIT_FSIZE; the smaller of it and `tmpBytes`'s is set). */
  fileBytes: number;
  /** Resolves with the failure that ends the run when the directory is past its bounds, else undefined. Never rejects. */
  check(): Promise<HostFailure | undefined>;
}

let tools: HostTools | undefined;

/** What this process can use besides a cgroup (Linux with a shell: rlimits and the watchdog), looked up once. */
export function hostTools(): HostTools {
  if (tools !== undefined) return tools;
  const linux = process.platform === "linux";
  const shells = machineShells();
  tools = {
    rlimits: linux && (shells.sh ?? shells.bash) !== undefined,
    watchdog: linux && childrenOf(process.pid) !== undefined,
    root: process.getuid?.() === 0,
  };
  return tools;
}

/** The defaults already said on stderr, once each per process. */
const warned = new Set<string>();
/** Where a default that is not enforced is said: process warnings by default; the CLI says it per run instead. */
let warnUnenforced: ((line: string) => void) | null = (line) => process.emitWarning(line, { code: "EARS_LIMIT_NOT_ENFORCED" });

/**
 * @internal Replaces how a default limit that nothing enforces is said (once per process): `null` says
 * nothing, for a caller that reports it itself (the CLI warns per run from `report.limits`).
 */
export function onUnenforcedDefault(say: ((line: string) => void) | null): ((line: string) => void) | null {
  const before = warnUnenforced;
  warnUnenforced = say;
  return before;
}

/** Says each line of `lines` once per process (see {@link onUnenforcedDefault}). */
function warnOnce(lines: readonly string[]): void {
  for (const line of lines) {
    // The limit's name and why: the same default said for another value is the same news.
    const key = line.replace(/\(default [^)]*\)/, "");
    if (warned.has(key)) continue;
    warned.add(key);
    warnUnenforced?.(line);
  }
}

/** What a cgroup plan offers a run. */
function offerOf(plan: CgroupPlan): CgroupOffer {
  if (plan.version === null) return plan;
  if (plan.version === "v2") return { version: "v2", controllers: plan.controllers };
  return { version: "v1", controllers: Object.keys(plan.parents) as Controller[] };
}

/**
 * One run's limits: its plan and cgroup, the watch while it lives, and the verdict and usage at its end.
 * Build with {@link RunLimits.prepare}.
 */
export class RunLimits {
  private timer: ReturnType<typeof setInterval> | undefined;
  private tripped: HostFailure | undefined;
  /** The most processes and tasks the cgroup's reads saw (cgroup.procs has no peak; pids.peak is missing before 6.1). */
  private sampledProcesses = 0;
  private sampledTasks = 0;
  /** The process tree's usage, sampled where there is no cgroup. */
  private tree: TreeUsage | undefined;

  private constructor(
    readonly plan: LimitPlan,
    readonly cgroup: RunCgroup | undefined,
    private readonly limits: ResourceLimits,
    private readonly host: Required<RunHost> = defaultRunHost(),
  ) {
    const { processes } = plan.rlimits;
    // Twice the allowance: the user's count includes the host, whose own threads grow (libuv starts its pool
    // when first used) and its other runs; the watchdog meets a tree past its limit first, and the rlimit
    // stops one that outruns the watchdog's 100 ms at twice its limit.
    const nproc = processes === undefined ? undefined : host.userThreads(process.getuid?.() ?? 0) + 2 * processes;
    this.rlimits = nproc === undefined ? plan.rlimits : { ...plan.rlimits, processes: nproc };
  }

  /**
   * What the launcher sets: the plan's rlimits, RLIMIT_NPROC as the user's threads now plus twice the run's allowance,
   * RLIMIT_FSIZE lowered for a {@link watchDirectory}.
   */
  rlimits: Rlimits;
  /** The directory {@link watchDirectory} bounds, and its watch's timer. */
  private directory: WatchedDirectory | undefined;
  private directoryTimer: ReturnType<typeof setInterval> | undefined;

  /**
   * Bounds a directory the run writes: each file at `dir.fileBytes` by RLIMIT_FSIZE, and, while the run lives,
   * `dir.check` every {@link WATCH_MS} (one look at a time); the failure it gives ends the run's tree at once (its
   * cgroup killed, and the process the host started, the Landlock helper, told to end its tree) and becomes the
   * run's. Call before the launcher's command is built. Returns why not when no rlimit can be set here.
   */
  watchDirectory(dir: WatchedDirectory): string | undefined {
    if (!this.host.tools.rlimits) {
      return (
        "a session's workspace under Landlock needs the launcher's RLIMIT_FSIZE to bound each file, " +
        "and this machine has no /bin/sh to set it"
      );
    }
    const { fileBytes } = this.rlimits;
    this.rlimits = { ...this.rlimits, fileBytes: fileBytes === undefined ? dir.fileBytes : Math.min(fileBytes, dir.fileBytes) };
    this.directory = dir;
    return undefined;
  }

  /** Starts {@link watchDirectory}'s watch (see there). */
  private watchTheDirectory(trip: (failure: HostFailure) => void, pid: number | undefined): void {
    const dir = this.directory;
    if (dir === undefined) return;
    let looking = false;
    const timer = setInterval(() => {
      if (looking) return;
      looking = true;
      void dir.check().then((failure) => {
        looking = false;
        // Stopped meanwhile (the run ended, or another limit tripped): the verdict is already someone else's.
        if (failure === undefined || this.tripped !== undefined || this.directoryTimer !== timer) return;
        this.tripped = failure;
        this.cgroup?.killAll();
        if (pid !== undefined) this.host.end(pid);
        this.stopWatch();
        trip(failure);
      });
    }, WATCH_MS);
    timer.unref();
    this.directoryTimer = timer;
  }

  /**
   * Plans the limits for a run and creates its cgroup (whenever `cgroupPlan`, by default this host's,
   * offers one: also for accounting alone). A refusal (a limit asked for that cannot be enforced) comes back as a string and
   * leaves nothing behind. `files`: what the cgroup touches, the machine by default (a fake in tests).
   */
  static prepare(
    limits: ResourceLimits,
    requested: ReadonlySet<ResourceLimitName>,
    confined: Confinement,
    cgroupPlan: CgroupPlan = hostCgroupPlan(),
    files?: CgroupFiles,
    runHost: RunHost = {},
  ): RunLimits | string {
    const host = { ...defaultRunHost(), ...runHost };
    let plan = limitPlan({ limits, requested, confined, cgroup: offerOf(cgroupPlan), tools: host.tools });
    if (plan.refusal !== undefined) return plan.refusal;
    if (cgroupPlan.version !== null) {
      try {
        return warned$(new RunLimits(plan, RunCgroup.create(cgroupPlan, plan.cgroupLimits, files), limits, host));
      } catch (error) {
        const reason = `the run's cgroup could not be created under ${cgroupDirOf(cgroupPlan)} (${(error as Error).message})`;
        plan = limitPlan({ limits, requested, confined, cgroup: { version: null, reason }, tools: host.tools });
        if (plan.refusal !== undefined) return plan.refusal;
      }
    }
    return warned$(new RunLimits(plan, undefined, limits, host));
  }

  /**
   * Reads the cgroup every {@link WATCH_MS} while the run lives; `trip` is called once when a limit is passed.
   * Without a cgroup, samples the process tree under `pid` instead, for the report's usage (Linux).
   */
  watch(trip: (failure: HostFailure) => void, pid?: number): void {
    this.watchTheDirectory(trip, pid);
    if (this.cgroup === undefined) {
      if (pid === undefined || !this.host.tools.watchdog) return;
      const tree = (this.tree = new TreeUsage(pid, this.host.proc));
      this.timer = setInterval(() => {
        const sample = tree.sample();
        const failure = sample === undefined ? undefined : this.checkTree(sample);
        if (failure === undefined || this.tripped !== undefined) return;
        this.tripped = failure;
        // No cgroup to kill in: the processes the sample saw, now (the group's kill follows with the run's end).
        for (const child of sample!.pids) this.host.kill(child);
        this.stopWatch();
        trip(failure);
      }, WATCH_MS);
      this.timer.unref();
      return;
    }
    this.timer = setInterval(() => {
      const failure = this.check(this.read());
      if (failure === undefined || this.tripped !== undefined) return;
      this.tripped = failure;
      // A limit is hard: the tree ends now, not after the grace periods of a normal shutdown.
      this.cgroup?.killAll();
      this.stopWatch();
      trip(failure);
    }, WATCH_MS);
    // The guest keeps the host alive while it runs; the watch must never do so by itself.
    this.timer.unref();
  }

  /** The cgroup's counters at the result ({@link sample}): a run reported at its result is reported with them. */
  private atResult: CgroupCounters | undefined;

  /** One more look at the cgroup or the process tree: at the guest's hello, and when the result arrives, before the guest exits. */
  sample(): void {
    this.tree?.sample();
    if (this.cgroup !== undefined) this.atResult = this.read();
  }

  /**
   * At the end of the run: the limit failure that replaces the run's own (a kill the watch did not see
   * yet counts too), the limits and usage for the report; then the cgroup is emptied and removed.
   */
  async finish(report: RunReport): Promise<{ failure?: HostFailure; limits: LimitPlan["report"]; usage: ResourceUsage }> {
    const facts = this.verdict(report);
    if (this.cgroup !== undefined && !(await this.cgroup.remove())) {
      // Still busy after the kill and retries: the watchdog is gone by now, so say so rather than leave it silently.
      facts.failure ??= failures.hostFailed(new Error(`the run's cgroup ${this.cgroup.directories.join(", ")} could not be removed`));
    }
    return facts;
  }

  /**
   * A pooled run's end at its result (the guest is being killed): the verdict and the usage read now, and the
   * cgroup removed once `gone` settles (the processes are gone). `removed` is false when a directory is still
   * there after the retries (5 s; nothing reports it then: the report is out).
   */
  finishAfter(report: RunReport, gone: Promise<unknown>): { facts: Awaited<ReturnType<RunLimits["finish"]>>; removed: Promise<boolean> } {
    // Read once, at the result, not again: the report waits for nothing it does not need.
    const facts = this.verdict(report, this.atResult);
    const { cgroup } = this;
    return { facts, removed: cgroup === undefined ? Promise.resolve(true) : gone.then(() => cgroup.remove()) };
  }

  /** The limit failure that replaces the run's own (a kill the watch did not see yet counts too), the limits and the usage, read now. */
  private verdict(report: RunReport, read?: CgroupCounters): { failure?: HostFailure; limits: LimitPlan["report"]; usage: ResourceUsage } {
    this.stopWatch();
    const counters = read ?? this.read();
    const failure =
      this.tripped ??
      this.check(counters) ??
      this.rlimitKill(report) ??
      this.dataRlimit(report) ??
      launcherFailure(report) ??
      this.processesRefused(report, counters);
    const tree = this.tree?.seen === true ? this.tree : undefined;
    const usage: ResourceUsage = {
      source: this.cgroup !== undefined ? (this.cgroup.version === "v1" ? "cgroup-v1" : "cgroup-v2") : tree !== undefined ? "proc" : "none",
      wallMs: report.durationMs,
      calls: report.calls.length + (report.droppedCalls ?? 0),
    };
    if (tree !== undefined) {
      usage.cpuMs = tree.cpuMs;
      usage.peakMemoryBytes = tree.peakMemoryBytes;
      usage.peakProcesses = tree.peakProcesses;
      usage.peakThreads = tree.peakThreads;
    }
    if (counters.cpuMs !== undefined) usage.cpuMs = counters.cpuMs;
    if (counters.peakMemoryBytes !== undefined) usage.peakMemoryBytes = counters.peakMemoryBytes;
    if (this.cgroup !== undefined && this.sampledProcesses > 0) usage.peakProcesses = this.sampledProcesses;
    if (this.cgroup?.has("pids")) usage.peakThreads = Math.max(counters.peakTasks ?? 0, this.sampledTasks);
    return failure === undefined ? { limits: this.plan.report, usage } : { failure, limits: this.plan.report, usage };
  }

  private read(): CgroupCounters {
    const counters = this.cgroup?.read() ?? {};
    // Kernels without pids.peak (before 6.1 on v2): the largest count seen by the watch, a lower bound.
    this.sampledTasks = Math.max(this.sampledTasks, counters.tasks ?? 0);
    this.sampledProcesses = Math.max(this.sampledProcesses, counters.processes ?? 0);
    return counters;
  }

  /** The limit the counters show passed, if any. */
  private check(counters: CgroupCounters): HostFailure | undefined {
    const { memoryBytes, cpuTimeMs } = this.limits;
    if (this.plan.cgroupLimits.memoryBytes !== undefined && (counters.oomKills ?? 0) > 0) return failures.memoryLimitReached(memoryBytes);
    const byCgroup = this.plan.report.cpuTimeMs.enforcedBy?.startsWith("cgroup") === true;
    if (cpuTimeMs !== Infinity && byCgroup && (counters.cpuMs ?? 0) > cpuTimeMs) {
      return failures.cpuLimitReached(cpuTimeMs, counters.cpuMs ?? 0);
    }
    return undefined;
  }

  /** The limit a sample of the process tree shows passed, if the watchdog enforces it. */
  private checkTree(sample: TreeSample): HostFailure | undefined {
    const { memoryBytes, processes, cpuTimeMs } = this.plan.watch;
    if (memoryBytes !== undefined && sample.residentBytes > memoryBytes) return failures.memoryLimitReached(memoryBytes);
    if (processes !== undefined && sample.threads > processes) return failures.processLimitReached(processes, sample.threads);
    if (cpuTimeMs !== undefined && sample.cpuMs > cpuTimeMs) return failures.cpuLimitReached(cpuTimeMs, sample.cpuMs);
    return undefined;
  }

  /**
   * A run that failed on its own where RLIMIT_DATA bounds memory, and that was out of memory. Crashed (no
   * result, no hello): a process of the tree said so on stderr (V8's "out of memory", Python's MemoryError,
   * libc's "Cannot allocate memory", C++'s bad_alloc), or the watchdog saw one with at least half its
   * allowance. Or the body threw what V8 throws when the rlimit refuses it memory ("Array buffer allocation
   * failed", WebAssembly's "could not allocate memory"): under a cgroup that allocation would have been
   * killed as MemoryLimit, and the limit, not the body's reaction to it, is the failure. A guest could print
   * or throw the words itself: it only names its own failure so.
   */
  private dataRlimit(report: RunReport): HostFailure | undefined {
    const bytes = this.plan.rlimits.dataBytes;
    if (bytes === undefined) return undefined;
    const { outcome } = report;
    if (outcome?.status === "failure" && report.failure === undefined && outcome.code === FailureCode.GuestFailed) {
      const refused = /Array buffer allocation failed|could not allocate memory/.exec(outcome.content);
      return refused === null ? undefined : failures.memoryLimitReached(this.limits.memoryBytes, refused[0]);
    }
    if (outcome !== undefined || !crashed(report)) return undefined;
    const said = /out of memory|MemoryError|Cannot allocate memory|bad_alloc/.test(report.stderr ?? "");
    return said || (this.tree?.peakDataBytes ?? 0) * 2 >= bytes ? failures.memoryLimitReached(this.limits.memoryBytes) : undefined;
  }

  /**
   * A run that failed (crashed, or ran out of time) after it was refused processes at its limit: the
   * cgroup's pids.events counts each refusal; without a cgroup, the watchdog saw the tree at the limit
   * (RLIMIT_NPROC, machine-wide, may refuse a fork there when the user's other processes grew meanwhile).
   * The limit, not what followed from it, is the failure.
   */
  private processesRefused(report: RunReport, counters: CgroupCounters): HostFailure | undefined {
    if (!crashed(report) && report.failure?.code !== "RunTimeout") return undefined;
    const { processes } = this.limits;
    const byCgroup = this.plan.cgroupLimits.processes !== undefined && (counters.pidsRefused ?? 0) > 0;
    const watched = this.plan.watch.processes !== undefined && (this.tree?.peakThreads ?? 0) >= processes;
    return byCgroup || watched ? failures.processLimitReached(processes) : undefined;
  }

  /** RLIMIT_CPU ends a process with SIGXCPU (bubblewrap passes it on as exit status 128 + 24). */
  private rlimitKill(report: RunReport): HostFailure | undefined {
    if (this.plan.cpuRlimitSeconds === undefined || report.outcome !== undefined) return undefined;
    const { exit } = report;
    if (exit?.signal === "SIGXCPU" || (report.sandbox != null && exit?.code === 128 + 24)) {
      return failures.cpuLimitReached(this.limits.cpuTimeMs, this.plan.cpuRlimitSeconds * 1000);
    }
    return undefined;
  }

  private stopWatch(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.directoryTimer !== undefined) clearInterval(this.directoryTimer);
    this.timer = undefined;
    this.directoryTimer = undefined;
  }
}

/** A run that ended without a result of its own doing: it crashed, or its output ended before a hello or a result. */
function crashed(report: RunReport): boolean {
  const code = report.failure?.code;
  return code === "GuestCrashed" || code === "NoResult" || code === "NoHello";
}

/** What a run's limits use of the machine: its tools, how /proc is read, how a process is killed, the user's threads (data in tests). */
export interface RunHost {
  tools?: HostTools;
  proc?: ProcFiles;
  kill?: (pid: number) => void;
  /** Asks the process the host started to end its run's tree (SIGTERM: the Landlock helper kills every descendant, then exits). */
  end?: (pid: number) => void;
  userThreads?: (uid: number) => number;
}

function defaultRunHost(): Required<RunHost> {
  return {
    tools: hostTools(),
    proc: realProcFiles,
    kill(pid) {
      // Never the host, init, or a group (0 and negatives).
      if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) return;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    },
    end(pid) {
      if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) return;
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // Gone meanwhile.
      }
    },
    userThreads: (uid) => userThreads(uid),
  };
}

/** Says a run's unenforced defaults once per process; returns the run. */
function warned$(run: RunLimits): RunLimits {
  warnOnce(run.plan.unenforced);
  return run;
}

/** The launcher's own failure (it exits with a status of its own and a marked stderr line): the guest never ran. */
function launcherFailure(report: RunReport): HostFailure | undefined {
  if (report.exit?.code !== LAUNCHER_FAILED || report.hello !== undefined) return undefined;
  const line = (report.stderr ?? "").split("\n").find((text) => text.startsWith(LAUNCHER_MARK));
  return line === undefined ? undefined : failures.launcherFailed(line.slice(LAUNCHER_MARK.length).trim());
}

function cgroupDirOf(plan: Exclude<CgroupPlan, { version: null }>): string {
  return plan.version === "v2" ? plan.parent : Object.values(plan.parents).join(", ");
}

/** What this machine can enforce, per limit, and the one line that fixes each missing piece. */
export interface LimitSupport {
  /** The cgroup version runs get, or null with the reason. */
  cgroup: { version: "v1" | "v2"; controllers: Controller[] } | { version: null; reason: string; fix: string };
  limits: Record<ResourceLimitName, { enforcedBy: LimitEnforcer | null; note?: string; fix?: string }>;
}

/**
 * Which resource limits this machine can enforce and how, with the one line that fixes each missing
 * piece (`ears doctor` prints it, for the mechanism a default run gets here). `confinement`: how runs are
 * confined (bubblewrap bounds /tmp, Landlock each file by RLIMIT_FSIZE); by default `"bubblewrap"` where it
 * is installed (whether it starts is `ears doctor`'s other question), else `"none"`.
 *
 * @example
 * const support = limitSupport("landlock");
 * for (const [name, { enforcedBy, fix }] of Object.entries(support.limits)) console.log(name, enforcedBy ?? `no: ${fix}`);
 */
export function limitSupport(confinement?: Confinement): LimitSupport {
  return supportOn(confinement ?? (sandboxMissing() === undefined ? "bubblewrap" : "none"), hostCgroupPlan(), hostTools());
}

/** {@link limitSupport} of a machine given as data: how runs are confined, its cgroup plan and its other tools. */
export function supportOn(confined: Confinement, cgroupPlan: CgroupPlan, tools: HostTools): LimitSupport {
  return supportWith(confined, offerOf(cgroupPlan), tools);
}

/**
 * {@link supportOn} from what the cgroup plan offers a run: {@link limitPlan}'s answer for each limit, as a run
 * here gets it (the deployment matrix's resource rows are read off this too: one decision, not two).
 */
export function supportWith(confined: Confinement, offer: CgroupOffer, tools: HostTools): LimitSupport {
  const every = new Set<ResourceLimitName>(RESOURCE_LIMITS);
  const probe = Object.fromEntries(RESOURCE_LIMITS.map((name) => [name, 1])) as ResourceLimits;
  const plan = limitPlan({ limits: probe, requested: every, confined, cgroup: offer, tools });
  const limits = {} as LimitSupport["limits"];
  for (const name of RESOURCE_LIMITS) {
    const { enforcedBy, note } = plan.report[name];
    // A cgroup bounds the whole tree exactly; anything else is the fallback, and a cgroup is the fix.
    const fix =
      enforcedBy === null
        ? name === "tmpBytes"
          ? SANDBOX_FIX
          : CGROUP_FIX
        : enforcedBy.startsWith("cgroup") || enforcedBy === "bubblewrap"
          ? undefined
          : name === "tmpBytes"
            ? SANDBOX_FIX
            : CGROUP_FIX;
    limits[name] = {
      enforcedBy,
      ...(note === undefined ? {} : { note: note.replace(/^not enforced: /, "") }),
      ...(fix === undefined ? {} : { fix }),
    };
  }
  const cgroup: LimitSupport["cgroup"] =
    offer.version === null
      ? { version: null, reason: offer.reason, fix: CGROUP_FIX }
      : { version: offer.version, controllers: [...offer.controllers] };
  return { cgroup, limits };
}
