/**
 * runHost: the host engine over any wire, as the public API offers it. It checks the options, starts a
 * session (session.ts) and releases the wire when the session is over.
 */
import { performance } from "node:perf_hooks";
import type { Wire } from "../wires/wire.js";
import { hostSession, type SessionHooks } from "./engine/session.js";
import { hostSettings, RESOURCE_LIMITS } from "./settings.js";
import { traced } from "./observe/tracing.js";
import type { HostOptions, RunReport } from "./api/types.js";

/**
 * Hosts one session over any wire: the host end of `createLinkedPair()`, or a `StreamWire` over a
 * guest's stdout and stdin. Resolves with the run's report; never rejects. When the session is over
 * the wire's `close` is called (not awaited). Invalid options throw synchronously (TypeError or
 * RangeError) before anything is sent.
 *
 * @example
 * const [guestEnd, hostEnd] = createLinkedPair();
 * void serve({ wire: guestEnd, run: (ears) => ears.call("greet", "Ada") });
 * const report = await runHost(hostEnd, { capabilities: { greet: (name) => `hello ${name}` } });
 * report.outcome; // { status: "success", content: "hello Ada" }
 */
export function runHost(wire: Wire, options?: HostOptions): Promise<RunReport> {
  if (typeof wire?.send !== "function" || typeof wire.receive !== "function") {
    throw new TypeError("runHost: the first argument must be a Wire (an object with send and receive)");
  }
  const settings = hostSettings(options, "runHost");
  // A wire has no process to bound: a resource limit asked for here would be silently ignored.
  const resource = RESOURCE_LIMITS.find((name) => options?.limits?.[name] !== undefined);
  if (resource !== undefined) {
    throw new TypeError(
      `runHost: limits.${resource} bounds a guest process (runGuest, runCode); runHost runs over a wire and cannot enforce it`,
    );
  }
  const hooks: SessionHooks = {
    startedAt: performance.now(),
    closeGraceMs: settings.limits.closeGraceMs,
    release(failure) {
      try {
        const closing = wire.close?.(failure === undefined ? undefined : new Error(failure.message));
        if (closing !== undefined) Promise.resolve(closing).catch(() => {});
      } catch {
        // Releasing is best effort: the session is over either way.
      }
    },
  };
  return traced(settings.trace, { api: "runHost", input: settings.input }, (observer) =>
    hostSession(wire, settings, { ...hooks, observer }).then((result) => result.report),
  );
}
