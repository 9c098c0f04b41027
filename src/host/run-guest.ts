/**
 * Runs a guest as a child process over its stdio, with the host engine on a StreamWire over the
 * child's stdout and stdin. The child is gone (its exit observed) when the promise settles, but for a pooled run
 * reported at its result, whose teardown {@link StartedGuest.teardown} follows (docs/code.md, "Warm runs"). A
 * launch has two steps, so a run pool can take the first ahead of time: {@link startGuest} (sandbox
 * plan, limits, launcher, spawn, watchdog) and {@link StartedGuest.serve} (the session and the report).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { StreamWire } from "../wires/stdio.js";
import * as failures from "./report/failures.js";
import { GuestProcess } from "./process/guest-process.js";
import { hostSession } from "./engine/session.js";
import { DEFAULT_HOST_LIMITS, graceMs, hostSettings, RESOURCE_LIMITS, type HostSettings } from "./settings.js";
import type { RunObserver } from "./observe/observer.js";
import { traced } from "./observe/tracing.js";
import { GROUPS_SUPPORTED, ProcessGroup } from "./process/process-group.js";
import { confineFailure } from "./sandbox/landlock.js";
import {
  planSandbox,
  SANDBOX_INFO_FD,
  SECCOMP_FD,
  sandboxRequest,
  spawnConfined,
  type SandboxReport,
  type SandboxRequest,
} from "./sandbox/index.js";
import { notStartedReport, runReport } from "./report/report.js";
import { RunLimits, type ResourceLimits } from "./limits/limits.js";
import { launcherCommand, leakedDescriptors, machineShells } from "./limits/launcher.js";
import { findExecutable } from "./sandbox/policy.js";
import { nodeFileSystem } from "./sandbox/file-system-view.js";
import { isSession, sessionCopyRun, sessionRun, type Session } from "./workspace/index.js";
import { GATE_GO_FD, GATE_READY_FD, scratchGap } from "./workspace/copy-workspace.js";
import type { GuestCommand, HostFailure, LimitState, ResourceLimitName, ResourceUsage, RunReport } from "./api/types.js";
import { RemoteTarget } from "./remote/remote-target.js";
import { admissionOf, type Admission } from "./engine/admission.js";
import { recordedRun } from "./observe/record.js";

/** Default `killGraceMs`: the MCP client's 2 s between closing stdin, SIGTERM and SIGKILL. */
export const DEFAULT_KILL_GRACE_MS = 2000;

/** @internal Every option of {@link GuestCommand}: what runGuest takes, and runCode takes but for `command` and `args`. */
export const GUEST_COMMAND_OPTIONS: readonly string[] = [
  ...["allowed", "input", "capabilities", "onLog", "onFrame", "limits", "signal", "trace", "approval"],
  ...["command", "args", "cwd", "session", "env", "sandbox", "killGraceMs", "onStderr", "remote", "admission", "record"],
];

/**
 * @internal Throws a TypeError for an option the caller does not take: a misspelt or misplaced one (say
 * `runTimeoutMs` beside `limits` instead of in it) would otherwise be ignored, and the run go on without it.
 */
export function refuseUnknownOptions(options: object, caller: string, known: readonly string[]): void {
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown === undefined) return;
  const inLimits = unknown in DEFAULT_HOST_LIMITS ? `; ${unknown} is a limit: give it as limits.${unknown}` : "";
  throw new TypeError(`${caller}: unknown option ${JSON.stringify(unknown)}${inLimits}`);
}

