/**
 * Run admission: the host-wide bound on how many guest processes run at once and how much memory their
 * limits add up to. Every process runGuest, runCode (cold or pooled), resumeCode and a run pool start
 * holds a slot of an admission from before it is spawned until it is gone; runs beyond the bound wait in
 * a bounded queue, first come first served, for at most `queueTimeoutMs`. See docs/host.md, "Run admission".
 */
import { availableParallelism, totalmem } from "node:os";
import { MAX_TIMER_MS } from "../../protocol/timers.js";
import * as failures from "../report/failures.js";
import type { HostFailure, RunAdmission } from "../api/types.js";

/** The share of the machine's memory the default admission lets runs' `memoryBytes` add up to. */
export const DEFAULT_MEMORY_SHARE = 0.5;
/** Runs allowed per core by the default admission (runs mostly wait on their calls, not compute). */
const RUNS_PER_CORE = 4;
/** The memory a run is charged when its `memoryBytes` is left at its default (settings.ts: 1 GiB). */
const DEFAULT_RUN_MEMORY = 1024 * 1024 * 1024;
/** Default `maxQueuedRuns`. */
export const DEFAULT_MAX_QUEUED_RUNS = 64;
/** Default `queueTimeoutMs`: a minute. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 60_000;

/** Options for {@link createRunAdmission}; each left out takes the default documented on it. */
export interface RunAdmissionOptions {
  /**
   * The most guest processes that may be alive at once (a pool's warm runners included). Default: 4 per
   * core (`os.availableParallelism()`), at most as many as `memoryBytes` holds runs of the default 1 GiB
   * limit, at least 2; 8 on a 2-core machine with 24 GiB.
   */
  maxConcurrentRuns?: number;
  /** The most runs waiting for a slot at once (default 64); one more fails at once with `RunQueueFull`. */
  maxQueuedRuns?: number;
  /**
   * How long a run may wait for a slot (default 60 000 ms; `Infinity`: as long as it takes). Past it the run
   * fails with `QueueTimeout` and nothing was started. The wait does not count against the run's `runTimeoutMs`.
   */
  queueTimeoutMs?: number;
  /**
   * The most the running runs' `limits.memoryBytes` may add up to (default half of `os.totalmem()`;
   * `Infinity`: no budget). A run waits until its share fits; a run (or pool) whose limit alone is over it is refused.
   */
  memoryBytes?: number;
}

// The interface is a public type (src/host/api/types.ts, which imports nothing of the engine); made here.
export type { RunAdmission };

/** @internal What one slot asks for. */
export interface SlotRequest {
  /** The run's `limits.memoryBytes` (`Infinity`, no limit, is charged the whole budget), 0 for a process that uses none of this host's. */
  memoryBytes: number;
  /** Aborts the wait: the request then ends with `abortedBeforeStart`. */
  signal?: AbortSignal | undefined;
  /**
   * A pool's runner start: it waits without a deadline (the pool's close aborts it) and is not counted
   * against `maxQueuedRuns` (a pool has at most `size` such requests; the runs waiting for them are counted).
   */
  pool?: boolean;
}

/** @internal A held slot: `release()` gives it back (once; again is a no-op). */
export interface Slot {
  release(): void;
}

interface Waiter {
  memory: number;
  pool: boolean;
  settle(result: Slot | HostFailure): void;
}

const AMOUNT = (name: string, value: unknown, caller: string, least: number) =>
  new RangeError(`${caller}: ${name} must be an integer of at least ${least}, or Infinity, got ${String(value)}`);

function whole(value: unknown, name: string, caller: string, fallback: number, least: number, infinite: boolean): number {
  if (value === undefined) return fallback;
  if (infinite && value === Infinity) return Infinity;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < least) throw AMOUNT(name, value, caller, least);
  return value;
}

/** @internal The admission itself. */
export class Admission implements RunAdmission {
  readonly maxConcurrentRuns: number;
  readonly maxQueuedRuns: number;
  readonly queueTimeoutMs: number;
  readonly memoryBytes: number;
  running = 0;
  memoryInUse = 0;
  private readonly waiters: Waiter[] = [];
  /** Runs counted as queued that wait elsewhere (a pooled run waiting for its pool's runner). */
  private waitingElsewhere = 0;

  constructor(options: RunAdmissionOptions, caller: string) {
    if (typeof options !== "object" || options === null) throw new TypeError(`${caller}: options must be an object`);
    const unknown = Object.keys(options).filter(
      (key) => !["maxConcurrentRuns", "maxQueuedRuns", "queueTimeoutMs", "memoryBytes"].includes(key),
    );
    if (unknown.length > 0) {
      throw new TypeError(
        `${caller}: unknown option ${JSON.stringify(unknown[0])}; ` +
          "it takes maxConcurrentRuns, maxQueuedRuns, queueTimeoutMs and memoryBytes",
      );
    }
    this.memoryBytes = whole(options.memoryBytes, "memoryBytes", caller, Math.floor(totalmem() * DEFAULT_MEMORY_SHARE), 1, true);
    const byMemory = this.memoryBytes === Infinity ? Infinity : Math.floor(this.memoryBytes / DEFAULT_RUN_MEMORY);
    const fallback = Math.max(2, Math.min(RUNS_PER_CORE * availableParallelism(), byMemory));
    this.maxConcurrentRuns = whole(options.maxConcurrentRuns, "maxConcurrentRuns", caller, fallback, 1, false);
    this.maxQueuedRuns = whole(options.maxQueuedRuns, "maxQueuedRuns", caller, DEFAULT_MAX_QUEUED_RUNS, 0, false);
    this.queueTimeoutMs = whole(options.queueTimeoutMs, "queueTimeoutMs", caller, DEFAULT_QUEUE_TIMEOUT_MS, 1, true);
  }

