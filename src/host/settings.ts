/**
 * Host options checked and filled in with their defaults, once, before a run starts. Invalid options
 * are a programming error: they throw synchronously (TypeError or RangeError) so a run never starts
 * half-configured; once a run has started its promise never rejects.
 */
import { MAX_TIMER_MS } from "../protocol/timers.js";
import { jsonProblem, type Json } from "../protocol/json.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../protocol/frames.js";
import { approvalSettings, checkApprovalRule, type ApprovalSettings } from "./approvals/approval.js";
import type { Capabilities, HostLimits, HostOptions, LogEntry, TraceSetting } from "./api/types.js";

/** The defaults of every {@link HostLimits} field. */
export const DEFAULT_HOST_LIMITS: Readonly<Required<HostLimits>> = Object.freeze({
  callTimeoutMs: 120_000,
  runTimeoutMs: Infinity,
  helloTimeoutMs: 10_000,
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  maxResultBytes: DEFAULT_MAX_FRAME_BYTES,
  maxInFlight: 1024,
  maxRunningHandlers: 8,
  maxStderrBytes: 64 * 1024,
  maxLogs: 10_000,
  maxLogBytes: 16 * 1024 * 1024,
  maxLogEntryBytes: 1024 * 1024,
  maxReplyBytes: DEFAULT_MAX_FRAME_BYTES,
  maxCallRecords: 100_000,
  maxCallPayloadChars: 16 * 1024 * 1024,
  maxUnreadChars: 16 * 1024 * 1024,
  maxScatteredIds: 65_536,
  closeGraceMs: 2000,
  memoryBytes: 1024 * 1024 * 1024,
  processes: 256,
  cpuTimeMs: Infinity,
  tmpBytes: 256 * 1024 * 1024,
});

/** The limits on what a guest process tree consumes (runGuest/runCode): enforced by the OS, not the session. */
export const RESOURCE_LIMITS = ["memoryBytes", "processes", "cpuTimeMs", "tmpBytes"] as const satisfies readonly (keyof HostLimits)[];

/** Options after checking: every limit set, `allowed` a fresh array. */
export interface HostSettings {
  allowed: string[];
  input: Json;
  capabilities: Capabilities;
  onLog: ((log: LogEntry) => void) | undefined;
  onFrame: HostOptions["onFrame"];
  limits: Required<HostLimits>;
  signal: AbortSignal | undefined;
  trace: TraceSetting | undefined;
  approval: ApprovalSettings | undefined;
}

// Deadlines that may be Infinity (none); Node's timers cannot wait longer than MAX_TIMER_MS, so longer ones mean none too.
const DEADLINES = new Set<keyof HostLimits>(["callTimeoutMs", "runTimeoutMs", "helloTimeoutMs", "closeGraceMs"]);
// Limits that may be Infinity (none); the others must be finite.
const UNBOUNDED_OK = new Set<keyof HostLimits>([...DEADLINES, ...RESOURCE_LIMITS]);
// Limits that are counts or byte sizes: positive integers.
const INTEGER = new Set<keyof HostLimits>([
  "maxFrameBytes",
  "maxResultBytes",
  "maxInFlight",
  "maxRunningHandlers",
  "maxStderrBytes",
  "maxLogs",
  "maxLogBytes",
  "maxLogEntryBytes",
  "maxReplyBytes",
  "maxCallRecords",
  "maxCallPayloadChars",
  "maxUnreadChars",
  "maxScatteredIds",
  "memoryBytes",
  "processes",
  "tmpBytes",
]);

