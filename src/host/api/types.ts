/**
 * The public types of `@posoco/ears/host`: what a host passes in (capabilities, limits, callbacks) and
 * what it gets back (the run's report). The engine is in `session.ts` (runHost in `run-host.ts`), the
 * child-process runner in `run-guest.ts`.
 */
import type { Capabilities } from "../../contract/contract.js";
import type { Json } from "../../protocol/json.js";
import type { Failure, Outcome, Success } from "../../protocol/outcome.js";
import type { SandboxReport, SandboxSetting } from "../sandbox/types.js";
import type { Session } from "./session.js";
import type { ApprovalOptions, ApprovalRecord, PausedRun } from "../approvals/approval.js";

// The handler types belong to the capability contract, which the guest side shares; the host API exports them too.
export type { CapabilityContext, Capability, Capabilities } from "../../contract/contract.js";

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
   * Added: largest result the host accepts, in UTF-8 bytes of the guest's result frame (the outcome as
   * JSON plus about 40 bytes of framing); default 64 MiB (the default frame cap, so no change unless set).
   * A larger result is not kept: the run fails with `ResultTooLarge`, whose message tells the body to
   * return less (a summary, the part needed). `ears mcp` sets 1 MiB.
   */
  maxResultBytes?: number;
  /**
   * Calls accepted at once (handlers running plus calls waiting to start), default 1024. A request over
   * it is answered at once with a failure reply `TooManyCalls`. A handler still running after its call
   * timed out keeps its slot until it settles.
   */
  maxInFlight?: number;
  /**
   * Added: handlers running at once, default 8. A call over it waits, in arrival order, until a handler
   * settles, and the host reads no further guest frame meanwhile; its deadline runs while it waits. It
   * bounds the answers that exist before the host can count them: each running handler may return a
   * large answer, and all of them are in memory until the guest reads them (see docs/host.md, "Memory").
   * A handler still running after its call timed out keeps its slot until it settles.
   */
  maxRunningHandlers?: number;
  /** Bytes of the guest's stderr kept (the tail), default 64 KiB. runGuest only. */
  maxStderrBytes?: number;
  /** Log entries kept in the report, default 10_000: older ones are dropped and counted; `onLog` still sees all. */
  maxLogs?: number;
  /**
   * Added: total UTF-8 bytes of log levels and contents kept in the report, default 16 MiB: older entries
   * are dropped and counted. `onLog` still sees every entry whole.
   */
  maxLogBytes?: number;
  /**
   * Added: largest log entry (UTF-8 bytes of level plus content) the report keeps whole, default 1 MiB
   * (at most `maxLogBytes`). A larger entry is kept cut to it, the level to at most 1 KiB, with a
   * marker (see {@link LogEntry.cutBytes}); `onLog` still sees it whole.
   */
  maxLogEntryBytes?: number;
  /**
   * Added: largest reply frame the host sends, in bytes, default 64 MiB (the guest's default frame cap).
   * A handler answer that would exceed it is replaced by a `CapabilityFailed` reply saying so.
   */
  maxReplyBytes?: number;
  /** Added: call records kept in the report, default 100_000; later calls are still answered, and counted. */
  maxCallRecords?: number;
  /**
   * Added: characters (UTF-16 code units) of request and reply frames whose payloads the report keeps,
   * default 16 Mi (16 MiB for ASCII). A call whose arguments or outcome would go over it keeps its
   * name, id, duration and status only (see {@link CallRecord.argumentsDropped}); counted in
   * `droppedCallPayloads`.
   */
  maxCallPayloadChars?: number;
  /**
   * Added: characters (UTF-16 code units) of frames the guest may leave unread, default 16 Mi. Above it
   * the host reads no further requests and starts no further handlers until the guest has read back
   * down to half of it; a waiting request's deadline still runs. An answer that comes meanwhile waits as
   * the handler returned it (not encoded into a frame) and is sent then, in order.
   */
  maxUnreadChars?: number;
  /**
   * Added: request ids the host remembers above the lowest id not yet used, default 65_536. The host
   * checks that ids are unique with a low-water mark (every id up to it was used) plus the ids above
   * it; a guest that counts up from 1 keeps that set empty. A guest whose ids leave more gaps than this
   * ends the run with `ProtocolViolation`.
   */
  maxScatteredIds?: number;
  /**
   * Added: runHost only: after the result, how long to wait for the guest to end its output before
   * releasing the wire, default 2000 ms (a frame after the result is a `ProtocolViolation`).
   */
  closeGraceMs?: number;
  /**
   * Added, runGuest/runCode only: memory of the guest and everything it starts (resident memory, the page
   * cache it causes, its tmpfs `/tmp`), in bytes; default 1 GiB, Infinity for none. Past it the kernel
   * kills the guest and the run fails with `MemoryLimit`. Enforced by a cgroup; where none can be had, by
   * RLIMIT_DATA per process and the host's watchdog over the tree's resident memory (Linux); asked for where
   * nothing can enforce it, the run fails with `SandboxUnavailable` and nothing starts. See docs/host.md "Resource limits".
   */
  memoryBytes?: number;
  /**
   * Added, runGuest/runCode only: processes and threads of the guest tree at once (a Node guest uses
   * about 11 by itself); default 256, Infinity for none. Beyond it `fork`/`spawn` fail inside the guest
   * with `EAGAIN`, and the run goes on (a run that then fails is reported as `ProcessLimit`). Enforced by a
   * cgroup (pids); where none can be had, by the host's watchdog over the tree (past it the run ends with
   * `ProcessLimit`) and, for a host that is not root, RLIMIT_NPROC as a backstop.
   */
  processes?: number;
  /**
   * Added, runGuest/runCode only: CPU time (user + system) of the guest tree in milliseconds; default
   * none (Infinity: bounded by `runTimeoutMs` only). Past it the run ends with `CpuLimit`. A cgroup's
   * accounting, checked every 100 ms; without a cgroup, RLIMIT_CPU per process (whole seconds).
   */
  cpuTimeMs?: number;
  /**
   * Added, runGuest/runCode only: size of the sandbox's private `/tmp` in bytes; default 256 MiB,
   * Infinity for none. Writes beyond it fail with `ENOSPC` inside the guest. Sandboxed runs only: asked
   * for in an unconfined run, the run fails with `SandboxUnavailable`.
   */
  tmpBytes?: number;
}