/**
 * Runs a guest program as a child process (no shell, stdio piped, window hidden on Windows) and hosts
 * its session. Never rejects: a child that cannot start, crashes, hangs, exits without a result, breaks
 * the protocol or is aborted gives a report with a distinct failure code, its exit and its stderr tail.
 * Shutdown (deadline, abort, violation): close stdin, wait `killGraceMs`, SIGTERM, wait, SIGKILL, each
 * signal to the guest's own process group. After a result, stdin is closed and the child is expected to
 * exit by itself, with the same escalation; whatever it left in its group is then stopped the same way.
 * The guest is confined by an OS sandbox by default (`sandbox: "auto"`; see docs/host.md "Threat model").
 * Invalid options throw synchronously (TypeError or RangeError); no process is started.
 *
 * @example
 * const report = await runGuest({
 *   command: process.execPath,
 *   args: ["guest.mjs"],
 *   capabilities: { read: ({ path }) => readFile(path, "utf8") },
 *   limits: { runTimeoutMs: 60_000 },
 * });
 * if (!report.ok) console.error(report.failure?.message ?? report.outcome?.content, report.stderr);
 */
export function runGuest(options: GuestCommand): Promise<RunReport> {
  if (typeof options === "object" && options !== null) refuseUnknownOptions(options, "runGuest", GUEST_COMMAND_OPTIONS);
  const recording = recordedRun(options, "runGuest");
  const launch = checkLaunch(recording.options, "runGuest", {});
  const run = () =>
    traced(launch.settings.trace, { api: "runGuest", input: launch.settings.input }, (observer) =>
      admitted(launch, () => runLaunch(launch, observer)),
    );
  return (launch.session === undefined ? run() : sessionRun(launch.session, run, "runGuest")).then(recording.finish);
}

/**
 * A session's run: its workspace is the working directory, writable, and the run is confined ("auto"
 * becomes required: a body must not outlive its run and touch the workspace while the host does).
 * Throws TypeError for a value that is not an open session, with `cwd`, or with `sandbox: false`.
 */
function sessionPaths(session: unknown, options: GuestCommand, caller: string): { cwd: string; sandbox: SandboxRequest } {
  if (!isSession(session)) throw new TypeError(`${caller}: options.session must be a session made by createSession or openSession`);
  if (session.closed) throw new TypeError(`${caller}: options.session is closed (session.close() was called)`);
  if (options.remote !== undefined)
    throw new TypeError(`${caller}: options.remote and options.session are exclusive: a workspace is this host's`);
  if (options.cwd !== undefined)
    throw new TypeError(`${caller}: options.cwd and options.session are exclusive: a session's workspace is the working directory`);
  const request = sandboxRequest(options.sandbox, caller);
  if (request.mode === "off") throw new TypeError(`${caller}: a session's runs are sandboxed; options.sandbox must not be false`);
  return { cwd: session.path, sandbox: { ...request, mode: "required" } };
}

/** @internal What runCode adds to a launch. */
export interface LaunchExtras {
  /** Paths added to the sandbox's `readable` (the mode is kept: "auto" stays "auto"). */
  readable?: readonly string[];
  /** Paths added to the sandbox's `writable`. */
  writable?: readonly string[];
  /** A directory the host made for this run, removed by the watchdog if the host dies first. */
  scratch?: string;
  /**
   * Confined: bubblewrap mounts a tmpfs of this many bytes on the working directory inside the sandbox
   * (runCode's cold private directory, code-launch.ts), so nothing the guest writes there reaches the host.
   */
  privateDirBytes?: number;
  /** Whether the sandbox looks for the script's directory and Node's lookups (default true). */
  discover?: boolean;
  /**
   * The guest is runCode's runner: nothing in it has anything to clean up, so it is SIGKILLed at once when
   * its result is in or its run is stopped, instead of being given `killGraceMs` per step.
   */
  disposable?: boolean;
}

/** @internal A checked launch's session (its working directory), if it has one. */
export interface SessionExtra {
  session?: Session;
}

