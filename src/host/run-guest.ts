/**
 * Runs a guest as a child process over its stdio, with the host engine on a StreamWire over the
 * child's stdout and stdin. The child is always gone (its exit observed) when the promise settles.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { StreamWire } from "../wires/stdio.js";
import { BoundedChild } from "./bounded-child.js";
import * as failures from "./failures.js";
import { hostSession, type SessionResult } from "./session.js";
import { graceMs, hostSettings, RESOURCE_LIMITS, type HostSettings } from "./settings.js";
import type { RunObserver } from "./observer.js";
import { traced } from "./tracing.js";
import { GROUPS_SUPPORTED } from "./process-group.js";
import { planSandbox, SECCOMP_FD, sandboxRequest, spawnConfined, type SandboxReport } from "./sandbox/index.js";
import { notStartedReport, runReport } from "./report.js";
import { RunLimits, type ResourceLimits } from "./limits/limits.js";
import { launcherCommand, leakedDescriptors, machineShells } from "./limits/launcher.js";
import { findExecutable } from "./sandbox/policy.js";
import { nodeFileSystem } from "./sandbox/file-system-view.js";
import type { GuestCommand, HostFailure, RunReport } from "./types.js";
import { UserCallbacks } from "./user-callbacks.js";
import { guestHoldsOutput, OUTPUT_WATCH_MS } from "./sandbox/output-watch.js";

/** Default `killGraceMs`: the MCP client's 2 s between closing stdin, SIGTERM and SIGKILL. */
export const DEFAULT_KILL_GRACE_MS = 2000;

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
  return launchGuest(options, "runGuest", {});
}

/** @internal What runCode adds to a launch. */
export interface LaunchExtras {
  /** Paths added to the sandbox's `readable` (the mode is kept: "auto" stays "auto"). */
  readable?: readonly string[];
  /** Paths added to the sandbox's `writable`. */
  writable?: readonly string[];
  /** A directory the host made for this run, removed by the watchdog if the host dies first. */
  scratch?: string;
  /** Whether the sandbox looks for the script's directory and Node's lookups (default true). */
  discover?: boolean;
  /** Set when the caller traces the run (runCode) and passes its observer; otherwise the run is traced here. */
  observed?: { observer: RunObserver | undefined };
}

/**
 * @internal runGuest, with `readable` paths added to whatever sandbox the options choose (the mode is
 * kept: "auto" stays "auto"), and a `scratch` directory the watchdog removes if the host dies before it
 * can. `runCode` uses both for the guest's compiled body. `caller` names the public function in option errors.
 */
export function launchGuest(options: GuestCommand, caller: "runGuest" | "runCode", extras: LaunchExtras): Promise<RunReport> {
  if (typeof options !== "object" || options === null) throw new TypeError(`${caller}: options must be an object with a command`);
  const { readable = [], writable = [] } = extras;
  const { command, args = [], onStderr } = options;
  if (typeof command !== "string" || command === "") throw new TypeError("runGuest: options.command must be a non-empty string");
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
    throw new TypeError("runGuest: options.args must be an array of strings");
  }
  if (onStderr !== undefined && typeof onStderr !== "function") throw new TypeError(`${caller}: options.onStderr must be a function`);
  const settings = hostSettings(options, caller);
  const killGrace = graceMs(options.killGraceMs, DEFAULT_KILL_GRACE_MS, "killGraceMs", caller);
  const requested = sandboxRequest(options.sandbox, caller);
  const sandbox =
    readable.length === 0 && writable.length === 0
      ? requested
      : {
          ...requested,
          options: {
            ...requested.options,
            readable: [...(requested.options.readable ?? []), ...readable],
            writable: [...(requested.options.writable ?? []), ...writable],
          },
        };
  if (extras.observed !== undefined) return launchValid(options, settings, killGrace, sandbox, extras, extras.observed.observer);
  return traced(settings.trace, { api: caller, input: settings.input }, (observer) =>
    launchValid(options, settings, killGrace, sandbox, extras, observer),
  );
}