/** The resource limits of {@link HostLimits} a run reports on (see {@link RunDetails.limits}). */
export type ResourceLimitName = "memoryBytes" | "processes" | "cpuTimeMs" | "tmpBytes";

/**
 * What enforced a resource limit: a cgroup (v1 or v2), a per-process rlimit set by the launcher, the host's
 * watchdog over the run's process tree (sampled through /proc every 100 ms), both of these, or bubblewrap's
 * tmpfs size. See docs/host.md "Resource limits" for what each bounds.
 */
export type LimitEnforcer = "cgroup-v1" | "cgroup-v2" | "rlimit" | "watchdog" | "rlimit+watchdog" | "bubblewrap";

/** One resource limit of a run as it was applied. */
export interface LimitState {
  /** The limit (bytes, processes, milliseconds); null when there is none. */
  value: number | null;
  /** True when the host asked for it in `limits`; false for a default. */
  requested: boolean;
  /** What enforced it; null when nothing did (no limit, or a default this machine cannot enforce). */
  enforcedBy: LimitEnforcer | null;
  /** Why a limit with a value is not enforced (a default this machine cannot enforce), or what enforcing it means. */
  note?: string;
}

/** What a run cost. See docs/host.md "Resource limits" for the accuracy of each source. */
export interface ResourceUsage {
  /**
   * Where cpuMs, peakMemoryBytes, peakProcesses and peakThreads come from: the run's cgroup; "proc", the process tree
   * sampled through Linux's /proc where there is no cgroup (a lower bound); "none" when nothing measured them.
   */
  source: "cgroup-v1" | "cgroup-v2" | "proc" | "none";
  /** CPU time, user + system, of the guest tree (and bubblewrap), in milliseconds. */
  cpuMs?: number;
  /** The most memory the guest tree held at once, in bytes (the cgroup's high-water mark). */
  peakMemoryBytes?: number;
  /**
   * The most processes the guest tree had at once (bubblewrap's two included when sandboxed), sampled: the
   * run's cgroup.procs or /proc at the guest's hello, every 100 ms, and when the result arrives. Threads are not processes.
   */
  peakProcesses?: number;
  /** The most threads (tasks) the tree had at once, which is what `limits.processes` bounds: a Node process runs about 11. */
  peakThreads?: number;
  /** Wall time of the run, as `durationMs`. */
  wallMs: number;
  /** Requests the guest made (also those the report dropped). */
  calls: number;
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
  /**
   * Added: OpenTelemetry tracing of the run (see docs/observability.md). By default, when the optional
   * peer `@opentelemetry/api` is installed and a tracer provider is registered, the run is a span (child
   * of the active context) with one child span per capability call, and the invoke frame carries its
   * `traceparent`. Without the package or a provider nothing changes. `false` turns tracing off.
   */
  trace?: TraceSetting;
  /**
   * Added: approvals inside the run (docs/approvals.md). A call needs approval when its capability says so
   * (`requiresApproval`: a contract spec's field, or `requireApproval(handler)` in a plain map) or
   * `approval.required` names it; such a call waits for `approval.decide` before its handler runs, while
   * the run's deadline (`runTimeoutMs`) and its own (`callTimeoutMs`) do not run. A denial answers the body
   * `ApprovalDenied`; no decision within `approval.timeoutMs` answers `ApprovalTimedOut`. Without this
   * option, a call that needs approval is denied.
   */
  approval?: ApprovalOptions;
}