/** @internal A launch's options, checked once (runGuest, runCode and run pools use them as they are). */
export interface CheckedLaunch extends LaunchExtras, SessionExtra {
  command: string;
  args: readonly string[];
  /** The working directory as given (undefined: this process's, when the guest starts). */
  cwd: string | undefined;
  env: NodeJS.ProcessEnv | undefined;
  onStderr: ((chunk: string) => void) | undefined;
  settings: HostSettings;
  killGraceMs: number;
  /** The sandbox asked for, with the extras' paths added. */
  sandbox: SandboxRequest;
  /** The resource limits the options name (a report says which were asked for). */
  requestedLimits: ReadonlySet<ResourceLimitName>;
  /** Where the guest runs when not here: a remote runner (options.remote). */
  remote?: RemoteTarget | undefined;
  /** The run admission its process waits in (options.admission, or the process-wide one). */
  admission: Admission;
}

/** @internal The memory a launch's process is charged in its admission: its limit here, none of this host's when remote. */
export function admittedMemory(launch: Pick<CheckedLaunch, "remote" | "settings">): number {
  return launch.remote === undefined ? launch.settings.limits.memoryBytes : 0;
}

/**
 * @internal Waits for a slot of the launch's admission, then runs `start` (which starts the guest and
 * resolves once it is gone) and gives the slot back. A run that gets no slot (queue full, waited too long,
 * aborted while it waited) has a report with that failure and nothing started. Never rejects.
 */
export async function admitted(launch: CheckedLaunch, start: () => Promise<RunReport>): Promise<RunReport> {
  const askedAt = performance.now();
  const slot = await launch.admission.acquire({ memoryBytes: admittedMemory(launch), signal: launch.settings.signal });
  if (!("release" in slot)) return notStartedReport(slot, performance.now() - askedAt);
  try {
    return await start();
  } finally {
    slot.release();
  }
}

/**
 * @internal Checks a launch's options (runGuest's, or runCode's with its runner as the command): throws
 * TypeError or RangeError naming the bad option, as runGuest documents. `caller` names the public
 * function in the messages. `readable`/`writable` are added to whatever sandbox the options choose.
 */
export function checkLaunch(options: GuestCommand, caller: "runGuest" | "runCode" | "createRunPool", extras: LaunchExtras): CheckedLaunch {
  if (typeof options !== "object" || options === null) throw new TypeError(`${caller}: options must be an object with a command`);
  const { readable = [], writable = [] } = extras;
  const { command, args = [], onStderr } = options;
  if (typeof command !== "string" || command === "") throw new TypeError("runGuest: options.command must be a non-empty string");
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
    throw new TypeError("runGuest: options.args must be an array of strings");
  }
  if (onStderr !== undefined && typeof onStderr !== "function") throw new TypeError(`${caller}: options.onStderr must be a function`);
  const settings = hostSettings(options, caller);
  const killGraceMs = graceMs(options.killGraceMs, DEFAULT_KILL_GRACE_MS, "killGraceMs", caller);
  const { session } = options;
  const own = session === undefined ? undefined : sessionPaths(session, options, caller);
  const sandbox = withPaths(own?.sandbox ?? sandboxRequest(options.sandbox, caller), readable, [
    ...writable,
    ...(own === undefined ? [] : [own.cwd]),
  ]);
  // runGuest's command runs on the far end; runCode's runner is the far end's own.
  const remote =
    options.remote === undefined
      ? undefined
      : RemoteTarget.check(options.remote, options, caller, caller === "runGuest" ? [command, ...args] : undefined);
  const admission = admissionOf(options.admission, caller);
  // A run that could never fit the memory budget is refused now, not left to wait for ever.
  if (remote === undefined && caller !== "createRunPool") admission.check(settings.limits.memoryBytes, caller);
  return {
    ...extras,
    ...(session === undefined ? {} : { session }),
    command,
    args,
    cwd: own?.cwd ?? options.cwd,
    env: options.env,
    onStderr,
    settings,
    killGraceMs,
    sandbox,
    requestedLimits: new Set(RESOURCE_LIMITS.filter((name) => options.limits?.[name] !== undefined)),
    remote,
    admission,
  };
}

