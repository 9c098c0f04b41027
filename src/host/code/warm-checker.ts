/**
 * The host's warm type checker: one long-lived child process (checker-server.ts) that checks code
 * bodies one after another, so a type-checked run after the first costs milliseconds instead of a
 * `tsc` start. The host holds at most one; it starts on the first check, is replaced when it crashes,
 * hangs past the deadline or is stopped by an abort, goes away after {@link IDLE_MS} without checks or
 * on {@link closeTypeChecker}, never keeps the host's event loop alive by itself, and cannot outlive
 * the host (its stdin closes, and the watchdog of its process group SIGKILLs it). docs/code.md says why.
 */
import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { createInterface } from "node:readline";
import { BoundedChild, spawnInGroup } from "../bounded-child.js";
import { builtScript } from "./built-script.js";
import type { BodyError, CheckAnswer } from "./check-protocol.js";

/** A check gets this long once the checker has it; a checker that hangs must not hold the run forever. */
const CHECK_DEADLINE_MS = 60_000;
/** An idle checker stops after this long without a check (its memory goes back; the next check starts a new one). */
export const IDLE_MS = 5 * 60_000;
/** The end of the checker's stderr kept for the message when it dies. */
const STDERR_TAIL_CHARS = 2000;
/** After the checker is killed, how long a grandchild may hold its pipes before they are closed. */
const CHECKER_GRACE_MS = 1000;

/** What one check found, or why it could not check. */
export type CheckResult = { errors: BodyError[]; other: string[] } | { failed: string };

interface PendingCheck {
  id: number;
  declarations: string;
  code: string;
  signal: AbortSignal | undefined;
  settle(result: CheckResult): void;
  /** Whether it was already sent to a checker that died (it is retried once, in a new one). */
  retried?: boolean;
}

/** One running checker process, bounded as every child the host starts (its group, its kill, its end). */
interface CheckerProcess {
  child: ChildProcess;
  bounded: BoundedChild;
  stderr: string;
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

/**
 * Starts the checker: Node running the checker's script for the TypeScript package in `typescript`,
 * the leader of its own process group (TypeScript 7's native compiler is its child, in the group), with
 * a watchdog that SIGKILLs the group should the host die. The one place the checker is spawned.
 */
function spawnChecker(typescript: string): CheckerProcess {
  const child = spawnInGroup(process.execPath, [checkerScript(), typescript], { stdio: ["pipe", "pipe", "pipe"] });
  // Its deadlines are per check (WarmChecker), and it is only ever killed: the grace bounds the wait for its pipes.
  const checker: CheckerProcess = { child, bounded: new BoundedChild(child, { killGraceMs: CHECKER_GRACE_MS }), stderr: "" };
  child.stderr!.on("data", (chunk: Buffer) => {
    checker.stderr = (checker.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  });
  child.stdin!.on("error", () => {}); // A dead checker's stdin: its exit is reported, not this.
  return checker;
}

/** Lets the event loop end while the checker waits (`hold` false), or keeps it going while a check runs. */
function holdLoop(child: ChildProcess, hold: boolean): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr] as ({ ref?(): void; unref?(): void } | null)[]) {
    if (hold) handle?.ref?.();
    else handle?.unref?.();
  }
}

/** Queues checks for one checker process at a time; see the module's comment. */
export class WarmChecker {
  private checker: CheckerProcess | undefined;
  private current: PendingCheck | undefined;
  private readonly queue: PendingCheck[] = [];
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  private drained: (() => void)[] = [];
  /** The current check's deadline. */
  private deadline: NodeJS.Timeout | undefined;

  /**
   * `typescript` finds the TypeScript package (installedTypeScript, or another for tests); `deadlineMs`
   * bounds each check, `idleMs` an idle checker's life.
   */
  constructor(
    private readonly typescript: () => string | undefined,
    private readonly deadlineMs = CHECK_DEADLINE_MS,
    private readonly idleMs = IDLE_MS,
  ) {}

  /** The pid of the running checker, if one runs (the tests observe replacements through it). */
  get pid(): number | undefined {
    return this.checker?.child.pid;
  }

