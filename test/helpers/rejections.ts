// Counts unhandled promise rejections while a test runs, so a property can assert there were none.

/** Starts counting `unhandledRejection` events; call `stop()` to get the reasons seen. */
export function watchUnhandledRejections(): { settle(): Promise<void>; stop(): unknown[] } {
  const reasons: unknown[] = [];
  const listener = (reason: unknown) => reasons.push(reason);
  process.on("unhandledRejection", listener);
  return {
    /** Node reports unhandled rejections after the microtask queue drains; give it two turns of the loop. */
    async settle() {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 0));
    },
    stop() {
      process.off("unhandledRejection", listener);
      return reasons;
    },
  };
}
