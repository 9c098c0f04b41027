/**
 * The public types of `@posoco/ears/host`: what a host passes in (capabilities, limits, callbacks) and
 * what it gets back (the run's report). The engine is in `run-host.ts`, the child-process runner in
 * `run-guest.ts`.
 */
import type { Json } from "../json.js";
import type { Outcome } from "../outcome.js";

/** What a capability handler receives besides its arguments. */
export interface CapabilityContext {
  /** The capability name the guest called. */
  name: string;
  /** The guest's request id (unique in the run). */
  id: number;
  /**
   * Aborted when the answer is no longer wanted: the call's deadline passed (reason: a `TimeoutError`
   * DOMException), or the run ended (reason: an `AbortError` DOMException). Pass it on to `fetch`, child
   * processes, etc.; a handler that ignores it keeps running, but its late answer is dropped.
   */
  signal: AbortSignal;
}

/**
 * A capability handler. It returns (or resolves to) an Outcome made with `Outcome.success/failure`, a
 * string (success with that content), `undefined` (success with content ""), or any other JSON value
 * (success, `structured` = the value). A value JSON would alter is refused with a `CapabilityFailed`
 * reply that says why; a throw becomes a `CapabilityFailed` reply whose content is the error message.
 * A plain object shaped like an outcome is JSON like any other: build outcomes with the helpers.
 */
export type Capability = (args: Json, ctx: CapabilityContext) => unknown;

/** Handlers by capability name. */
export type Capabilities = Record<string, Capability>;

/** Bounds on one run. Every field is optional; see {@link DEFAULT_HOST_LIMITS} for the defaults. */
export interface HostLimits {
  /**
   * Per call, default 120_000 ms. A call not answered in time gets a failure reply `CallTimedOut` whose
   * content says the call may have run; its handler's signal is aborted and its late answer dropped.
   */
  callTimeoutMs?: number;
  /** The whole run, from start to the result; default none (Infinity). Past it: failure `RunTimeout`. */
  runTimeoutMs?: number;
  /** Time allowed for the guest's `hello`, default 10_000 ms. Past it: failure `HelloTimeout`. */
  helloTimeoutMs?: number;
  /** Largest guest -> host frame in bytes, default 64 MiB. A larger one ends the run: `FrameTooLarge`. */
  maxFrameBytes?: number;
  /**
   * Handlers running at once, default 1024. A request over it is answered at once with a failure reply
   * `TooManyCalls`. A handler still running after its call timed out keeps its slot until it settles.
   */
  maxInFlight?: number;
  /** Bytes of the guest's stderr kept (the tail), default 64 KiB. runGuest only. */
  maxStderrBytes?: number;
  /** Log entries kept in the report, default 10_000: older ones are dropped and counted; `onLog` still sees all. */
  maxLogs?: number;
  /** Added: total UTF-8 bytes of log content kept in the report, default 16 MiB (the newest entry is always kept). */
  maxLogBytes?: number;
  /**
   * Added: largest reply frame the host sends, in bytes, default 64 MiB (the guest's default frame cap).
   * A handler answer that would exceed it is replaced by a `CapabilityFailed` reply saying so.
   */
  maxReplyBytes?: number;
  /** Added: call records kept in the report, default 100_000; later calls are still answered, and counted. */
  maxCallRecords?: number;
  /**
   * Added: runHost only: after the result, how long to wait for the guest to end its output before
   * releasing the wire, default 2000 ms (a frame after the result is a `ProtocolViolation`).
   */
  closeGraceMs?: number;
}