/** @internal `request` with `readable` and `writable` paths added (the mode is kept: "auto" stays "auto"). */
export function withPaths(request: SandboxRequest, readable: readonly string[], writable: readonly string[]): SandboxRequest {
  if (readable.length === 0 && writable.length === 0) return request;
  return {
    ...request,
    options: {
      ...request.options,
      readable: [...(request.options.readable ?? []), ...readable],
      writable: [...(request.options.writable ?? []), ...writable],
    },
  };
}

/**
 * @internal Starts a checked launch and serves its session: runGuest's run. `preamble` is a line written to
 * the child before the session's first frame (runCode's body frame).
 */
export async function runLaunch(launch: CheckedLaunch, observer: RunObserver | undefined, preamble?: string): Promise<RunReport> {
  const startedAt = performance.now();
  const started = await startGuest(launch, startedAt);
  if (!(started instanceof StartedGuest)) return started;
  return started.serve({ settings: launch.settings, observer, startedAt, preamble });
}

/**
 * @internal Plans the sandbox and the limits, and spawns the guest (through the launcher when it has
 * something to do) with its watchdog. Resolves with the started guest, or with the report of a guest
 * that was never started (aborted first, no sandbox, a limit that cannot be had, spawn failed). Never rejects.
 */
export async function startGuest(launch: CheckedLaunch, startedAt: number): Promise<StartedGuest | RunReport> {
  const { command, args, env, settings, sandbox, scratch, discover = true } = launch;
  const resourceLimits = Object.fromEntries(RESOURCE_LIMITS.map((name) => [name, settings.limits[name]])) as ResourceLimits;
  let cwd = launch.cwd ?? process.cwd();
  const blank = (failure: HostFailure, fallback?: string): RunReport => notStartedReport(failure, performance.now() - startedAt, fallback);
  const aborted = () => blank(failures.abortedBeforeStart(settings.signal?.reason));

  if (settings.signal?.aborted) return aborted();
  if (launch.remote !== undefined) return startRemote(launch, launch.remote, startedAt);
  const tmpBytes = resourceLimits.tmpBytes === Infinity ? undefined : resourceLimits.tmpBytes;
  const workspace = launch.session?.path;
  // A "copy" session's workspace: a tmpfs inside the sandbox, filled behind the gate (workspace/copy-workspace.ts).
  const copy = launch.session === undefined ? undefined : sessionCopyRun(launch.session);
  const privateDir = copy?.privateDir ?? (launch.privateDirBytes === undefined ? undefined : { path: cwd, bytes: launch.privateDirBytes });
  let planned = await planSandbox(
    sandbox,
    { command, args, cwd, env: env ?? process.env, discover, workspace },
    { tmpBytes, privateDir, gate: copy !== undefined },
  );
  if (settings.signal?.aborted) return aborted();
  if (planned.kind === "unavailable") return blank(failures.sandboxUnavailable(planned.reason));
  if (planned.kind === "spawnFailed") return blank(failures.spawnFailed(command, planned.error));
  // A "copy" workspace under a mechanism without a mount namespace (Landlock): no tmpfs inside the sandbox, so the run
  // works in a scratch copy of its own, bounded by RLIMIT_FSIZE and the watchdog (workspace/copy-workspace.ts).
  let copyDir: string | undefined;
  if (copy !== undefined && planned.kind === "confined" && planned.gate !== true) {
    const made = await copy.scratchCopy();
    if (made === undefined) return blank(failures.workspaceNotCopied(copy.problem ?? "the scratch copy could not be made"));
    if (settings.signal?.aborted) {
      await copy.discard();
      return aborted();
    }
    copyDir = made;
    const writable = (sandbox.options.writable ?? []).map((path) => (path === workspace ? made : path));
    const request = { ...sandbox, options: { ...sandbox.options, mechanism: planned.report.mechanism, writable } };
    cwd = made;
    planned = await planSandbox(request, { command, args, cwd, env: env ?? process.env, discover, workspace: made }, { tmpBytes });
    if (planned.kind !== "confined") {
      await copy.discard();
      if (planned.kind === "spawnFailed") return blank(failures.spawnFailed(command, planned.error));
      return blank(
        failures.sandboxUnavailable(planned.kind === "unavailable" ? planned.reason : "the scratch copy's run could not be confined"),
      );
    }
    planned = { ...planned, report: { ...planned.report, gaps: [...planned.report.gaps, scratchGap(copy.bound)] } };
  }
  const plan = planned;
  const confined = plan.kind === "confined";
  const fallback = plan.kind === "unconfined" ? plan.fallback : undefined;
  // Only bubblewrap gives the guest a private /tmp to bound; under Landlock there is no mount (limits.ts says what does).
  const limits = RunLimits.prepare(resourceLimits, launch.requestedLimits, confined ? plan.report.mechanism : "none");
  if (typeof limits === "string") {
    await copy?.discard();
    return blank(failures.limitUnavailable(limits), fallback);
  }
  if (copyDir !== undefined && copy !== undefined) {
    const problem = limits.watchDirectory({
      fileBytes: copy.bound.bytes,
      check: async () => {
        const reason = await copy.overBound();
        return reason === undefined ? undefined : failures.workspaceNotKept(reason);
      },
    });
    if (problem !== undefined) {
      await Promise.all([copy.discard(), limits.cgroup?.remove()]);
      return blank(failures.sandboxUnavailable(problem));
    }
  }
  // Confined, bubblewrap (and the launcher before it) gets no environment: the guest's comes through --setenv.
  const childEnv = confined ? {} : (env ?? process.env);
  // The descriptors above 2 the child is given on purpose: the seccomp program's pipe, the gate's, bwrap's report.
  const keepFds = confined
    ? [
        ...(plan.seccomp !== undefined ? [SECCOMP_FD] : []),
        ...(plan.gate ? [GATE_GO_FD, GATE_READY_FD] : []),
        ...(plan.info ? [SANDBOX_INFO_FD] : []),
      ]
    : [];
  const start = guestLaunch(confined ? plan : { command, args }, confined, cwd, childEnv, limits, keepFds);
  if ("problem" in start || "error" in start) {
    await Promise.all([limits.cgroup?.remove(), copy?.discard()]);
    return "error" in start
      ? blank(failures.spawnFailed(command, start.error), fallback)
      : blank(failures.limitUnavailable(start.problem), fallback);
  }
  let child: ChildProcessWithoutNullStreams;
  try {
    // detached: the guest leads its own process group (and session), so stopping it reaches its descendants.
    if (confined) child = spawnConfined({ ...plan, command: start.command, args: start.args }, { cwd, detached: GROUPS_SUPPORTED });
    else {
      child = spawn(start.command, start.args, {
        cwd,
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        windowsHide: true,
        detached: GROUPS_SUPPORTED,
        env: childEnv,
      });
    }
  } catch (error) {
    await Promise.all([limits.cgroup?.remove(), copy?.discard()]);
    return blank(failures.spawnFailed(confined ? plan.command : command, error), fallback);
  }
  if (copy !== undefined && confined && plan.gate && child.pid !== undefined) {
    const stdio = child.stdio as unknown as (Readable | Writable | null)[];
    copy.attach(child.pid, stdio[GATE_READY_FD] as Readable, stdio[GATE_GO_FD] as Writable);
  }
  const group = new ProcessGroup(child, confined ? plan.report.mechanism : false, scratch, limits.cgroup?.directories);
  const info = confined && plan.info ? (child.stdio as unknown as (Readable | null)[])[SANDBOX_INFO_FD] : undefined;
  if (info !== undefined && info !== null) group.followSandboxInit(info);
  const { maxStderrBytes } = settings.limits;
  const guest = new GuestProcess(child, group, launch.killGraceMs, maxStderrBytes, launch.onStderr, undefined, launch.disposable);
  // Bubblewrap's own processes hold the guest's stdout; the Landlock helper lets go of its copy once the guest runs.
  if (confined && plan.report.mechanism === "bubblewrap") guest.watchOutput();
  const wire = new StreamWire(child.stdout, child.stdin, settings.limits.maxFrameBytes);
  const spawned = confined ? plan.command : command;
  const report = confined ? plan.report : null;
  return new StartedGuest(child, guest, wire, limits, group, report, fallback, spawned, child.stdout, scratch, launch.disposable === true);
}

