/**
 * Resource limits of one run (memoryBytes, processes, cpuTimeMs, tmpBytes): what enforces each here (a
 * cgroup, an rlimit, bubblewrap's tmpfs size), the watch that ends a run past its memory or CPU limit,
 * the run's usage, and {@link limitSupport} for `ears doctor`. See docs/host.md "Resource limits".
 */
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
import { LAUNCHER_FAILED, LAUNCHER_MARK } from "./launcher.js";
import { TreeUsage } from "./process-tree.js";
import { sandboxMissing } from "../sandbox/index.js";

/** The one line that gives a host cgroups to create runs' cgroups in. */
export const CGROUP_FIX =
  "run the host as root where the cgroup v1 memory, pids and cpuacct hierarchies are mounted writable, " +
  "or in a cgroup v2 subtree delegated to it (e.g. systemd-run --user --scope -p Delegate=yes -- <host command>)";
/** The one line that gives a host a sandbox (and with it a bounded /tmp). */
const SANDBOX_FIX = "install bubblewrap (apt-get install bubblewrap) and run the guest sandboxed";
/** How often a live run's cgroup is read: cheap (two or three small files), and the CPU limit's granularity. */
export const WATCH_MS = 100;

/** What the cgroup of a run can do: its version and controllers, or why there is none. */
export type CgroupOffer = { version: "v1" | "v2"; controllers: readonly Controller[] } | { version: null; reason: string };

/** A run's limits, as resolved ({@link DEFAULT_HOST_LIMITS} filled in; Infinity: none). */
export type ResourceLimits = Record<ResourceLimitName, number>;

/** How one run's limits are enforced, decided from data (see {@link limitPlan}). */
export interface LimitPlan {
  report: Record<ResourceLimitName, LimitState>;
  /** A limit the host asked for that cannot be enforced here: the run must not start. */
  refusal?: string;
  /** What the run's cgroup must write. */
  cgroupLimits: CgroupLimits;
  /** RLIMIT_CPU for the launcher to set (no cgroup to account CPU time). */
  cpuRlimitSeconds?: number;
  /** The size of the sandbox's /tmp, for bubblewrap. */
  tmpBytes?: number;
}

/** The cgroup controller that enforces a limit, if one does (built when asked: see cgroup.ts on "static" mutants). */
function controllerOf(name: ResourceLimitName): Controller | undefined {
  return name === "memoryBytes" ? "memory" : name === "processes" ? "pids" : name === "cpuTimeMs" ? "cpu" : undefined;
}

/**
 * Decides, for each limit, what enforces it: memoryBytes and processes a cgroup only (RLIMIT_AS and
 * RLIMIT_NPROC do not mean the same: one is address space, which V8 reserves by the gigabyte, the other
 * counts the user's processes machine-wide); cpuTimeMs a cgroup, else RLIMIT_CPU per process; tmpBytes
 * bubblewrap. A limit asked for that nothing can enforce is a refusal; a default one is reported with a note.
 */
