// Per-test setup shared by the OpenSeek tests: the capability variables are restored after every test and
// every host double a test started is closed, so no test leaks state or sockets into the next.
import { afterEach, beforeEach } from "vitest";
import type { OpenSeekHostDouble } from "../../src/testing/openseek-doubles.js";

const VARIABLES = ["OPENSEEK_PTC", "OPENSEEK_MCP"] as const;

/** Registers hooks and returns `track`, which closes the given double after the current test. */
export function useOpenSeekLifecycle(): (double: Promise<OpenSeekHostDouble>) => Promise<OpenSeekHostDouble> {
  const saved = new Map<string, string | undefined>();
  const started: OpenSeekHostDouble[] = [];
  beforeEach(() => {
    for (const name of VARIABLES) {
      saved.set(name, process.env[name]);
      delete process.env[name];
    }
  });
  afterEach(async () => {
    for (const name of VARIABLES) {
      const value = saved.get(name);
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await Promise.all(started.splice(0).map((double) => double.close()));
  });
  return async (double) => {
    const started_ = await double;
    started.push(started_);
    return started_;
  };
}

/** A promise and the function that resolves it, for replies a test releases itself. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Resolves once `condition()` holds, checking every few milliseconds (the test's own timeout bounds it). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** The error `promise` rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}