/**
 * A remote runner's guest: the local command that reaches it (ssh, ...) is the child, the guest's stdout is
 * read off the runner's, and the runner's report gives the sandbox, limits and usage (src/host/remote/).
 */
function startRemote(launch: CheckedLaunch, target: RemoteTarget, startedAt: number): StartedGuest | RunReport {
  const remote = target.spawn(launch);
  if ("failure" in remote) return notStartedReport(remote.failure, performance.now() - startedAt);
  const { child, group } = remote;
  const { limits } = launch.settings;
  const guest = new GuestProcess(child, group, launch.killGraceMs, limits.maxStderrBytes, launch.onStderr, remote.farEnd);
  const wire = new StreamWire(remote.output, child.stdin, limits.maxFrameBytes);
  return new StartedGuest(child, guest, wire, remote.end, group, null, undefined, remote.name, remote.output);
}

/** @internal What a run's end adds to its report: its limits' verdict, limits and usage (and a remote runner's sandbox). */
export interface RunEndFacts {
  failure?: HostFailure;
  limits?: Record<ResourceLimitName, LimitState>;
  usage?: ResourceUsage;
  sandbox?: SandboxReport | null;
  sandboxFallback?: string;
}

/** @internal What watches a run's resources and ends them: {@link RunLimits} here, a remote runner's report (src/host/remote/). */
export interface RunEnd {
  watch(trip: (failure: HostFailure) => void, pid?: number): void;
  sample(): void;
  finish(report: RunReport): Promise<RunEndFacts>;
}

