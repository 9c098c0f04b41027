/**
 * Run pools: code runners started ahead, each already inside its sandbox, with its limits, having said
 * hello and waiting for its body, so a pooled runCode costs about a round trip instead of a process start.
 * Each runner serves one body and exits; the pool starts a replacement in the background. See
 * docs/code.md, "Warm runs".
 */
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { WARM_FRAME } from "../../protocol/code-body.js";
import { decodeLine, PROTOCOL } from "../../protocol/frames.js";
import { describeError } from "../../protocol/errors.js";
import { MAX_TIMER_MS } from "../../protocol/timers.js";
import * as failures from "../report/failures.js";
import type { RunObserver } from "../observe/observer.js";
import { notStartedReport, runReport } from "../report/report.js";
import { admittedMemory, StartedGuest, startGuest, type CheckedLaunch } from "../run-guest.js";
import type { RunAdmission } from "../engine/admission.js";
import { sandboxRequest, type SandboxRequest } from "../sandbox/index.js";
import type { SandboxSetting } from "../sandbox/types.js";
import { DEFAULT_HOST_LIMITS, RESOURCE_LIMITS } from "../settings.js";
import type { GuestCommand, HostFailure, HostLimits, RemoteRunner, RemoteWorkerState, RunReport } from "../api/types.js";
import { codeLaunch, withWorkDir } from "./code-launch.js";
import { bindSession, poolSessionProblem } from "./pool-session.js";
import { sealSession, sessionSettled } from "../workspace/index.js";

/** The limits a pool's runners are started with: a pooled run may leave them out or repeat them, not change them. */
export const POOL_LIMITS = [...RESOURCE_LIMITS, "maxFrameBytes", "maxStderrBytes"] as const satisfies readonly (keyof HostLimits)[];
/** The limits {@link createRunPool} takes: the pool's own, and helloTimeoutMs, each runner's start-up deadline. */
const POOL_OPTION_LIMITS: ReadonlySet<string> = new Set([...POOL_LIMITS, "helloTimeoutMs"]);
/** The pool's part of a run's limits (those {@link POOL_LIMITS} names), for starting a pool whose runs get `limits`. */
export function poolLimitsOf(limits: HostLimits | undefined): HostLimits {
  return Object.fromEntries(POOL_LIMITS.filter((name) => limits?.[name] !== undefined).map((name) => [name, limits![name]]));
}
/** The default number of runners kept ready. */
export const DEFAULT_POOL_SIZE = 2;
/** The most runners a pool may keep (each is a Node process, about 40 MB). */
export const MAX_POOL_SIZE = 64;
/** Back-off after a runner failed to start: this, doubled for each failure in a row, up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;
/** Failed starts in a row before runs are given the failure instead of waiting for the next try (one may be bad luck). */
const FAILURES_REPORTED = 2;

/** Options for {@link createRunPool}: what every runner of the pool is started with. */
export interface RunPoolOptions {
  /** How many runners to keep started ahead, default 2 (1 to 64). Runs beyond them wait for the next one ready. */
  size?: number;
  /** The runners' sandbox, as runCode's `sandbox` (default "auto"). */
  sandbox?: SandboxSetting;
  /**
   * The runners' limits: `memoryBytes`, `processes`, `cpuTimeMs`, `tmpBytes`, `maxFrameBytes` and
   * `maxStderrBytes` (as runCode's), and `helloTimeoutMs`, how long a runner may take to start (default
   * 10 s). Per-run limits (`runTimeoutMs`, `callTimeoutMs`, ...) belong to each runCode; giving one here is a TypeError.
   */
  limits?: HostLimits;
  /** The runners' working directory, as runCode's `cwd`; default a private, empty, writable directory per runner. */
  cwd?: string;
  /** The runners' environment (unconfined), or where `sandbox.env` names are looked up, as runCode's `env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Added: the runners run on other machines, started through these commands (e.g. `ssh -T worker ears
   * runner`; see docs/remote.md), each under its machine's sandbox and limits; a list spreads them over
   * several, the least loaded first, and a worker whose command fails is taken out and retried with
   * back-off (`pool.workers` says so). `cwd`, `env` and sandbox paths are then refused (TypeError).
   */
  remote?: RemoteRunner | readonly RemoteRunner[];
  /**
   * Added: the run admission the pool's runners take their slots from (`createRunAdmission`), default the
   * process-wide one. Each runner, idle or serving, holds a slot (and its `memoryBytes`) from before it is
   * spawned until it is gone; a pool of more runners than `maxConcurrentRuns`, or whose `size` runners'
   * `memoryBytes` are over the memory budget, is a RangeError. A pooled run has the pool's admission.
   */
  admission?: RunAdmission;
}

