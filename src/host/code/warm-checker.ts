/**
 * The host's warm type checker: long-lived child processes (checker-server.ts) that check code bodies
 * one after another, so a type-checked run after the first costs milliseconds instead of a `tsc` start.
 * The host holds at most {@link MAX_CHECKERS}, each bounded (memory: its heap, and its own cgroup where
 * the host can make one; time: each check's deadline); a checker starts when a check finds none free, is
 * replaced when it crashes, runs out of memory, passes a deadline or is stopped by an abort, goes away
 * after {@link IDLE_MS} without checks or on {@link closeTypeChecker}, never keeps the host's event loop
 * alive by itself, and cannot outlive the host (its stdin closes, and the watchdog of its process group
 * SIGKILLs it and removes its cgroup). docs/code.md, "Bounds of the type check", says why.
 */
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { BoundedChild, spawnInGroup } from "../process/bounded-child.js";
import { hostCgroupPlan, RunCgroup } from "../limits/cgroup.js";
import { launcherCommand, leakedDescriptors, machineShells } from "../limits/launcher.js";
import { builtScript } from "./built-script.js";
import type { BodyError, CheckAnswer } from "./check-protocol.js";

/** A check gets this long once a checker has it (its start included); past it the check fails, not the host. */
const CHECK_DEADLINE_MS = 30_000;
/** An idle checker stops after this long without a check (its memory goes back; the next check starts a new one). */
export const IDLE_MS = 5 * 60_000;
/** The most checker processes at once: a check never waits behind another while fewer are busy. */
export const MAX_CHECKERS = 2;
/** The memory of one checker's cgroup (the checker and TypeScript 7's native compiler, its child), where the host can make one. */
export const CHECKER_MEMORY_BYTES = 1024 * 1024 * 1024;
/** The checker's JavaScript heap (V8's own bound, everywhere): TypeScript 5.x and 6 check in it. */
export const CHECKER_HEAP_MB = 768;
/** The processes and threads of one checker's cgroup. */
const CHECKER_PROCESSES = 256;
/** The end of the checker's stderr kept for the message when it dies. */
const STDERR_TAIL_CHARS = 2000;
/** After the checker is killed, how long a grandchild may hold its pipes before they are closed. */
const CHECKER_GRACE_MS = 1000;
/** What to tell a model whose body's types are past a bound. */
const SIMPLER_TYPES =
  "the body's types are too big or complex to check; use simpler types (fewer mapped, conditional or recursive types), " +
  "or leave annotations out where TypeScript can infer them";

/**
 * What one check found, why it could not check (the checker's fault), or why the body was refused
 * without a verdict (it passed the time or memory a check may take).
 */
export type CheckResult = { errors: BodyError[]; other: string[] } | { failed: string } | { refused: string };

/** A checker's bounds: the TypeScript it runs, each check's deadline, its idle life, its memory. */
export interface CheckerBounds {
  deadlineMs: number;
  idleMs: number;
  memoryBytes: number;
  heapMb: number;
  maxCheckers: number;
}

interface PendingCheck {
  id: number;
  declarations: string;
  code: string;
  signal: AbortSignal | undefined;
  settle(result: CheckResult): void;
  /** Whether it was already sent to a checker that died (it is retried once, in a new one). */
  retried?: boolean;
}

/** One running checker process, bounded as every child the host starts (its group, its cgroup, its kill, its end). */
interface CheckerProcess {
  child: ChildProcess;
  bounded: BoundedChild;
  cgroup: RunCgroup | undefined;
  stderr: string;
  /** The check it has, if any. */
  current?: PendingCheck | undefined;
  deadline?: NodeJS.Timeout | undefined;
  idleTimer?: NodeJS.Timeout | undefined;
}

/** The directory of the `typescript` package next to this one, or undefined when it is not installed. */
export function installedTypeScript(): string | undefined {
  try {
    return dirname(createRequire(import.meta.url).resolve("typescript/package.json"));
  } catch {
    return undefined;
  }
}

let serverPath: string | undefined;
/** The checker's script in this package's dist/ (this module may be bundled into dist/host or dist/chunks). */
function checkerScript(): string {
  return (serverPath ??= builtScript(
    ["./typecheck-server.js", "../host/typecheck-server.js", "../../../dist/host/typecheck-server.js"],
    import.meta.url,
    "the type checker (dist/host/typecheck-server.js) is missing from this installation of @posoco/ears",
  ));
}