export function limitPlan(input: {
  limits: ResourceLimits;
  requested: ReadonlySet<ResourceLimitName>;
  confined: boolean;
  cgroup: CgroupOffer;
}): LimitPlan {
  const { limits, requested, confined, cgroup } = input;
  const plan: LimitPlan = { report: {} as LimitPlan["report"], cgroupLimits: {} };
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
    } else if (name === "cpuTimeMs") {
      enforcedBy = "rlimit";
      plan.cpuRlimitSeconds = Math.max(1, Math.ceil(value / 1000));
      note = "RLIMIT_CPU: per process, not per tree, in whole seconds";
    } else if (name === "tmpBytes") {
      if (confined) {
        enforcedBy = "bubblewrap";
        plan.tmpBytes = value;
      } else missing = `the guest runs unconfined, so it has no private /tmp to bound; ${SANDBOX_FIX}`;
    } else {
      const why = cgroup.version === null ? cgroup.reason : `the host's cgroup has no ${controller} controller`;
      missing = `no cgroup ${controller} controller can be used here (${why}); ${CGROUP_FIX}`;
    }
    if (enforcedBy === null) {
      if (asked) refusals.push(`limits.${name} (${value}) was asked for but cannot be enforced: ${missing}`);
      note = `not enforced: ${missing}`;
    }
    plan.report[name] = note === undefined ? { value, requested: asked, enforcedBy } : { value, requested: asked, enforcedBy, note };
  }
  if (refusals.length > 0) plan.refusal = refusals.join("; ");
  return plan;
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
  ) {}

  /**
   * Plans the limits for a run and creates its cgroup (whenever `cgroupPlan`, by default this host's,
   * offers one: also for accounting alone). A refusal (a limit asked for that cannot be enforced) comes back as a string and
   * leaves nothing behind. `files`: what the cgroup touches, the machine by default (a fake in tests).
   */
  static prepare(
    limits: ResourceLimits,
    requested: ReadonlySet<ResourceLimitName>,
    confined: boolean,
    cgroupPlan: CgroupPlan = hostCgroupPlan(),
    files?: CgroupFiles,
  ): RunLimits | string {
    let plan = limitPlan({ limits, requested, confined, cgroup: offerOf(cgroupPlan) });
    if (plan.refusal !== undefined) return plan.refusal;
    if (cgroupPlan.version === null) return new RunLimits(plan, undefined, limits);
    try {
      return new RunLimits(plan, RunCgroup.create(cgroupPlan, plan.cgroupLimits, files), limits);
    } catch (error) {
      const reason = `the run's cgroup could not be created under ${cgroupDirOf(cgroupPlan)} (${(error as Error).message})`;
      plan = limitPlan({ limits, requested, confined, cgroup: { version: null, reason } });
      return plan.refusal ?? new RunLimits(plan, undefined, limits);
    }
  }

  /**
   * Reads the cgroup every {@link WATCH_MS} while the run lives; `trip` is called once when a limit is passed.
   * Without a cgroup, samples the process tree under `pid` instead, for the report's usage (Linux).
   */
  watch(trip: (failure: HostFailure) => void, pid?: number): void {
    if (this.cgroup === undefined) {
      if (pid === undefined || process.platform !== "linux") return;
      const tree = (this.tree = new TreeUsage(pid));
      this.timer = setInterval(() => tree.sample(), WATCH_MS);
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

  /** One more look at the cgroup or the process tree: when the result arrives, before the guest exits. */
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
    const failure = this.tripped ?? this.check(counters) ?? this.rlimitKill(report) ?? launcherFailure(report);
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
    if (cpuTimeMs !== Infinity && this.plan.cpuRlimitSeconds === undefined && (counters.cpuMs ?? 0) > cpuTimeMs) {
      return failures.cpuLimitReached(cpuTimeMs, counters.cpuMs ?? 0);
    }
    return undefined;
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
    this.timer = undefined;
  }
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
 * piece (`ears doctor` prints it). `sandboxed`: whether runs are confined here (bubblewrap bounds /tmp);
 * by default, whether bubblewrap is installed (whether it starts is `ears doctor`'s other question).
 *
 * @example
 * const support = limitSupport();
 * for (const [name, { enforcedBy, fix }] of Object.entries(support.limits)) console.log(name, enforcedBy ?? `no: ${fix}`);
 */
export function limitSupport(sandboxed?: boolean): LimitSupport {
  return supportOn(sandboxed ?? sandboxMissing() === undefined, hostCgroupPlan());
}

/** {@link limitSupport} of a machine given as data: whether runs are confined, and its cgroup plan. */
export function supportOn(confined: boolean, cgroupPlan: CgroupPlan): LimitSupport {
  const offer = offerOf(cgroupPlan);
  const every = new Set<ResourceLimitName>(RESOURCE_LIMITS);
  const probe = Object.fromEntries(RESOURCE_LIMITS.map((name) => [name, 1])) as ResourceLimits;
  const plan = limitPlan({ limits: probe, requested: every, confined, cgroup: offer });
  const limits = {} as LimitSupport["limits"];
  for (const name of RESOURCE_LIMITS) {
    const { enforcedBy, note } = plan.report[name];
    const fix = enforcedBy === null ? (name === "tmpBytes" ? SANDBOX_FIX : CGROUP_FIX) : enforcedBy === "rlimit" ? CGROUP_FIX : undefined;
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