/** A pool of warm code runners, made by {@link createRunPool}; pass it to runCode as `pool`. */
export interface RunPool {
  /** How many runners the pool keeps started ahead. */
  readonly size: number;
  /** True once {@link RunPool.close} was called: runCode with this pool then throws. */
  readonly closed: boolean;
  /** How many runners are started and waiting for a body right now (0 to `size`). */
  readonly ready: number;
  /** Added: with `remote`, each worker's load and health (taken out after a failed start, and when it is tried again); else empty. */
  readonly workers: readonly RemoteWorkerState[];
  /**
   * Added (issue 33): resolves once every run reported so far is torn down. A pooled run that ends with its
   * result is reported at the result; its runner (the runner's Node, bubblewrap and whatever the body
   * started), its cgroup and its working directory are gone only when this resolves. Never rejects. Until
   * then the runner still holds its admission slot, and the host's watchdog covers it should the host die.
   */
  settled(): Promise<void>;
  /**
   * Stops the pool: no runner is started any more, runs waiting for a runner end with `Aborted`, the idle
   * runners are stopped, and runs already under way finish as they would. Resolves once every process the
   * pool started is gone (their working directories and cgroups removed). Calling it again returns the same promise.
   */
  close(): Promise<void>;
}

/**
 * Makes a pool of warm code runners for runCode: `size` runners are started at once, each the code runner
 * already inside its sandbox with the pool's sandbox, limits, working directory and environment, exactly
 * as a cold runCode with those options would start it, and waiting for its body. `runCode({ code, pool })`
 * takes one; the runner serves that one body and exits, and the pool starts a replacement in the background,
 * so nothing of one run (globals, `/tmp`, processes, environment, working directory) reaches the next.
 * Waiting runners never keep the host's event loop alive, and are killed when the host exits (or, killed
 * itself, by their watchdogs). Invalid options throw (TypeError, RangeError); call {@link RunPool.close} when done.
 *
 * @example
 * const pool = createRunPool({ size: 2, limits: { memoryBytes: 256 * 1024 * 1024 } });
 * const report = await runCode({ code: "return 1 + 1;", pool });
 * await pool.close();
 */
export function createRunPool(options: RunPoolOptions = {}): RunPool {
  if (typeof options !== "object" || options === null) throw new TypeError("createRunPool: options must be an object");
  const { size = DEFAULT_POOL_SIZE, sandbox, limits, cwd, env, remote, admission, ...rest } = options;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new TypeError(
      `createRunPool: unknown option ${JSON.stringify(unknown[0])}; ` +
        "a pool takes size, sandbox, limits, cwd, env, remote and admission (the rest is each runCode's)",
    );
  }
  if (!(Number.isSafeInteger(size) && size >= 1 && size <= MAX_POOL_SIZE)) {
    throw new RangeError(`createRunPool: size must be an integer from 1 to ${MAX_POOL_SIZE}, got ${String(size)}`);
  }
  if (limits !== undefined && typeof limits === "object" && limits !== null) {
    for (const key of Object.keys(limits)) {
      if (limits[key as keyof HostLimits] !== undefined && !POOL_OPTION_LIMITS.has(key) && key in DEFAULT_HOST_LIMITS) {
        throw new TypeError(`createRunPool: limits.${key} is each run's, not the pool's; give it to runCode`);
      }
    }
  }
  // The same checks and launch as a cold runCode's: one way to start the runner.
  const launch = codeLaunch({ sandbox, limits, cwd, env: env === undefined ? undefined : { ...env }, remote, admission }, "createRunPool");
  // Its runners all fit at once, or the pool could never be full (nor, at the cap, leave a slot to anyone).
  launch.admission.check(admittedMemory(launch), "createRunPool", size);
  return new WarmPool(size, launch, sandboxRequest(sandbox, "createRunPool"));
}