/** The checker's own cgroup with its memory and process bounds, when this host can make one (as for a run). */
function checkerCgroup(bounds: CheckerBounds): RunCgroup | undefined {
  const plan = hostCgroupPlan();
  if (plan.version === null) return undefined;
  try {
    return RunCgroup.create(plan, { memoryBytes: bounds.memoryBytes, processes: CHECKER_PROCESSES });
  } catch {
    return undefined; // As for a run's default limits: the heap bound still holds.
  }
}

/**
 * Starts the checker: Node running the checker's script for the TypeScript package in `typescript`, with
 * its heap bounded, in a cgroup of its own where the host can make one (joined by the launcher before Node
 * starts, as a run's), the leader of its own process group (TypeScript 7's native compiler is its child,
 * in the group and the cgroup), with a watchdog that SIGKILLs the group and removes the cgroup should the
 * host die. The one place the checker is spawned.
 */
function spawnChecker(typescript: string, bounds: CheckerBounds): CheckerProcess {
  let cgroup = checkerCgroup(bounds);
  const args = [`--max-old-space-size=${bounds.heapMb}`, checkerScript(), typescript];
  const steps = {
    command: process.execPath,
    args,
    closeFds: leakedDescriptors(),
    keepFds: [],
    cgroupJoins: cgroup?.joins ?? [],
    rlimits: {},
    env: process.env,
    shells: machineShells(),
  };
  let start = launcherCommand(steps);
  if ("problem" in start) {
    // No shell to join the cgroup with: the checker starts without it (its heap still bounded).
    void cgroup?.remove();
    cgroup = undefined;
    start = { command: process.execPath, args, wrapped: false };
  }
  let child: ChildProcess;
  try {
    child = spawnInGroup(start.command, start.args, { stdio: ["pipe", "pipe", "pipe"] });
  } catch (error) {
    void cgroup?.remove();
    throw error;
  }
  // Its deadlines are per check (WarmChecker), and it is only ever killed: the grace bounds the wait for its pipes.
  const bounded = new BoundedChild(child, { killGraceMs: CHECKER_GRACE_MS, group: { cgroups: cgroup?.directories } });
  const checker: CheckerProcess = { child, bounded, cgroup, stderr: "" };
  child.stderr!.on("data", (chunk: Buffer) => {
    checker.stderr = (checker.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  });
  child.stdin!.on("error", () => {}); // A dead checker's stdin: its exit is reported, not this.
  return checker;
}

/** The memory bound a checker that died passed, in bytes: its cgroup's (the kernel killed it), or its heap's (V8 stopped). */
function memoryPassed(checker: CheckerProcess, bounds: CheckerBounds): number | undefined {
  if ((checker.cgroup?.read().oomKills ?? 0) > 0) return bounds.memoryBytes;
  if (/heap out of memory|Reached heap limit/i.test(checker.stderr)) return bounds.heapMb * 1024 * 1024;
  return undefined;
}

/** Lets the event loop end while the checker waits (`hold` false), or keeps it going while a check runs. */
function holdLoop(child: ChildProcess, hold: boolean): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr] as ({ ref?(): void; unref?(): void } | null)[]) {
    if (hold) handle?.ref?.();
    else handle?.unref?.();
  }
}

/**
 * Hands checks to at most {@link MAX_CHECKERS} checker processes, first come first served: a check goes to
 * an idle checker, else to a new one while there are fewer than the most, else waits for the first that
 * is free. So a slow check holds one checker, never everyone's checks (docs/code.md, "Bounds of the type
 * check"); see the module's comment.
 */
export class WarmChecker {
  private readonly checkers: CheckerProcess[] = [];
  private readonly queue: PendingCheck[] = [];
  private nextId = 1;
  private drained: (() => void)[] = [];

  /** `typescript` finds the TypeScript package (installedTypeScript, or another for tests); `bounds` bound each checker and check. */
  constructor(
    private readonly typescript: () => string | undefined,
    private readonly bounds: CheckerBounds,
  ) {}

  /** The pid of a running checker (the first started), if one runs (the tests observe replacements through it). */
  get pid(): number | undefined {
    return this.checkers[0]?.child.pid;
  }