/** @internal What {@link StartedGuest.serve} needs of the run. */
export interface ServeOptions {
  /** The run's settings: capabilities, input, deadlines, callbacks, signal. */
  settings: HostSettings;
  observer: RunObserver | undefined;
  /** `performance.now()` when the run began: its deadlines, timestamps and `durationMs` count from it. */
  startedAt: number;
  /** A line written to the child before the session's first frame (runCode's body frame). */
  preamble?: string | undefined;
  /** The first line the child wrote, when it was read before the session (a warm runner's hello). */
  firstLine?: string | undefined;
  /**
   * A pooled run: a run that ends with its result is reported at the result, and the runner's teardown (its
   * exit, its group, its cgroup and directory) goes on after it, until {@link StartedGuest.teardown} settles.
   */
  reportAtResult?: boolean;
}

/** @internal A guest that is spawned and not yet served (or, in a run pool, waiting for its run). */
export class StartedGuest {
  /** Aborted when a resource limit is passed (and, once served, when the run's signal fires). */
  readonly stop = new AbortController();
  /**
   * Settles once the guest, its group, its cgroup and its directory are gone after its report (never
   * rejects): at once for a run reported at its end, later for one reported at its result ({@link ServeOptions.reportAtResult}).
   */
  teardown: Promise<void> = Promise.resolve();
  /**
   * @internal Settles once the guest's processes are gone (its group, and with it its sandbox's whole tree:
   * the sandbox's pid namespace ends with it), before its cgroup and directory are removed. A session's
   * workspace is cleaned after it (code/run-pool.ts).
   */
  processesGone: Promise<void> = Promise.resolve();
  /** @internal Whether the report was made at the result, before the processes were gone ({@link ServeOptions.reportAtResult}). */
  reportedAtResult = false;
  private scratchRemoval: Promise<boolean> | undefined;

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly process: GuestProcess,
    readonly wire: StreamWire,
    private readonly limits: RunEnd,
    /** Told to the host's watchdog until the run's cgroup is removed too (the group's end does not release it). */
    private readonly group: ProcessGroup,
    readonly sandbox: SandboxReport | null,
    readonly sandboxFallback: string | undefined,
    /** The program named in a SpawnFailed message (bubblewrap, when confined). */
    readonly spawned: string,
    /** What the wire reads: the child's stdout, or a remote runner's guest output read off it. */
    private readonly output: Readable = child.stdout,
    /** The directory the host made for this run (runCode's), removed at the end before the watchdog lets go of it. */
    private readonly scratch?: string,
    /** See {@link LaunchExtras.disposable}. */
    private readonly disposable = false,
  ) {
    // The session ends early when a limit is passed; the run's own signal still ends it as before.
    limits.watch((failure) => this.stop.abort(failure), child.pid);
  }

  /**
   * Hosts the session, then ends the child, its group and its cgroup; the report says how it went. Never rejects.
   * With `reportAtResult`, a run that ends with its result is reported while they end ({@link teardown}).
   */
  async serve({ settings, observer, startedAt, preamble, firstLine, reportAtResult = false }: ServeOptions): Promise<RunReport> {
    const { stop, wire } = this;
    const passOnAbort = () => stop.abort(settings.signal?.reason);
    settings.signal?.addEventListener("abort", passOnAbort, { once: true });
    const sessionSettings = { ...settings, signal: stop.signal };
    const report = await this.finish(
      async (guest) => {
        const spawnError = await guest.started;
        if (spawnError !== undefined) return { failure: failures.spawnFailed(this.spawned, spawnError) };
        // A write that fails is the session's to report: its invoke, sent right after, fails the same way.
        if (preamble !== undefined) wire.send(preamble).catch(() => {});
        const session = await hostSession(wire, sessionSettings, {
          startedAt,
          // Reported at the result: the session ends in the next turn of the loop, once the output already read with
          // the result frame (stderr written before it) is in. Else the exit watch bounds the wait for the output's end.
          closeGraceMs: reportAtResult ? 0 : Infinity,
          observer,
          firstLine,
          // A first look while the guest surely lives: a runner that exits right after its result (and, sandboxed,
          // takes its pid namespace with it) may be gone before the host reads that result, and a short run may end
          // before the 100 ms watch looks once; the counts are never missing then.
          helloReceived: () => this.limits.sample(),
          resultReceived: () => {
            // Where usage is sampled from /proc: the last look, while the guest is still there.
            this.limits.sample();
            guest.stop("result");
            // Nothing the guest does now changes the outcome: a disposable one is being killed, so its
            // directory goes meanwhile (tried again once it is gone, should this attempt race its last writes).
            if (this.disposable) void this.removeScratch();
          },
          release: (failure, paused) => {
            void wire.close().catch(() => {});
            if (failure !== undefined || paused === true) {
              // Output that ended by itself: the child is exiting (perhaps crashing), and its exit tells the story.
              const ended = this.output.readableEnded;
              // Nothing more is read; a child still writing gets EPIPE (a remote runner's report is still read).
              this.output.destroy();
              guest.stop(failure === undefined ? "paused" : ended ? "ended" : "failure");
            }
          },
        });
        return { session };
      },
      startedAt,
      reportAtResult,
    );
    settings.signal?.removeEventListener("abort", passOnAbort);
    return report;
  }

  /**
   * Ends a guest that will not be served (a run pool's runner that did not start right, died while it
   * waited, or was closed): stops it, and reports `failure` (refined by its exit when its output ended).
   */
  discard(failure: HostFailure, endOfStream: boolean, startedAt: number): Promise<RunReport> {
    return this.finish(async () => ({ failure, endOfStream }), startedAt);
  }

  /**
   * Removes the run's directory, if it has one (best effort: a failure must not turn the report into a
   * rejection). `again`: once more when an earlier attempt failed (it raced the guest's last writes).
   */
  private async removeScratch(again = false): Promise<void> {
    const { scratch } = this;
    if (scratch === undefined) return;
    if (this.scratchRemoval === undefined || (again && !(await this.scratchRemoval))) {
      this.scratchRemoval = rm(scratch, { recursive: true, force: true }).then(
        () => true,
        () => false,
      );
    }
    await this.scratchRemoval;
  }

  /**
   * @internal Runs `body` with the guest (serve's session, discard's verdict, or a remote runner relaying
   * its stdio: remote/runner.ts), then ends it, its group and its limits, and reports.
   */
  async finish(body: Parameters<GuestProcess["run"]>[0], startedAt: number, atResult = false): Promise<RunReport> {
    const early = atResult && this.limits instanceof RunLimits;
    const ran = await this.process.run(body, () => performance.now() - startedAt, this.sandbox, this.sandboxFallback, early);
    const { report, gone } = ran;
    if (ran.atResult && this.limits instanceof RunLimits) {
      // Reported at the result: the verdict and usage are read now; the cgroup and the directory go once the
      // processes are gone, and the watchdog keeps covering the run until then.
      const { facts, removed } = this.limits.finishAfter(report, gone);
      this.processesGone = gone.catch(() => {});
      this.reportedAtResult = true;
      this.teardown = Promise.all([removed, gone.then(() => this.removeScratch(true))])
        .then(() => this.group.release())
        .catch(() => {}); // not reached by design (each step is guarded); a bug must not become an unhandled rejection
      return runReport({ ...report, ...facts, failure: facts.failure ?? report.failure });
    }
    // The child and its group are gone: the cgroup and the directory are removed side by side.
    const [end] = await Promise.all([this.limits.finish(report), this.removeScratch(true)]);
    // Only now: a host killed while the cgroup or the directory was being removed still has the watchdog remove them.
    this.group.release();
    const refused = this.sandbox?.mechanism === "landlock" ? confineFailure(report) : undefined;
    const failure = refused !== undefined ? failures.sandboxUnavailable(refused) : (end.failure ?? report.failure);
    return runReport({ ...report, ...end, failure });
  }
}