/**
 * @internal runCode's options checked against the pool's: the run's launch, its per-run settings with the
 * pool's sandbox, limits, working directory and environment. Throws TypeError when one of those differs.
 */
export function poolRun(pool: RunPool, options: Omit<GuestCommand, "command" | "args">): CheckedLaunch {
  if (!(pool instanceof WarmPool)) throw new TypeError("runCode: options.pool must be a pool made by createRunPool");
  if (pool.closed) {
    throw new TypeError("runCode: options.pool is closed (pool.close() was called); make a new pool, or leave pool out to run cold");
  }
  const own = pool.launch;
  const launch = codeLaunch(options, "runCode");
  const differs = (what: string) =>
    new TypeError(
      `runCode: options.${what} differs from the pool's; a pooled run has the pool's sandbox, limits, working directory and ` +
        "environment (leave it out, give the pool's, or run without pool)",
    );
  if (options.sandbox !== undefined && !isDeepStrictEqual(sandboxRequest(options.sandbox, "runCode"), pool.sandbox)) {
    throw differs("sandbox");
  }
  if (options.cwd !== undefined && (own.cwd === undefined || resolve(options.cwd) !== resolve(own.cwd))) throw differs("cwd");
  if (options.env !== undefined && !isDeepStrictEqual({ ...options.env }, own.env)) throw differs("env");
  if (launch.remote !== undefined && !launch.remote.sameAs(own.remote)) throw differs("remote");
  if (options.admission !== undefined && options.admission !== own.admission) throw differs("admission");
  const problem = launch.session === undefined ? undefined : poolSessionProblem(own, pool.sandbox);
  if (problem !== undefined) throw new TypeError(`runCode: ${problem}`);
  const limits = { ...launch.settings.limits };
  for (const name of POOL_LIMITS) {
    if (options.limits?.[name] !== undefined && launch.settings.limits[name] !== own.settings.limits[name]) throw differs(`limits.${name}`);
    limits[name] = own.settings.limits[name];
  }
  return {
    ...own,
    ...(launch.session === undefined ? {} : { session: launch.session }),
    settings: { ...launch.settings, limits },
    killGraceMs: launch.killGraceMs,
    onStderr: launch.onStderr,
    admission: own.admission,
  };
}

/** A runner of the pool: started, then idle with its hello read, then taken by one run (or discarded). */
interface Runner {
  guest: StartedGuest;
  /** The hello line the runner wrote, read while it started. */
  hello: string;
  /** Removes the runner's private working directory (resolves once it is gone). */
  remove: () => Promise<void>;
  /** The runner's private working directory, and whether a session's workspace can be bound onto it (pool-session.ts). */
  work: string | undefined;
  shared: boolean;
  /** Hands the runner to its end: the run that took it, or its discard; settles when that is over. */
  release: (end: Promise<unknown>) => void;
}

/** A run waiting for a runner. */
interface Waiter {
  settle(taken: Runner | RunReport): void;
}

/** Every pool not closed yet: their runners are killed when the host exits. */
const openPools = new Set<WarmPool>();
let exitHook = false;

/** @internal Runs one body on a runner of `pool` (runCode with `pool`, its options checked by {@link poolRun}). */
export function runPooled(pool: RunPool, launch: CheckedLaunch, observer: RunObserver | undefined, body: string): Promise<RunReport> {
  return (pool as WarmPool).run(launch, observer, body);
}

