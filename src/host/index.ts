/**
 * @posoco/ears/host: run protocol 1 guests. `runHost` hosts a session over any Wire (an in-memory
 * pair, a StreamWire); `runGuest` runs a guest as a child process over its stdio. Both resolve with a
 * {@link RunReport} and never reject.
 */
export { runHost } from "./run-host.js";
export { runGuest, DEFAULT_KILL_GRACE_MS } from "./run-guest.js";
export { DEFAULT_HOST_LIMITS } from "./settings.js";
export { HostFailureCode, HostReplyCode } from "./codes.js";
export type {
  Capability,
  Capabilities,
  CapabilityContext,
  HostLimits,
  HostOptions,
  LogEntry,
  CallRecord,
  HostFailure,
  RunReport,
  GuestCommand,
  TraceSetting,
  TraceOptions,
  TracerLike,
  TraceContextLike,
} from "./types.js";
export type { SandboxOptions, SandboxReport, SandboxSetting } from "./sandbox/types.js";
export { runCode, type CodeOptions } from "./code/run-code.js";