  /** The pids of every running checker. */
  get pids(): number[] {
    return this.checkers.map((checker) => checker.child.pid!);
  }

  /** Checks `code` (a wrapped body) against `declarations`; never rejects. An abort resolves at once with `failed`. */
  check(declarations: string, code: string, signal: AbortSignal | undefined): Promise<CheckResult> {
    if (signal?.aborted === true) return Promise.resolve({ failed: "the run was aborted" });
    return new Promise((resolve) => {
      const pending: PendingCheck = { id: this.nextId++, declarations, code, signal, settle: resolve };
      const onAbort = () => {
        const checker = this.checkers.find((candidate) => candidate.current === pending);
        if (checker !== undefined) this.fail(checker, pending, { failed: "the run was aborted" });
        else if (this.queue.includes(pending)) {
          this.queue.splice(this.queue.indexOf(pending), 1);
          pending.settle({ failed: "the run was aborted" });
        }
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      pending.settle = (result) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(result);
      };
      this.queue.push(pending);
      this.pump();
    });
  }

  /** Waits for the checks already asked for, then stops the checkers and waits for them to exit. */
  async close(): Promise<void> {
    if (this.checkers.some((checker) => checker.current !== undefined) || this.queue.length > 0) {
      await new Promise<void>((resolve) => this.drained.push(resolve));
    }
    await Promise.all([...this.checkers].map((checker) => this.stop(checker)));
  }

  /** Sends queued checks to free checkers, starting checkers up to the most; idles the rest. */
  private pump(): void {
    while (this.queue.length > 0) {
      let checker = this.checkers.find((candidate) => candidate.current === undefined);
      if (checker === undefined) {
        if (this.checkers.length >= this.bounds.maxCheckers) break;
        try {
          checker = this.start();
        } catch (error) {
          this.queue.shift()!.settle({ failed: error instanceof Error ? error.message : String(error) });
          continue;
        }
      }
      this.assign(checker, this.queue.shift()!);
    }
    if (this.queue.length === 0 && this.checkers.every((checker) => checker.current === undefined)) {
      for (const resolve of this.drained.splice(0)) resolve();
    }
    for (const checker of this.checkers) {
      if (checker.current !== undefined || checker.idleTimer !== undefined) continue;
      holdLoop(checker.child, false);
      checker.idleTimer = setTimeout(() => void this.stop(checker), this.bounds.idleMs);
      checker.idleTimer.unref();
    }
  }

  private assign(checker: CheckerProcess, pending: PendingCheck): void {
    clearTimeout(checker.idleTimer);
    checker.idleTimer = undefined;
    checker.current = pending;
    holdLoop(checker.child, true);
    const seconds = this.bounds.deadlineMs / 1000;
    checker.deadline = setTimeout(
      () =>
        this.fail(checker, pending, {
          refused: `the type check took longer than ${seconds} s, the most a check may take: ${SIMPLER_TYPES}`,
        }),
      this.bounds.deadlineMs,
    );
    checker.child.stdin!.write(`${JSON.stringify({ id: pending.id, declarations: pending.declarations, code: pending.code })}\n`);
  }