/** How a run is traced: `false` (off), or options; default `{}` (on when a tracer provider is registered). */
export type TraceSetting = false | TraceOptions;

/** Options for tracing a run with OpenTelemetry. */
export interface TraceOptions {
  /** The tracer to make the spans with (an OpenTelemetry `Tracer`); default the global provider's tracer "@posoco/ears". */
  tracer?: TracerLike;
  /** The parent of the run span (an OpenTelemetry `Context`); default the active context when the run starts. */
  parent?: TraceContextLike;
  /**
   * Put payloads in spans: the input, the code (runCode), each call's arguments and outcome, log contents and
   * the result, each cut to `maxChars` (default 4096) characters with a note of its length. Default false:
   * spans carry names, sizes, durations, statuses and codes, never what the guest or host sent.
   */
  payloads?: boolean | { maxChars: number };
}

/** The part of an OpenTelemetry `Tracer` ears uses (typed here so the package's types need no OpenTelemetry). */
export interface TracerLike {
  startSpan(name: string, options?: unknown, context?: unknown): unknown;
}

/** An OpenTelemetry `Context` (typed here so the package's types need no OpenTelemetry). */
export interface TraceContextLike {
  getValue(key: symbol): unknown;
}

/** One log frame from the guest. */
export interface LogEntry {
  level: string;
  content: string;
  /** Milliseconds since the run started. */
  atMs: number;
  /**
   * Added, report only: set when the entry was over `maxLogEntryBytes` and was cut to fit: the UTF-8
   * bytes removed from its level and content. The cut text ends with a ` …[cut N bytes to M]` marker
   * when there is room for it. `onLog` always gets the entry whole.
   */
  cutBytes?: number;
}

