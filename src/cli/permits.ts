/**
 * A counting semaphore for asynchronous work: at most `size` tasks run at once, the rest wait in order.
 * The CLI's built-in file capabilities use it so a guest cannot fill libuv's thread pool (4 threads by
 * default) with file-system calls, nor hold more than a few file buffers in memory at once.
 */
export class Permits {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  /** `size`: how many tasks may run at once (a positive integer). */
  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`Permits needs a positive integer size, got ${size}`);
    this.#free = size;
  }

  /** Tasks waiting for a permit now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Runs `task` once a permit is free and releases the permit when the task settles, however it settles.
   * If `signal` aborts while the task is still waiting, it never runs and the promise rejects with the
   * signal's reason; a task that has started keeps its permit until it settles, because the work it
   * started (a thread-pool call) is still running.
   */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    if (this.#free > 0) this.#free -= 1;
    else await this.#wait(signal);
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((granted, refused) => {
      const onAbort = () => {
        const at = this.#waiting.indexOf(grant);
        if (at >= 0) this.#waiting.splice(at, 1);
        refused(signal!.reason);
      };
      // The permit passes straight from the releasing task to this one, so a newcomer cannot jump the queue.
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        granted();
      };
      this.#waiting.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#free += 1;
    else next();
  }
}