/** Checks `options` and fills in the defaults. Throws TypeError or RangeError naming the bad option. */
export function hostSettings(options: HostOptions | undefined, caller: string): HostSettings {
  const o = options ?? {};
  if (typeof o !== "object") throw new TypeError(`${caller}: options must be an object`);
  const capabilities = o.capabilities ?? {};
  if (typeof capabilities !== "object" || capabilities === null) {
    throw new TypeError(`${caller}: options.capabilities must be an object of handler functions`);
  }
  for (const [name, handler] of Object.entries(capabilities)) {
    if (typeof handler !== "function") {
      throw new TypeError(`${caller}: options.capabilities[${JSON.stringify(name)}] must be a function (args, ctx) => answer`);
    }
    checkApprovalRule(handler, name, caller);
  }
  const allowed = o.allowed === undefined ? Object.keys(capabilities) : o.allowed;
  if (!Array.isArray(allowed) || !allowed.every((name) => typeof name === "string")) {
    throw new TypeError(`${caller}: options.allowed must be an array of capability names (strings)`);
  }
  const input = o.input === undefined ? null : o.input;
  const problem = jsonProblem(input);
  if (problem !== undefined) throw new TypeError(`${caller}: options.input cannot be sent as JSON unchanged: ${problem}`);
  for (const key of ["onLog", "onFrame"] as const) {
    if (o[key] !== undefined && typeof o[key] !== "function") throw new TypeError(`${caller}: options.${key} must be a function`);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new TypeError(`${caller}: options.signal must be an AbortSignal`);
  }
  return {
    allowed: [...allowed],
    input,
    capabilities,
    onLog: o.onLog,
    onFrame: o.onFrame,
    limits: hostLimits(o.limits, caller),
    signal: o.signal,
    trace: traceSetting(o.trace, caller),
    approval: approvalSettings(o.approval, caller),
  };
}

/** Checks `options.trace` (the tracer and parent are only checked for the methods ears calls). */
function traceSetting(trace: TraceSetting | undefined, caller: string): TraceSetting | undefined {
  if (trace === undefined || trace === false) return trace;
  if (typeof trace !== "object" || trace === null) throw new TypeError(`${caller}: options.trace must be false or an object`);
  if (trace.tracer !== undefined && typeof trace.tracer?.startSpan !== "function") {
    throw new TypeError(`${caller}: options.trace.tracer must be an OpenTelemetry Tracer (an object with startSpan)`);
  }
  if (trace.parent !== undefined && typeof trace.parent?.getValue !== "function") {
    throw new TypeError(`${caller}: options.trace.parent must be an OpenTelemetry Context (an object with getValue)`);
  }
  const { payloads } = trace;
  if (payloads !== undefined && typeof payloads !== "boolean") {
    const max = typeof payloads === "object" && payloads !== null ? payloads.maxChars : undefined;
    if (!(typeof max === "number" && Number.isSafeInteger(max) && max > 0)) {
      throw new RangeError(`${caller}: options.trace.payloads must be a boolean or { maxChars: a positive integer }`);
    }
  }
  return trace;
}

function hostLimits(limits: HostLimits | undefined, caller: string): Required<HostLimits> {
  const resolved = { ...DEFAULT_HOST_LIMITS };
  if (limits === undefined) return resolved;
  if (typeof limits !== "object" || limits === null) throw new TypeError(`${caller}: options.limits must be an object`);
  for (const key of Object.keys(limits) as (keyof HostLimits)[]) {
    const value = limits[key];
    if (value === undefined) continue;
    if (!(key in DEFAULT_HOST_LIMITS)) throw new TypeError(`${caller}: unknown limit ${JSON.stringify(key)}`);
    const valid =
      typeof value === "number" &&
      value > 0 &&
      ((INTEGER.has(key) ? Number.isSafeInteger(value) : Number.isFinite(value)) || (value === Infinity && UNBOUNDED_OK.has(key)));
    if (!valid) {
      const expected = INTEGER.has(key)
        ? `a positive integer${UNBOUNDED_OK.has(key) ? " (or Infinity)" : ""}`
        : "a positive number of milliseconds (or Infinity)";
      throw new RangeError(`${caller}: limits.${key} must be ${expected}, got ${String(value)}`);
    }
    // Node clamps longer delays to 1 ms with a warning; anything longer means "no deadline" instead.
    resolved[key] = value > MAX_TIMER_MS && DEADLINES.has(key) ? Infinity : value;
  }
  return resolved;
}

/** Checks a grace period such as `killGraceMs`. */
export function graceMs(value: number | undefined, fallback: number, name: string, caller: string): number {
  if (value === undefined) return fallback;
  if (!(typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= MAX_TIMER_MS)) {
    throw new RangeError(`${caller}: ${name} must be a finite number of milliseconds >= 0, got ${String(value)}`);
  }
  return value;
}