  /** Starts a checker and listens to it; its answers and its death settle the check it has. */
  private start(): CheckerProcess {
    const typescript = this.typescript();
    if (typescript === undefined) throw new Error("typescript is no longer installed"); // requireTypeScript() found it before the run
    const checker = spawnChecker(typescript, this.bounds);
    this.checkers.push(checker);
    createInterface({ input: checker.child.stdout!, crlfDelay: Infinity }).on("line", (line) => {
      let answer: CheckAnswer;
      try {
        answer = JSON.parse(line) as CheckAnswer;
      } catch {
        return; // Not an answer (the checker writes nothing else; a library might).
      }
      const pending = checker.current;
      if (!this.checkers.includes(checker) || pending === undefined || answer.id !== pending.id) return;
      this.finish(checker, pending, "failed" in answer ? { failed: `the checker failed: ${answer.failed}` } : answer);
    });
    const died = (why: string) => {
      if (!this.checkers.includes(checker)) return; // Stopped on purpose: whoever stopped it settled its check.
      this.checkers.splice(this.checkers.indexOf(checker), 1);
      clearTimeout(checker.deadline);
      clearTimeout(checker.idleTimer);
      const memory = memoryPassed(checker, this.bounds);
      // TypeScript 7's compiler may outlive its parent by a moment: nothing of the group stays.
      checker.bounded.kill();
      void checker.bounded.end().then(() => checker.cgroup?.remove());
      const pending = checker.current;
      checker.current = undefined;
      if (pending === undefined) return this.pump();
      if (memory !== undefined) {
        const mib = Math.round(memory / 1024 / 1024);
        pending.settle({ refused: `the type check needed more than ${mib} MiB of memory, the most a check may use: ${SIMPLER_TYPES}` });
        return this.pump();
      }
      if (pending.retried !== true) {
        // A checker that was killed, or crashed on an earlier body, is not this body's fault: once more, in a new one.
        pending.retried = true;
        this.queue.unshift(pending);
        return this.pump();
      }
      const stderr = checker.stderr.trim();
      pending.settle({ failed: `the checker ${why}${stderr === "" ? "" : `: ${stderr}`}` });
      this.pump();
    };
    checker.child.once("error", (error) => died(`could not start (${error.message})`));
    checker.child.once("exit", (code, signal) => died(signal === null ? `exited with code ${code}` : `was killed by ${signal}`));
    return checker;
  }

  /** Settles a checker's current check and moves on. */
  private finish(checker: CheckerProcess, pending: PendingCheck, result: CheckResult): void {
    if (checker.current === pending) {
      checker.current = undefined;
      clearTimeout(checker.deadline);
    }
    pending.settle(result);
    this.pump();
  }

  /** A check failed in a way that leaves its checker unusable (a deadline, an abort): stop that checker, then go on. */
  private fail(checker: CheckerProcess, pending: PendingCheck, result: CheckResult): void {
    void this.stop(checker);
    this.finish(checker, pending, result);
  }

  /** Kills a checker's whole group (the native compiler too), waits for it to exit, and removes its cgroup. */
  private async stop(checker: CheckerProcess): Promise<void> {
    clearTimeout(checker.idleTimer);
    clearTimeout(checker.deadline);
    if (!this.checkers.includes(checker)) return;
    this.checkers.splice(this.checkers.indexOf(checker), 1);
    // Whoever waits for the exit keeps the host alive until it comes (an idle checker holds nothing).
    checker.child.ref();
    checker.bounded.kill();
    checker.child.stdin!.destroy();
    await checker.bounded.end();
    await checker.cgroup?.remove();
  }
}

/** The host's checker, made on the first type-checked run. */
let shared: WarmChecker | undefined;
/** For tests: where the next checker finds TypeScript, and its bounds. */
let testSettings: { typescript?: string } & Partial<CheckerBounds> = {};

/** The host's warm checker (one per host process). */
export function warmChecker(): WarmChecker {
  shared ??= new WarmChecker(() => testSettings.typescript ?? installedTypeScript(), {
    deadlineMs: testSettings.deadlineMs ?? CHECK_DEADLINE_MS,
    idleMs: testSettings.idleMs ?? IDLE_MS,
    memoryBytes: testSettings.memoryBytes ?? CHECKER_MEMORY_BYTES,
    heapMb: testSettings.heapMb ?? CHECKER_HEAP_MB,
    maxCheckers: testSettings.maxCheckers ?? MAX_CHECKERS,
  });
  return shared;
}

/**
 * Stops the warm type checker `runCode({ typecheck: true })` keeps between runs, after the checks
 * already asked for, and resolves when its processes have exited. Optional: the checker never keeps the
 * process alive, stops by itself after five minutes without a check, and dies with the host. Call it to
 * have its memory back at once (a TypeScript 5.9 checker holds 170–350 MB, TypeScript 7's about 130 MB);
 * the next type-checked run starts a new one.
 */
export async function closeTypeChecker(): Promise<void> {
  const checker = shared;
  shared = undefined;
  await checker?.close();
}

/**
 * For tests only: closes the host's checker and makes the next one use the TypeScript package in
 * `settings.typescript` (a directory; default the installed one), and the bounds given (the rest default).
 */
export async function useCheckerSettingsForTests(settings: { typescript?: string } & Partial<CheckerBounds>): Promise<void> {
  await closeTypeChecker();
  testSettings = settings;
}