/** launchGuest once its options are checked. */
function launchValid(
  options: GuestCommand,
  settings: HostSettings,
  killGrace: number,
  sandbox: ReturnType<typeof sandboxRequest>,
  { scratch, discover = true }: LaunchExtras,
  observer: RunObserver | undefined,
): Promise<RunReport> {
  const { command, args = [], env, onStderr } = options;
  const requestedLimits = new Set(RESOURCE_LIMITS.filter((name) => options.limits?.[name] !== undefined));
  const resourceLimits = Object.fromEntries(RESOURCE_LIMITS.map((name) => [name, settings.limits[name]])) as ResourceLimits;
  const cwd = options.cwd ?? process.cwd();
  const startedAt = performance.now();
  const elapsed = () => performance.now() - startedAt;
  const blank = (failure: HostFailure, fallback?: string): RunReport => notStartedReport(failure, elapsed(), fallback);
  const aborted = () => blank(failures.abortedBeforeStart(settings.signal?.reason));

  if (settings.signal?.aborted) return Promise.resolve(aborted());
  const tmpBytes = resourceLimits.tmpBytes === Infinity ? undefined : resourceLimits.tmpBytes;
  return planSandbox(sandbox, { command, args, cwd, env: env ?? process.env, discover }, { tmpBytes }).then(async (plan) => {
    if (settings.signal?.aborted) return aborted();
    if (plan.kind === "unavailable") return blank(failures.sandboxUnavailable(plan.reason));
    if (plan.kind === "spawnFailed") return blank(failures.spawnFailed(command, plan.error));
    const confined = plan.kind === "confined";
    const fallback = plan.kind === "unconfined" ? plan.fallback : undefined;
    const limits = RunLimits.prepare(resourceLimits, requestedLimits, confined);
    if (typeof limits === "string") return blank(failures.limitUnavailable(limits), fallback);
    // Confined, bubblewrap (and the launcher before it) gets no environment: the guest's comes through --setenv.
    const childEnv = confined ? {} : (env ?? process.env);
    // The seccomp program's pipe is the one descriptor above 2 the child is given on purpose.
    const keepFds = confined && plan.seccomp !== undefined ? [SECCOMP_FD] : [];
    const launch = guestLaunch(confined ? plan : { command, args }, confined, cwd, childEnv, limits, keepFds);
    if ("problem" in launch || "error" in launch) {
      await limits.cgroup?.remove();
      return "error" in launch
        ? blank(failures.spawnFailed(command, launch.error), fallback)
        : blank(failures.limitUnavailable(launch.problem), fallback);
    }
    // The session ends early when a limit is passed; the user's signal still ends it as before.
    const stop = new AbortController();
    const passOnAbort = () => stop.abort(settings.signal?.reason);
    settings.signal?.addEventListener("abort", passOnAbort, { once: true });
    const sessionSettings = { ...settings, signal: stop.signal };
    let child: ChildProcessWithoutNullStreams;
    try {
      // detached: the guest leads its own process group (and session), so stopping it reaches its descendants.
      const spawnOptions = {
        cwd,
        stdio: ["pipe", "pipe", "pipe"] as ["pipe", "pipe", "pipe"],
        shell: false,
        windowsHide: true,
        detached: GROUPS_SUPPORTED,
      };
      if (confined) child = spawnConfined({ ...plan, command: launch.command, args: launch.args }, { cwd, detached: GROUPS_SUPPORTED });
      else child = spawn(launch.command, launch.args, { ...spawnOptions, env: childEnv });
    } catch (error) {
      settings.signal?.removeEventListener("abort", passOnAbort);
      await limits.cgroup?.remove();
      return blank(failures.spawnFailed(confined ? plan.command : command, error), fallback);
    }
    limits.watch((failure) => stop.abort(failure));
    const group = { sandboxed: confined, scratch, cgroups: limits.cgroup?.directories };
    const guestProcess = new GuestProcess(child, group, killGrace, settings.limits.maxStderrBytes, onStderr);
    if (confined) guestProcess.watchOutput();
    const report = await guestProcess.run(
      async (guest) => {
        const spawnError = await guest.started;
        if (spawnError !== undefined) return { failure: failures.spawnFailed(confined ? plan.command : command, spawnError) };
        const wire = new StreamWire(child.stdout, child.stdin, settings.limits.maxFrameBytes);
        const session = await hostSession(wire, sessionSettings, {
          startedAt,
          closeGraceMs: Infinity, // the exit watch below bounds the wait for the child's output to end
          observer,
          resultReceived: () => guest.stop("result"),
          release: (failure) => {
            void wire.close().catch(() => {});
            if (failure !== undefined) {
              child.stdout.destroy(); // nothing more is read; a child still writing gets EPIPE
              guest.stop("failure");
            }
          },
        });
        return { session };
      },
      elapsed,
      confined ? plan.report : null,
      fallback,
    );
    settings.signal?.removeEventListener("abort", passOnAbort);
    const end = await limits.finish(report);
    return runReport({ ...report, failure: end.failure ?? report.failure, limits: end.limits, usage: end.usage });
  });
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
    cgroupProcs: limits.cgroup?.procsFiles ?? [],
    rlimits: limits.plan.cpuRlimitSeconds === undefined ? {} : { cpuSeconds: limits.plan.cpuRlimitSeconds },
    env: childEnv,
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

/** The child (on the bounded-child helper: its exit, its stderr tail and live callback, the shutdown sequence) and its report. */
class GuestProcess {
  /** Resolves with the spawn error, or undefined once the child is running. */
  readonly started: Promise<Error | undefined>;
  private readonly bounded: BoundedChild;
  private readonly intervals = new Set<ReturnType<typeof setInterval>>();
  private readonly callbacks = new UserCallbacks();

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    group: { sandboxed: boolean; scratch: string | undefined; cgroups: readonly string[] | undefined },
    killGraceMs: number,
    maxStderrBytes: number,
    onStderr: ((chunk: string) => void) | undefined,
  ) {
    // stderr is always read (its tail kept), so a chatty child never blocks on a full pipe.
    const onText = onStderr === undefined ? undefined : (text: string) => this.callbacks.run("onStderr", () => onStderr(text));
    this.bounded = new BoundedChild(child, {
      killGraceMs,
      output: { streams: ["stderr"], maxBytes: maxStderrBytes, keep: "last", ...(onText && { onText }) },
      group,
    });
    this.started = this.bounded.started;
  }

  /**
   * Runs the session, then makes sure the child is gone and its stderr read, and builds the report.
   * `body` resolves with the session, or with a failure when there was none (spawn failed).
   */
  async run(
    body: (guest: GuestProcess) => Promise<{ session?: SessionResult; failure?: HostFailure }>,
    elapsed: () => number,
    sandbox: SandboxReport | null,
    sandboxFallback: string | undefined,
  ): Promise<RunReport> {
    let outcome: { session?: SessionResult; failure?: HostFailure };
    try {
      outcome = await body(this);
    } catch (error) {
      outcome = { failure: failures.hostFailed(error) };
    }
    this.stop("end");
    const end = await this.bounded.end();
    for (const interval of this.intervals) clearInterval(interval);
    const session = outcome.session?.report;
    let failure = session === undefined ? outcome.failure : session.failure;
    if (outcome.session?.endOfStream && failure !== undefined) failure = this.refine(failure, end.output, session?.hello !== undefined);
    return runReport({
      ...session,
      failure,
      durationMs: elapsed(),
      exit: end.exit,
      pid: this.child.pid,
      stderr: end.output,
      droppedStderrBytes: end.droppedBytes,
      forcedStop: end.forced,
      sandbox,
      sandboxFallback,
    });
  }

  /**
   * Confined: ends the output when no process of the guest's holds it any more (see output-watch.ts),
   * so a guest that closed stdout and lives on ends as it would unconfined. Twice in a row, with nothing
   * left unread in the stream, so no frame the guest wrote before closing is lost.
   */
  watchOutput(): void {
    const { stdout } = this.child;
    let closedOnce = false;
    const timer = setInterval(() => {
      if (this.bounded.exit !== undefined || stdout.destroyed) return clearInterval(timer);
      const drained = stdout.readableLength === 0 && !stdout.isPaused() && stdout.listenerCount("data") > 0;
      const closed = drained && this.child.pid !== undefined && guestHoldsOutput(this.child.pid) === false;
      if (closed && closedOnce) {
        clearInterval(timer);
        stdout.destroy();
      }
      closedOnce = closed;
    }, OUTPUT_WATCH_MS);
    timer.unref();
    this.intervals.add(timer);
  }

  /**
   * Starts the shutdown sequence once (see BoundedChild.stop); a later call joins it. After a result the
   * child may still be reading, so its stdin is ended (queued replies flush); otherwise it is destroyed.
   */
  stop(why: "result" | "failure" | "end"): void {
    this.bounded.stop(why, why === "result" ? "end" : "destroy");
  }

  /** The output ended early: when the child then exited on its own, its exit tells the real story. */
  private refine(failure: HostFailure, stderr: string, saidHello: boolean): HostFailure {
    const { exit, forced } = this.bounded;
    if (exit === undefined || forced !== undefined) return failure;
    return failures.endedEarly(failure, exit, stderr, saidHello);
  }
}