/** One `request` the guest made. */
export interface CallRecord {
  id: number;
  name: string;
  /** The request's arguments; `null` when `argumentsDropped` is set. */
  arguments: Json;
  /** The reply sent; absent when none was (the run ended while the handler ran) or `outcomeDropped` is set. */
  outcome?: Outcome;
  /** Added: the reply's status, set whenever a reply was sent (also when its outcome was not kept). */
  status?: Outcome["status"];
  /** Added: the arguments were not kept: they would have gone over `maxCallPayloadChars`. */
  argumentsDropped?: true;
  /** Added: the outcome was not kept: it would have gone over `maxCallPayloadChars` (`status` remains). */
  outcomeDropped?: true;
  /**
   * From the request's arrival to its answer (or to the end of the run when none came). The reply goes out
   * then, or later when the guest leaves too much unread (see `maxUnreadChars`).
   */
  durationMs: number;
  /** True when the name was outside `allowed`: answered `CapabilityDenied`, no handler ran. */
  denied?: boolean;
  /** Added, resumeCode only: answered from the pause token (the paused run's answer); no handler ran. */
  replayed?: true;
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
  | "SpawnFailed"
  | "SandboxUnavailable"
  | "CompileError"
  | "MemoryLimit"
  | "CpuLimit"
  | "ProcessLimit"
  | "ResultTooLarge"
  | "RunnerLost"
  | "ReplayDiverged"
  | "RunQueueFull"
  | "QueueTimeout"
  | "WorkspaceNotKept";

/** The session-level failure in a {@link RunReport}. */
export interface HostFailure {
  code: HostFailureCode;
  /** What happened and, where it helps, what to do; includes the offending line's excerpt for violations. */
  message: string;
  /**
   * Added, `RunnerLost` only: whether the guest may have run (it was invoked before the connection was
   * lost). The calls it made that the host answered are in the report's `calls`.
   */
  mayHaveExecuted?: boolean;
}

/** What every report has, whatever the verdict. */
export interface RunDetails {
  /** The guest's hello, when one arrived. */
  hello?: { protocol: number; sdk?: string };
  /** The newest log entries, at most `maxLogs`. */
  logs: LogEntry[];
  /** How many log entries the report dropped (all were passed to `onLog`). */
  droppedLogs: number;
  /** Added: UTF-8 bytes of log levels and contents the report dropped or cut (all were passed to `onLog`). */
  droppedLogBytes?: number;
  /** The guest's requests in arrival order, at most `maxCallRecords`. */
  calls: CallRecord[];
  /** How many call records were dropped past `maxCallRecords` (those calls were still answered). */
  droppedCalls?: number;
  /** How many kept call records lost their arguments, their outcome or both to `maxCallPayloadChars`. */
  droppedCallPayloads?: number;
  /** Added: each approval asked in the run, in the order asked: its decision, who decided and how long it took. */
  approvals?: ApprovalRecord[];
  /** Milliseconds from the start of the run to its report. */
  durationMs: number;
  /** runGuest only: how the child exited. */
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  /** runGuest only: the last `maxStderrBytes` of the child's stderr. */
  stderr?: string;
  /** runGuest only: stderr bytes dropped before the kept tail. */
  droppedStderrBytes?: number;
  /** runGuest only: the child's process id (absent when it could not be started). */
  pid?: number;
  /** runGuest only: the signal the host had to send because the child did not exit after stdin closed. */
  forcedStop?: "SIGTERM" | "SIGKILL";
  /**
   * Added, runGuest only: what confined the guest (the mechanism and the policy in effect), or null
   * when it ran unconfined (or was never started).
   */
  sandbox?: SandboxReport | null;
  /** Added, runGuest only: set when `sandbox: "auto"` ran the guest unconfined; says why no OS sandbox was used. */
  sandboxFallback?: string;
  /** Added, runGuest only: each resource limit, its value, whether it was asked for and what enforced it. */
  limits?: Record<ResourceLimitName, LimitState>;
  /**
   * Added, runGuest only: what the run cost (absent when the guest was never started). For a pooled run
   * (`pooled`), CPU time and peaks count from the runner's start, its warm-up included; `wallMs` from the
   * moment the run took the runner.
   */
  usage?: ResourceUsage;
  /**
   * Added, runCode with a `pool` only: true when the run was given to (or waited for) a runner of a run
   * pool (`createRunPool`) instead of starting one of its own. `durationMs` then counts from the moment
   * the run took the runner.
   */
  pooled?: true;
}

/** A run whose result frame arrived, whose outcome is a success, and after which nothing went wrong. */
export interface RunSucceeded extends RunDetails {
  ok: true;
  outcome: Success;
  failure?: undefined;
  paused?: undefined;
}

/** A run whose guest returned a failure outcome (and may also have broken the protocol after it). */
export interface RunFailedOutcome extends RunDetails {
  ok: false;
  outcome: Failure;
  failure?: HostFailure;
  paused?: undefined;
}

/** A run that did not end in a valid result, or broke the protocol after it: `failure` says how. */
export interface RunBroken extends RunDetails {
  ok: false;
  /** The guest's result, when one arrived before the session broke. */
  outcome?: Outcome;
  failure: HostFailure;
  paused?: undefined;
}

/**
 * Added: a run that paused for approval (runCode, resumeCode): not a failure, and not over. Store
 * `paused.token`; `resumeCode(token, { decisions })` runs the body again and goes on (docs/approvals.md).
 */
export interface RunPaused extends RunDetails {
  ok: false;
  outcome?: undefined;
  failure?: undefined;
  paused: PausedRun;
}

/**
 * Everything a run produced: a union on `ok`. After `if (!report.ok) ...` returns or throws,
 * `report.outcome` is a {@link Success}. When `ok` is false the run ended one of three ways, and only one
 * of them sets `failure`: the guest's result is a failure (the body returned one or threw: `outcome` is a
 * {@link Failure}, `failure` is absent; `isFailureOutcome`), the host ended the run (`failure`;
 * `isHostFailure`), or it paused for approval (`paused`; `isPaused`). `modelResult(report)` turns any of
 * them into the text a model should see.
 */
export type RunReport = RunSucceeded | RunFailedOutcome | RunBroken | RunPaused;

/** @internal The report as the engines build it, before its fields settle into one member of {@link RunReport}. */
export interface RunReportFields extends RunDetails {
  ok: boolean;
  outcome?: Outcome;
  failure?: HostFailure;
  paused?: PausedRun;
}

/** Options for {@link runGuest}: the command to run, plus everything {@link HostOptions} has. */
export interface GuestCommand extends HostOptions {
  /** The program, run without a shell (e.g. `process.execPath` or "node"). */
  command: string;
  args?: string[];
  /**
   * The guest's working directory, default this process's. Sandboxed, it is shown read-only (its secrets
   * masked); `/`, a home directory or the temporary directory's root is refused unless
   * `sandbox.allowBroadPaths`. runCode's default is a private empty directory instead.
   */
  cwd?: string;
  /**
   * Added: a session (`createSession`): its workspace is the working directory, writable, kept after the
   * run and seen by the session's next run only. The run is sandboxed (`sandbox: false` is a TypeError,
   * "auto" required); not with `cwd`. A session's runs go one at a time. See docs/host.md, "Sessions".
   */
  session?: Session;
  /**
   * Unconfined: the guest's environment, default this process's. Sandboxed: where the names in
   * `sandbox.env` (and LANG, TZ) are looked up; nothing else of it reaches the guest.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Added: how to confine the guest; default "auto" (confined where the OS offers a sandbox, see
   * docs/host.md "Threat model"). `true` or an options object requires it: without one the run fails
   * with `SandboxUnavailable` and nothing is started. `false`: unconfined.
   */
  sandbox?: SandboxSetting;
  /**
   * Default 2000 ms: after closing stdin, wait this long, SIGTERM the guest's process group, wait again,
   * SIGKILL it. Also how long descendants left in the group after the guest exits get between SIGTERM and SIGKILL.
   */
  killGraceMs?: number;
  /**
   * Called live with the guest's stderr as it arrives, decoded as UTF-8 (a character split across
   * chunks is passed whole, with the chunk that completes it). Sees everything, even what the report's
   * bounded `stderr` tail drops. A throw is ignored.
   */
  onStderr?: (chunk: string) => void;
  /**
   * Added: run the guest on another machine through a remote runner (see docs/remote.md): the host starts
   * `remote.command remote.args` (e.g. `ssh -T worker ears runner`), which runs `ears runner` there, and
   * appends `-- command args` to it; the guest runs under that machine's sandbox and limits, its calls
   * answered here. A list spreads runs over several runners (the least loaded first). `cwd`, `env` and a
   * sandbox options object name this machine's paths and are refused with it (TypeError).
   */
  remote?: RemoteRunner | readonly RemoteRunner[];
  /**
   * Added: the run admission the run waits in for a slot before its process starts (`createRunAdmission`);
   * default the process-wide one (`defaultRunAdmission()`), shared by every run and pool without their
   * own. A run beyond its bound waits (not counted in `runTimeoutMs`), or fails with `RunQueueFull` or
   * `QueueTimeout` and nothing started. A `limits.memoryBytes` over its memory budget throws a RangeError.
   * A pooled run has its pool's. See docs/host.md, "Run admission".
   */
  admission?: RunAdmission;
  /**
   * Added: record the run as it happens into a transcript, the file `ears timeline` draws and `ears replay`
   * replays: pass `recordTo("run.ndjson", { timed: true })` (from `@posoco/ears/host`). Every frame, the
   * guest's stderr, runCode's body and, at the end, the report go into it, besides `onFrame` and `onStderr`.
   * Close it after the run (`await recorder.close()`, which rejects if a write failed). See docs/observability.md.
   */
  record?: RunRecorder;
}

/** One worker of a remote runner list, as a pool reports it (`pool.workers`). */
export interface RemoteWorkerState {
  command: string;
  args: readonly string[];
  /** Runners of this worker whose command is running (waiting or serving a run). */
  running: number;
  /** Starts that failed in a row (the command ended before the runner said what confined it). */
  failuresInARow: number;
  /** While it is taken out: milliseconds until it is tried again. */
  retryInMs?: number;
  /** Why its last start failed, until one succeeds. */
  lastFailure?: string;
}

/** A remote runner: the local command that starts `ears runner` on another machine, with a stream to it. */
export interface RemoteRunner {
  /** The program, run here without a shell (e.g. "ssh", "kubectl", "docker"). */
  command: string;
  /** Its arguments, ending with the far end's `ears runner` command (e.g. `["-T", "worker", "ears", "runner"]`). */
  args?: readonly string[];
}

/** A bound on concurrent runs, made by `createRunAdmission`; pass it as `admission` to share it. */
export interface RunAdmission {
  readonly maxConcurrentRuns: number;
  readonly maxQueuedRuns: number;
  readonly queueTimeoutMs: number;
  readonly memoryBytes: number;
  /** How many slots are held right now (guest processes alive or about to be spawned). */
  readonly running: number;
  /** How many runs are waiting for a slot right now. */
  readonly queued: number;
  /** The sum of the `memoryBytes` of the slots held right now. */
  readonly memoryInUse: number;
}

/**
 * What `record` of runGuest and runCode takes: `recordTo(path)`'s recorder (from `@posoco/ears/host`), or any
 * object with these methods. `onFrame` receives every frame, `stderr` the guest's stderr, `code` runCode's body
 * and `report` the report when the run is over; closing it is the caller's, after the run.
 */
export interface RunRecorder {
  readonly onFrame: (direction: "guest" | "host", line: string) => unknown;
  stderr(chunk: string): void;
  report(report: RunReport): void;
  code?(body: string): void;
}