  /** Checks `code` (a wrapped body) against `declarations`; never rejects. An abort resolves at once with `failed`. */
  check(declarations: string, code: string, signal: AbortSignal | undefined): Promise<CheckResult> {
    if (signal?.aborted === true) return Promise.resolve({ failed: "the run was aborted" });
    return new Promise((resolve) => {
      const pending: PendingCheck = { id: this.nextId++, declarations, code, signal, settle: resolve };
      const onAbort = () => {
        if (this.current === pending) this.fail(pending, "the run was aborted");
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
      clearTimeout(this.idleTimer);
      this.pump();
    });
  }

  /** Waits for the checks already asked for, then stops the checker and waits for it to exit. */
  async close(): Promise<void> {
    if (this.current !== undefined || this.queue.length > 0) await new Promise<void>((resolve) => this.drained.push(resolve));
    await this.stop();
  }

  /** Sends the next queued check to the checker, starting one if none runs. */
  private pump(): void {
    if (this.current !== undefined) return;
    const pending = this.queue.shift();
    if (pending === undefined) {
      for (const resolve of this.drained.splice(0)) resolve();
      if (this.checker !== undefined) {
        holdLoop(this.checker.child, false);
        clearTimeout(this.idleTimer);
        this.idleTimer = setTimeout(() => void this.stop(), this.idleMs);
        this.idleTimer.unref();
      }
      return;
    }
    this.current = pending;
    let checker: CheckerProcess;
    try {
      checker = this.checker ?? this.start();
    } catch (error) {
      this.finish(pending, { failed: error instanceof Error ? error.message : String(error) });
      return;
    }
    holdLoop(checker.child, true);
    this.deadline = setTimeout(() => this.fail(pending, `tsc did not finish within ${this.deadlineMs / 1000} s`), this.deadlineMs);
    checker.child.stdin!.write(`${JSON.stringify({ id: pending.id, declarations: pending.declarations, code: pending.code })}\n`);
  }

  /** Starts a checker and listens to it; its answers and its death settle the check it has. */
  private start(): CheckerProcess {
    const typescript = this.typescript();
    if (typescript === undefined) throw new Error("typescript is no longer installed"); // requireTypeScript() found it before the run
    const checker = spawnChecker(typescript);
    this.checker = checker;
    createInterface({ input: checker.child.stdout!, crlfDelay: Infinity }).on("line", (line) => {
      let answer: CheckAnswer;
      try {
        answer = JSON.parse(line) as CheckAnswer;
      } catch {
        return; // Not an answer (the checker writes nothing else; a library might).
      }
      const pending = this.current;
      if (this.checker !== checker || pending === undefined || answer.id !== pending.id) return;
      this.finish(pending, "failed" in answer ? { failed: `the checker failed: ${answer.failed}` } : answer);
    });
    const died = (why: string) => {
      if (this.checker !== checker) return; // Stopped on purpose: whoever stopped it settled its check.
      this.checker = undefined;
      // TypeScript 7's compiler may outlive its parent by a moment: nothing of the group stays.
      checker.bounded.kill();
      void checker.bounded.end();
      const pending = this.current;
      if (pending === undefined) return;
      if (pending.retried !== true) {
        // A checker that was killed, or crashed on an earlier body, is not this body's fault: once more, in a new one.
        pending.retried = true;
        clearTimeout(this.deadline);
        this.current = undefined;
        this.queue.unshift(pending);
        this.pump();
        return;
      }
      const stderr = checker.stderr.trim();
      this.finish(pending, { failed: `the checker ${why}${stderr === "" ? "" : `: ${stderr}`}` });
    };
    checker.child.once("error", (error) => died(`could not start (${error.message})`));
    checker.child.once("exit", (code, signal) => died(signal === null ? `exited with code ${code}` : `was killed by ${signal}`));
    return checker;
  }

  /** Settles the current check and moves on. */
  private finish(pending: PendingCheck, result: CheckResult): void {
    if (this.current === pending) {
      this.current = undefined;
      clearTimeout(this.deadline);
    }
    pending.settle(result);
    this.pump();
  }

  /** The current check failed in a way that leaves the checker unusable (a deadline, an abort): stop it, then go on. */
  private fail(pending: PendingCheck, why: string): void {
    void this.stop();
    this.finish(pending, { failed: why });
  }

  /** Kills the checker's whole group (the native compiler too) and waits for the checker to exit. */
  private async stop(): Promise<void> {
    clearTimeout(this.idleTimer);
    const checker = this.checker;
    if (checker === undefined) return;
    this.checker = undefined;
    // Whoever waits for the exit keeps the host alive until it comes (an idle checker holds nothing).
    checker.child.ref();
    checker.bounded.kill();
    checker.child.stdin!.destroy();
    await checker.bounded.end();
  }
}

/** The host's checker, made on the first type-checked run. */
let shared: WarmChecker | undefined;
/** For tests: where the next checker finds TypeScript, and how long a check may take. */
let testSettings: { typescript?: string; deadlineMs?: number; idleMs?: number } = {};

/** The host's warm checker (one per host process). */
export function warmChecker(): WarmChecker {
  shared ??= new WarmChecker(
    () => testSettings.typescript ?? installedTypeScript(),
    testSettings.deadlineMs ?? CHECK_DEADLINE_MS,
    testSettings.idleMs ?? IDLE_MS,
  );
  return shared;
}

/**
 * Stops the warm type checker `runCode({ typecheck: true })` keeps between runs, after the checks
 * already asked for, and resolves when its process has exited. Optional: the checker never keeps the
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
 * `settings.typescript` (a directory; default the installed one), a check deadline and an idle time.
 */
export async function useCheckerSettingsForTests(settings: { typescript?: string; deadlineMs?: number; idleMs?: number }): Promise<void> {
  await closeTypeChecker();
  testSettings = settings;
}