  get queued(): number {
    return this.waiters.filter((waiter) => !waiter.pool).length + this.waitingElsewhere;
  }

  /** The memory a request is charged: `Infinity` (no limit) takes the whole budget. */
  private charge(memoryBytes: number): number {
    return memoryBytes === Infinity ? this.memoryBytes : memoryBytes;
  }

  /** @internal Throws a RangeError when `count` processes of `memoryBytes` each can never be admitted together. */
  check(memoryBytes: number, caller: string, count = 1): void {
    if (count > this.maxConcurrentRuns) {
      throw new RangeError(
        `${caller}: a pool of ${count} runners needs ${count} run slots, but its admission allows ${this.maxConcurrentRuns} ` +
          "(maxConcurrentRuns); make the pool smaller or the admission larger",
      );
    }
    // No limit (Infinity) is charged the whole budget: such a run runs alone, and two never fit.
    const memory = this.charge(memoryBytes) * count;
    if (memory > this.memoryBytes) {
      const what = count === 1 ? "limits.memoryBytes" : `${count} runners of limits.memoryBytes ${memoryBytes}`;
      throw new RangeError(
        `${caller}: ${what} (${String(memory)} bytes) is over the run admission's memory budget of ${this.memoryBytes} bytes, ` +
          "so it could never run; give a smaller limits.memoryBytes, or an admission with a larger memoryBytes",
      );
    }
  }

  private fits(memory: number): boolean {
    return this.running < this.maxConcurrentRuns && this.memoryInUse + memory <= this.memoryBytes;
  }

  private grant(memory: number): Slot {
    this.running += 1;
    this.memoryInUse += memory;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.running -= 1;
        this.memoryInUse -= memory;
        this.admitWaiting();
      },
    };
  }

  /** Hands freed slots to the waiters in order; the first that does not fit waits, and so do those behind it. */
  private admitWaiting(): void {
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.memory)) {
      const waiter = this.waiters[0]!;
      waiter.settle(this.grant(waiter.memory));
    }
  }

  /** A slot, or the failure of a run that gets none (queue full, waited too long, aborted). Never rejects. */
  acquire(request: SlotRequest): Promise<Slot | HostFailure> {
    const memory = this.charge(request.memoryBytes);
    const pool = request.pool === true;
    const { signal } = request;
    if (signal?.aborted) return Promise.resolve(failures.abortedBeforeStart(signal.reason));
    if (this.waiters.length === 0 && this.fits(memory)) return Promise.resolve(this.grant(memory));
    if (!pool && this.queued >= this.maxQueuedRuns)
      return Promise.resolve(failures.runQueueFull(this.maxQueuedRuns, this.maxConcurrentRuns));
    return new Promise((resolve) => {
      const onAbort = () => waiter.settle(failures.abortedBeforeStart(signal?.reason));
      const waiter: Waiter = {
        memory,
        pool,
        settle: (result) => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve(result);
          // A waiter leaving the head may let the next one in (a smaller run behind a large one).
          if (at === 0) this.admitWaiting();
        },
      };
      const ms = this.queueTimeoutMs;
      // The timer keeps the host alive while the run waits, as a running run would.
      const timer =
        pool || ms === Infinity
          ? undefined
          : setTimeout(() => waiter.settle(failures.queueTimedOut(ms, this.maxConcurrentRuns)), Math.min(ms, MAX_TIMER_MS));
      this.waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * @internal Counts a run waiting elsewhere (for a pool's runner) as queued: undefined when the queue is full
   * (the caller then fails the run with {@link failures.runQueueFull}), else the function that uncounts it.
   */
  enqueueElsewhere(): (() => void) | undefined {
    if (this.queued >= this.maxQueuedRuns) return undefined;
    this.waitingElsewhere += 1;
    let counted = true;
    return () => {
      if (counted) this.waitingElsewhere -= 1;
      counted = false;
    };
  }
}

/**
 * Makes a run admission: a bound on the guest processes alive at once (`maxConcurrentRuns`), on the sum of
 * their `limits.memoryBytes` (`memoryBytes`), and a queue for the runs beyond (`maxQueuedRuns`, each waiting
 * at most `queueTimeoutMs`). Pass it as `admission` to runGuest, runCode, resumeCode and createRunPool to
 * share it between them; left out, they share one process-wide admission with the defaults
 * ({@link defaultRunAdmission}). A pool's runners, idle ones too, each hold a slot. Invalid options throw
 * (TypeError, RangeError). See docs/host.md, "Run admission".
 *
 * @example
 * const admission = createRunAdmission({ maxConcurrentRuns: 4, maxQueuedRuns: 16, queueTimeoutMs: 30_000 });
 * const report = await runCode({ code: "return 1 + 1;", admission });
 */
export function createRunAdmission(options: RunAdmissionOptions = {}): RunAdmission {
  return new Admission(options, "createRunAdmission");
}

let processWide: Admission | undefined;

/** The process-wide admission every run without its own `admission` goes through (made with the defaults on first use). */
export function defaultRunAdmission(): RunAdmission {
  return (processWide ??= new Admission({}, "defaultRunAdmission"));
}

/** @internal The admission an option names (checked), or the process-wide one. */
export function admissionOf(admission: unknown, caller: string): Admission {
  if (admission === undefined) return defaultRunAdmission() as Admission;
  if (!(admission instanceof Admission)) throw new TypeError(`${caller}: options.admission must be made by createRunAdmission`);
  return admission;
}
