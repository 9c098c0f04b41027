/**
 * @posoco/ears/host: run protocol 1 guests. `runHost` hosts a session over any Wire (an in-memory
 * pair, a StreamWire); `runGuest` runs a guest as a child process over its stdio. Both resolve with a
 * {@link RunReport} and never reject.
 */
export { runHost } from "./run-host.js";
export { runGuest, DEFAULT_KILL_GRACE_MS } from "./run-guest.js";
export { DEFAULT_HOST_LIMITS } from "./settings.js";
export { HostFailureCode, HostReplyCode } from "./report/codes.js";
export { modelResult, isHostFailure, isPaused, isFailureOutcome, type ModelResult } from "./report/model-result.js";
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
  RunSucceeded,
  RunFailedOutcome,
  RunBroken,
  RunPaused,
  GuestCommand,
  RemoteRunner,
  RemoteWorkerState,
  TraceSetting,
  TraceOptions,
  TracerLike,
  TraceContextLike,
  LimitEnforcer,
  LimitState,
  ResourceLimitName,
  ResourceUsage,
} from "./api/types.js";
export { limitSupport, type Confinement, type LimitSupport } from "./limits/limits.js";
export type { SandboxOptions, SandboxReport, SandboxSetting } from "./sandbox/types.js";
export { runCode, type CodeOptions } from "./code/run-code.js";
export { resumeCode, type ResumeOptions } from "./approvals/resume.js";
export { ApprovalTokenError, TOKEN_VERSION, type ApprovalTokenProblem } from "./approvals/token.js";
export {
  DEFAULT_REDIS_LEDGER_TTL_MS,
  fileLedger,
  memoryLedger,
  redisLedger,
  type ApprovalLedger,
  type RedisLedgerClient,
  type RedisLedgerOptions,
} from "./approvals/ledger.js";
export {
  requireApproval,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  type ApprovalCall,
  type ApprovalDecision,
  type ApprovalOptions,
  type ApprovalRecord,
  type ApprovalRule,
  type ApprovalToken,
  type PausedRun,
  type ResumeDecision,
} from "./approvals/approval.js";
export { createRunPool, DEFAULT_POOL_SIZE, type RunPool, type RunPoolOptions } from "./code/run-pool.js";
export { createRunAdmission, defaultRunAdmission, type RunAdmission, type RunAdmissionOptions } from "./engine/admission.js";
export { closeTypeChecker } from "./code/warm-checker.js";
export {
  createSession,
  openSession,
  DEFAULT_WORKSPACE_BYTES,
  type Session,
  type SessionOptions,
  type WorkspaceEntry,
} from "./workspace/index.js";
export {
  connectMcpServers,
  mcpConfig,
  readMcpConfig,
  McpFailureCode,
  type McpConfig,
  type McpServerConfig,
  type McpConnectOptions,
  type McpConnection,
  type McpSpecs,
} from "./connectors/mcp.js";
export { fetchCapability, FETCH_SPEC, FetchFailureCode, type FetchCapabilityOptions, type ResolvedAddress } from "./connectors/fetch.js";
export { jsonSchema, type JsonSchema } from "../contract/json-schema.js";
export { composeContracts, type ComposedSpecs, type ContractPart } from "../contract/compose.js";
// Recording and replaying production runs: the transcript `ears timeline` draws and `ears replay` replays.
export type { RunRecorder } from "./observe/record.js";
export {
  recordTo,
  recordToStream,
  readTranscript,
  TranscriptError,
  type Recorder,
  type RecordOptions,
  type ReadTranscriptOptions,
  type TranscriptEntry,
  type TranscriptNote,
  type Direction,
} from "../transcripts/transcript.js";
export {
  replayGuestCommand,
  REPLAY_DIVERGED,
  type ReplayCommand,
  type ReplayOptions,
  type ReplayReport,
  type ReplayMatched,
  type ReplayDiverged,
} from "../transcripts/replay.js";