/** The pool itself. */
class WarmPool implements RunPool {
  closed = false;
  private readonly idle: Runner[] = [];
  private readonly waiters: Waiter[] = [];
  /** Every runner's process not gone yet, whatever its state, with its directory's removal; for the exit hook. */
  private readonly live = new Set<{ guest: StartedGuest; remove: () => Promise<void> }>();
  private readonly ends = new Set<Promise<unknown>>();
  /** The teardowns of runs reported at their result and not torn down yet (see {@link RunPool.settled}). */
  private readonly teardowns = new Set<Promise<void>>();
  /** The runners spawned that have not said hello yet. */
  private readonly warming = new Set<StartedGuest>();
  /** Aborted by close(): a runner whose sandbox is still being planned is then never spawned. */
  private readonly closeSignal = new AbortController();
  /** Runners counted as starting: waiting for an admission slot, spawning, or not yet past their hello. */
  private starting = 0;
  /** Of those, the ones waiting for a slot of the admission (the pool is held up by other runs then). */
  private admitting = 0;
  private failuresInARow = 0;
  /** The report of the last start that failed (twice in a row), until a start succeeds; a run without a runner gets it. */
  private startFailure: RunReport | undefined;
  private backoff: ReturnType<typeof setTimeout> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    readonly size: number,
    readonly launch: CheckedLaunch,
    /** The sandbox the pool was asked for (before runCode's paths were added). */
    readonly sandbox: SandboxRequest,
  ) {
    openPools.add(this);
    if (!exitHook) {
      exitHook = true;
      // Synchronous, as 'exit' requires: SIGKILL each runner's group; the watchdogs remove what is left on disk.
      process.once("exit", () => {
        for (const pool of openPools) pool.killAll();
      });
    }
    this.fill();
  }

  get ready(): number {
    return this.idle.length;
  }

  get workers(): RemoteWorkerState[] {
    return this.launch.remote?.states() ?? [];
  }

  /** @internal Runs one body on a runner of the pool (runCode with `pool`): the report has `pooled: true`. */
  async run(launch: CheckedLaunch, observer: RunObserver | undefined, body: string): Promise<RunReport> {
    const askedAt = performance.now();
    const taken = await this.take(launch, askedAt);
    if (!("guest" in taken)) return runReport({ ...taken, pooled: true });
    if (launch.session !== undefined) {
      const unbound = await bindSession(launch.session, { ...taken, confined: taken.guest.sandbox !== null });
      if (unbound !== undefined) {
        if (unbound.unused) this.offer(taken);
        else {
          this.discard(taken, unbound.failure);
          setImmediate(() => this.fill());
        }
        return runReport({ ...notStartedReport(unbound.failure, performance.now() - askedAt), pooled: true });
      }
    }
    const { guest, hello } = taken;
    guest.process.adopt(launch.killGraceMs, launch.onStderr);
    guest.process.holdHost(true);
    const startedAt = performance.now();
    const served = guest.serve({ settings: launch.settings, observer, startedAt, preamble: body, firstLine: hello, reportAtResult: true });
    // The runner (and its admission slot) is the run's until its teardown is over, not only until its report.
    const tornDown = served.then(() => guest.teardown);
    this.teardowns.add(tornDown);
    void tornDown.finally(() => this.teardowns.delete(tornDown));
    taken.release(tornDown);
    const report = await served;
    // A session's workspace is cleaned and written back after the run (workspace/index.ts), which must not
    // begin while anything the body started may still write to it. Reported at the result, the runner's
    // processes are still being killed: the workspace is sealed (made read-only) at once, so the clean-up need
    // not wait for their end, only the session's next run does; where it cannot be sealed, the run ends when
    // they are gone (its sandbox's whole tree with them). Its cgroup and directory go after.
    if (launch.session !== undefined && guest.reportedAtResult && !(await sealSession(launch.session, guest.processesGone)))
      await guest.processesGone;
    // Its replacement starts once the caller has the report: a start blocks the event loop for milliseconds
    // (planning the sandbox, the spawn: Node forks the host), which belongs neither in the run (measured:
    // starting one at the result made the run's own end slower) nor between its end and its report.
    // A session's run: once its workspace is cleaned (the session's queue moves on), so the start's spawn and file
    // system work do not compete with the clean-up the caller waits for.
    if (launch.session === undefined) setImmediate(() => this.fill());
    else void sessionSettled(launch.session).then(() => setImmediate(() => this.fill()));
    return runReport({ ...report, pooled: true });
  }

  async settled(): Promise<void> {
    while (this.teardowns.size > 0) await Promise.allSettled([...this.teardowns]);
  }

  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    openPools.delete(this);
    this.closeSignal.abort(new Error("the run pool was closed"));
    clearTimeout(this.backoff);
    for (const waiter of this.waiters.splice(0)) waiter.settle(notStartedReport(failures.poolClosed(), 0));
    for (const runner of this.idle.splice(0)) this.discard(runner, failures.poolClosed());
    // A host awaiting close() stays up until the runners still starting are gone too; those are stopped now
    // rather than waited for (up to their start-up deadline).
    for (const { guest } of this.live) guest.process.holdHost(true);
    for (const guest of this.warming) guest.process.stop("failure");
    // Runners still starting are discarded as they finish; runs under way end as they would.
    while (this.ends.size > 0) await Promise.allSettled([...this.ends]);
  }

  /** A ready runner for a run, or the report of a run that gets none (aborted, waited too long, start failed, closed). */
  private take(launch: CheckedLaunch, askedAt: number): Promise<Runner | RunReport> {
    const { signal, limits } = launch.settings;
    const notRun = (failure: HostFailure) => notStartedReport(failure, performance.now() - askedAt);
    if (signal?.aborted) return Promise.resolve(notRun(failures.abortedBeforeStart(signal.reason)));
    // Asked before close() and reaching here after it (runCode compiles first): as a run that waited.
    if (this.closed) return Promise.resolve(notRun(failures.poolClosed()));
    // The replacement of a runner taken starts once its run is over (see run()): spawning blocks the host's
    // event loop for milliseconds, which would land in the middle of the run.
    const ready = this.idle.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.startFailure !== undefined) return Promise.resolve(this.startFailure);
    // A run waiting for a runner is one of the admission's queued runs (its bound, its failure when full).
    const { admission } = this.launch;
    const unqueue = admission.enqueueElsewhere();
    if (unqueue === undefined) return Promise.resolve(notRun(failures.runQueueFull(admission.maxQueuedRuns, admission.maxConcurrentRuns)));
    this.fill();
    return new Promise((settle) => {
      const onAbort = () => waiter.settle(notRun(failures.abortedBeforeStart(signal?.reason)));
      const waiter: Waiter = {
        settle: (taken) => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          clearTimeout(timer);
          clearInterval(keepAlive);
          unqueue();
          signal?.removeEventListener("abort", onAbort);
          settle(taken);
        },
      };
      // The interval keeps the host alive while the run waits (the runners starting do not).
      const keepAlive = setInterval(() => {}, MAX_TIMER_MS);
      // helloTimeoutMs bounds the wait for a runner that is starting; while the pool's next runner still waits
      // for an admission slot, the run is queued instead, and waits up to the admission's queueTimeoutMs.
      const { helloTimeoutMs } = limits;
      const expire = () => {
        const queueLeft = admission.queueTimeoutMs - (performance.now() - askedAt);
        if (this.admitting > 0 && queueLeft > 0) timer = setTimeout(expire, Math.min(queueLeft, MAX_TIMER_MS));
        else if (this.admitting > 0) waiter.settle(notRun(failures.queueTimedOut(admission.queueTimeoutMs, admission.maxConcurrentRuns)));
        else if (helloTimeoutMs === Infinity) timer = setTimeout(expire, MAX_TIMER_MS);
        else waiter.settle(notRun(failures.poolRunnerNotReady(helloTimeoutMs)));
      };
      let timer = setTimeout(expire, Math.min(helloTimeoutMs, MAX_TIMER_MS));
      timer.unref();
      this.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Starts runners until `size` are ready or starting (none while backing off after a failed start). */
  private fill(): void {
    while (!this.closed && this.backoff === undefined && this.starting + this.idle.length < this.size) {
      this.starting += 1;
      let counted = true;
      const uncount = () => {
        if (counted) this.starting -= 1;
        counted = false;
      };
      const end = this.startRunner(uncount)
        .catch((error: unknown) => {
          // Not reached by design (every step is guarded); a bug must not become an unhandled rejection or a stuck count.
          uncount();
          this.startFailed(notStartedReport(failures.hostFailed(error), 0));
        })
        .finally(() => this.ends.delete(end));
      this.ends.add(end);
    }
  }

  /** Starts one runner (`uncount()` once it no longer counts as starting); resolves when it is gone again. */
  private async startRunner(uncount: () => void): Promise<void> {
    // The slot first, without a deadline (close() aborts the wait): nothing is made or spawned, and no
    // start-up deadline runs, while the runner waits for it.
    this.admitting += 1;
    const slot = await this.launch.admission.acquire({
      memoryBytes: admittedMemory(this.launch),
      signal: this.closeSignal.signal,
      pool: true,
    });
    this.admitting -= 1;
    if (!("release" in slot)) {
      uncount();
      return;
    }
    try {
      await this.startAdmitted(uncount);
    } finally {
      slot.release();
    }
  }

  /** {@link startRunner} once it holds its slot: resolves when the runner is gone again. */
  private async startAdmitted(uncount: () => void): Promise<void> {
    const startedAt = performance.now();
    const own = await withWorkDir(this.launch, true);
    let started: StartedGuest | RunReport;
    if ("failure" in own) started = notStartedReport(own.failure, 0);
    else {
      try {
        const launch = { ...own.launch, settings: { ...own.launch.settings, signal: this.closeSignal.signal } };
        started = await startGuest(launch, startedAt);
      } catch (error) {
        started = notStartedReport(failures.hostFailed(error), performance.now() - startedAt);
      }
    }
    if (!(started instanceof StartedGuest)) {
      if (!("failure" in own)) await own.remove();
      uncount();
      return this.startFailed(started);
    }
    const guest = started;
    const remove = "remove" in own ? own.remove : () => Promise.resolve();
    const entry = { guest, remove };
    this.live.add(entry);
    if (!this.closed) guest.process.holdHost(false);
    this.warming.add(guest);
    if (this.closed) guest.process.stop("failure");
    const hello = await this.readHello(guest);
    this.warming.delete(guest);
    uncount();
    if (typeof hello !== "string" || this.closed) {
      const failure = typeof hello === "string" ? failures.poolClosed() : hello.failure;
      const report = await guest.discard(failure, typeof hello !== "string" && hello.endOfStream, startedAt);
      await remove();
      this.live.delete(entry);
      this.startFailed(report);
      return;
    }
    // The runner has time before its body: told so, it rehearses a session in its own process meanwhile
    // (src/guest/code-rehearsal.ts), so its run does not pay for V8's first compiling of its call path. Not
    // a remote one: its far end may run an older release, which would take the line for a bad body frame.
    // A failed write is the run's to see (its body frame fails the same way), or the loss watch's below.
    // Not when a run is waiting for this runner: its body would wait for the rehearsal (about 4 ms of the
    // runner's CPU, measured), and with runs queued the machine's CPU is what bounds them (issue 33).
    if (this.launch.remote === undefined && this.waiters.length === 0) guest.wire.send(WARM_FRAME).catch(() => {});
    let release!: (end: Promise<unknown>) => void;
    // Settles when the end handed to release does (a promise resolved with a promise follows it).
    const released = new Promise<unknown>((settle) => (release = settle));
    const work = "failure" in own ? undefined : own.launch.cwd;
    // The directory goes once the caller has the report (as the replacement starts: see run()): unmounting its
    // tmpfs forks umount, and that fork blocked the event loop between the run's end and its report (3.6 to
    // 10 ms a pooled run, issue 33). The report never waited for the removal; the watchdog covers it until done.
    const afterReport = () => new Promise<void>((resolve) => setImmediate(resolve)).then(remove);
    const runner: Runner = {
      guest,
      hello,
      remove,
      work,
      shared: "shared" in own && own.shared === true,
      release: (end) => release(end.finally(afterReport)),
    };
    this.failuresInARow = 0;
    this.startFailure = undefined;
    // A runner that dies, or passes a limit, while it waits is replaced (a taken one is its run's to report).
    const lost = () => {
      const at = this.idle.indexOf(runner);
      if (at < 0) return;
      this.idle.splice(at, 1);
      this.discard(runner, failures.poolClosed());
      this.fill();
    };
    void guest.process.exited.then(lost);
    guest.stop.signal.addEventListener("abort", lost, { once: true });
    this.offer(runner);
    await released.catch(() => {});
    this.live.delete(entry);
  }

  /** A ready runner to the first run waiting, else to the idle ones. */
  private offer(runner: Runner): void {
    if (this.closed) return this.discard(runner, failures.poolClosed());
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      waiter.settle(runner);
      this.fill(); // runs are waiting: the next runner is needed now
    } else this.idle.push(runner);
  }

  /** The runner's hello line, or why it has none (read with the pool's start-up deadline). */
  private async readHello(guest: StartedGuest): Promise<string | { failure: HostFailure; endOfStream: boolean }> {
    const spawnError = await guest.process.started;
    if (spawnError !== undefined) return { failure: failures.spawnFailed(guest.spawned, spawnError), endOfStream: false };
    const { helloTimeoutMs } = this.launch.settings.limits;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<{ failure: HostFailure; endOfStream: boolean }>((settle) => {
      if (helloTimeoutMs === Infinity) return;
      timer = setTimeout(() => settle({ failure: failures.helloTimedOut(helloTimeoutMs), endOfStream: false }), helloTimeoutMs);
      timer.unref();
    });
    const read = guest.wire.receive().then(
      (line) =>
        line === undefined ? { failure: failures.outputEnded(false, undefined), endOfStream: true } : (helloProblem(line) ?? line),
      (error: unknown) => ({ failure: failures.readFailed(false, describeError(error)), endOfStream: true }),
    );
    try {
      return await Promise.race([read, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A start failed: the next start waits longer after each failure in a row, and from the second one on,
   * runs waiting (and runs to come, until a start succeeds) get its report instead of waiting.
   */
  private startFailed(report: RunReport): void {
    if (this.closed) return;
    this.failuresInARow += 1;
    const delay = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.failuresInARow - 1));
    if (this.failuresInARow >= FAILURES_REPORTED) {
      const failure = report.failure ?? failures.hostFailed(new Error("the runner ended before its hello"));
      this.startFailure = runReport({
        ...report,
        failure: failures.poolRunnerNotStarted(failure, this.failuresInARow, delay),
        pooled: true,
      });
      for (const waiter of this.waiters.splice(0)) waiter.settle(this.startFailure);
    }
    clearTimeout(this.backoff);
    this.backoff = setTimeout(() => {
      this.backoff = undefined;
      this.fill();
    }, delay);
    this.backoff.unref();
  }

  /** Stops a runner no run will take; its report is no one's. */
  private discard(runner: Runner, failure: HostFailure): void {
    // Held while it stops, so a host awaiting close() is not let go (and killed by the exit hook) first.
    runner.guest.process.holdHost(true);
    runner.release(runner.guest.discard(failure, false, performance.now()));
  }

  /**
   * Exit hook: SIGKILL every runner's process group at once (synchronous), and start removing its directory
   * (a bounded tmpfs is unmounted asynchronously: the watchdog, told of each directory, finishes the job).
   */
  killAll(): void {
    for (const { guest, remove } of this.live) {
      guest.process.kill();
      void remove();
    }
  }
}

/** Why a runner's first line is not the hello of a protocol 1 guest, or undefined when it is. */
function helloProblem(line: string): { failure: HostFailure; endOfStream: boolean } | undefined {
  const decoded = decodeLine(line);
  if (!("frame" in decoded)) return { failure: failures.notAFrame(decoded.reason, line), endOfStream: false };
  const { frame } = decoded;
  if (frame.type !== "hello") return { failure: failures.firstFrameNotHello(frame.type, line), endOfStream: false };
  if (frame.protocol !== PROTOCOL) return { failure: failures.protocolMismatch(frame.protocol, frame.sdk), endOfStream: false };
  return undefined;
}
