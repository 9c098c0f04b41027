/**
 * The codes the host produces: failure codes of a whole run, and failure codes of the replies it sends
 * on its own (besides whatever the capability handlers return).
 */
import { FailureCode } from "../../protocol/outcome.js";
import type { HostFailureCode as HostFailureCodeType } from "../api/types.js";

/** The run-level failure codes, as values (the type of the same name is their union). */
export const HostFailureCode = {
  /** The guest's output ended (it exited cleanly, or closed stdout) before it said hello. */
  NoHello: "NoHello",
  /** No hello within `helloTimeoutMs`. */
  HelloTimeout: "HelloTimeout",
  /** The guest's hello names a protocol this host does not speak; it was not invoked. */
  ProtocolMismatch: "ProtocolMismatch",
  /** A line that is not a frame, a frame out of sequence, a reused request id, a frame after the result. */
  ProtocolViolation: "ProtocolViolation",
  /** A guest frame over `maxFrameBytes`. */
  FrameTooLarge: "FrameTooLarge",
  /** The guest's output ended before its result. */
  NoResult: "NoResult",
  /** runGuest: the child exited with a non-zero code or a signal, on its own, before its result. */
  GuestCrashed: "GuestCrashed",
  /** The run went past `runTimeoutMs`. */
  RunTimeout: "RunTimeout",
  /** The host's AbortSignal fired. */
  Aborted: "Aborted",
  /** runGuest: the command could not be started (ENOENT, EACCES, ...). */
  SpawnFailed: "SpawnFailed",
  /** runGuest: a sandbox was required (`sandbox: true` or options) but none can run here; the guest was not started. */
  SandboxUnavailable: "SandboxUnavailable",
  /** runCode: the code body does not compile (syntax, or types with `typecheck: true`); no process was started. */
  CompileError: "CompileError",
  /** runGuest: the guest tree went past `limits.memoryBytes` and the kernel killed it. */
  MemoryLimit: "MemoryLimit",
  /** runGuest: the guest tree used more CPU time than `limits.cpuTimeMs`; the run was stopped. */
  CpuLimit: "CpuLimit",
  /**
   * Added, runGuest: the guest tree went past `limits.processes`: seen by the host's watchdog (no cgroup), or,
   * with a cgroup, a run that failed after the kernel refused it processes at the limit.
   */
  ProcessLimit: "ProcessLimit",
  /** The guest's result frame was over `limits.maxResultBytes`; the outcome was not kept. */
  ResultTooLarge: "ResultTooLarge",
  /** A remote runner's connection ended before its run did; `mayHaveExecuted` says whether the guest was invoked. */
  RunnerLost: "RunnerLost",
  /** resumeCode: the body took another path than before the pause (another call at a step); nothing ran for that call. */
  ReplayDiverged: "ReplayDiverged",
  /** Added: the run admission's queue was full (`maxQueuedRuns`); nothing was started, the run may be tried again. */
  RunQueueFull: "RunQueueFull",
  /** Added: the run waited `queueTimeoutMs` for a slot of the run admission; nothing was started, it may be tried again. */
  QueueTimeout: "QueueTimeout",
  /**
   * Added: a session's run left its workspace past its bounds where the host, not the kernel, counts them (a "copy"
   * workspace's files; a file's holes), or unreadable; nothing of the run was kept, the workspace is as it was before.
   */
  WorkspaceNotKept: "WorkspaceNotKept",
} as const satisfies { [Code in HostFailureCodeType]: Code };
/** Why a session did not end in a valid result (the union of the values above). */
export type HostFailureCode = HostFailureCodeType;

/** Failure codes of replies the host sends itself. Handlers may return any code. */
export const HostReplyCode = {
  /** The name is outside `allowed`; no handler ran. */
  CapabilityDenied: FailureCode.CapabilityDenied,
  /** Added: a contract's `arguments` schema rejected the guest's arguments (`implement`); no handler ran. */
  InvalidArguments: FailureCode.InvalidArguments,
  /** The handler threw (content: its message), or answered with a value that cannot be sent unchanged. */
  CapabilityFailed: "CapabilityFailed",
  /** The name is allowed but the host has no handler for it. */
  CapabilityMissing: "CapabilityMissing",
  /** No answer within `callTimeoutMs`; the call may have run. */
  CallTimedOut: "CallTimedOut",
  /** `maxInFlight` calls were already running or waiting to start; this one did not run. */
  TooManyCalls: "TooManyCalls",
  /** Added: the call needed approval and was denied (the reason is in the content); its handler did not run. */
  ApprovalDenied: "ApprovalDenied",
  /** Added: no decision came within `approval.timeoutMs`; the handler did not run. */
  ApprovalTimedOut: "ApprovalTimedOut",
} as const;