/** Options for {@link runHost}. */
export interface HostOptions {
  /** Capability names the guest may call; default `Object.keys(capabilities)`. Sent in `invoke`. */
  allowed?: readonly string[];
  /** The guest's input, sent in `invoke`; default null. Must be JSON that survives a round trip unchanged. */
  input?: Json;
  /** Handlers by name. A name in `allowed` without a handler is answered `CapabilityMissing`. */
  capabilities?: Capabilities;
  /** Called live, in order, for every log frame (even those the report drops). A throw is ignored. */
  onLog?: (log: LogEntry) => void;
  /**
   * Called for every line both ways, as it is read or before it is written (for transcripts). Guest lines
   * are passed even when they are not valid frames. A throw is ignored.
   *
   * Back-pressure: when it returns a promise (any thenable) for a guest line, e.g. a transcript sink
   * over its high-water mark, the host reads no further guest frame until the promise settles, so a
   * slow sink slows the guest instead of growing memory. The run's deadlines still apply while it
   * waits. Any other return value is ignored (the return type is `unknown` so `push`-style callbacks fit).
   */
  onFrame?: (direction: "guest" | "host", line: string) => unknown;
  /** Bounds on the run. */
  limits?: HostLimits;
  /** Aborting it ends the run: failure `Aborted` (runGuest stops the child first). */
  signal?: AbortSignal;
}

/** One log frame from the guest. */
export interface LogEntry {
  level: string;
  content: string;
  /** Milliseconds since the run started. */
  atMs: number;
}

/** One `request` the guest made. */
export interface CallRecord {
  id: number;
  name: string;
  arguments: Json;
  /** The reply sent; absent when none was (the run ended while the handler ran). */
  outcome?: Outcome;
  /** From the request's arrival to its reply (or to the end of the run when no reply was sent). */
  durationMs: number;
  /** True when the name was outside `allowed`: answered `CapabilityDenied`, no handler ran. */
  denied?: boolean;
}

/** Why a session did not end in a valid result. See docs/host.md for when each is used. */
export type HostFailureCode =
  | "NoHello"
  | "HelloTimeout"
  | "ProtocolMismatch"
  | "ProtocolViolation"
  | "FrameTooLarge"
  | "NoResult"
  | "GuestCrashed"
  | "RunTimeout"
  | "Aborted"
  | "SpawnFailed";

/** The session-level failure in a {@link RunReport}. */
export interface HostFailure {
  code: HostFailureCode;
  /** What happened and, where it helps, what to do; includes the offending line's excerpt for violations. */
  message: string;
}

/** Everything a run produced. */
export interface RunReport {
  /** A result frame arrived, its outcome is a success, and nothing went wrong after it. */
  ok: boolean;
  /** The guest's result, when one arrived. */
  outcome?: Outcome;
  /** Set when the session did not end in a valid result (or broke the protocol after it). */
  failure?: HostFailure;
  /** The guest's hello, when one arrived. */
  hello?: { protocol: number; sdk?: string };
  /** The newest log entries, at most `maxLogs`. */
  logs: LogEntry[];
  /** How many log entries the report dropped (all were passed to `onLog`). */
  droppedLogs: number;
  /** The guest's requests in arrival order, at most `maxCallRecords`. */
  calls: CallRecord[];
  /** Added: how many call records were dropped past `maxCallRecords` (those calls were still answered). */
  droppedCalls?: number;
  durationMs: number;
  /** runGuest only: how the child exited. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** runGuest only: the last `maxStderrBytes` of the child's stderr. */
  stderr?: string;
  /** Added, runGuest only: stderr bytes dropped before the kept tail. */
  droppedStderrBytes?: number;
  /** Added, runGuest only: the child's process id (absent when it could not be started). */
  pid?: number;
  /** Added, runGuest only: the signal the host had to send because the child did not exit after stdin closed. */
  forcedStop?: "SIGTERM" | "SIGKILL";
}

/** Options for {@link runGuest}: the command to run, plus everything {@link HostOptions} has. */
export interface GuestCommand extends HostOptions {
  /** The program, run without a shell (e.g. `process.execPath` or "node"). */
  command: string;
  args?: string[];
  cwd?: string;
  /** Default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Default 2000 ms: after closing stdin, wait this long, SIGTERM, wait again, SIGKILL. */
  killGraceMs?: number;
  /**
   * Called live with the guest's stderr as it arrives, decoded as UTF-8 (a character split across
   * chunks is passed whole, with the chunk that completes it). Sees everything, even what the report's
   * bounded `stderr` tail drops. A throw is ignored.
   */
  onStderr?: (chunk: string) => void;
}