/**
 * The command that starts the guest (or bubblewrap): through the launcher when the run has a cgroup to
 * join, descriptors to close or an rlimit to set (see limits/launcher.ts), else directly. Unconfined, the
 * command is resolved on PATH first, so a missing program is still `SpawnFailed` and not the shell's
 * "not found".
 */
function guestLaunch(
  target: { command: string; args: readonly string[] },
  confined: boolean,
  cwd: string,
  childEnv: NodeJS.ProcessEnv,
  limits: RunLimits,
  keepFds: readonly number[],
): { command: string; args: string[] } | { problem: string } | { error: Error } {
  const steps = {
    command: target.command,
    args: target.args,
    closeFds: leakedDescriptors(),
    keepFds,
    cgroupJoins: limits.cgroup?.joins ?? [],
    rlimits: limits.rlimits,
    // bubblewrap sets the guest's environment itself (--clearenv, --setenv).
    env: confined ? null : childEnv,
    shells: machineShells(),
  };
  const direct = launcherCommand(steps);
  if ("problem" in direct || !direct.wrapped || confined) return direct;
  try {
    return launcherCommand({ ...steps, command: findExecutable(target.command, cwd, childEnv.PATH, nodeFileSystem) });
  } catch (error) {
    // A path to a file that is there but not executable: the EACCES a direct spawn would have given.
    if (target.command.includes("/") && existsSync(resolve(cwd, target.command))) {
      return { error: Object.assign(new Error(`spawn ${target.command} EACCES`), { code: "EACCES" }) };
    }
    return { error: error as Error };
  }
}
