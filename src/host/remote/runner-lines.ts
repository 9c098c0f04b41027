/**
 * The lines a host and a remote runner (`ears runner`) exchange around the guest's own protocol 1 stream
 * (wire/PROTOCOL.md, "Remote runners"): the host's launch line first on the runner's stdin; the runner's
 * header first on its stdout (what confined the guest, or why it refused), then the guest's stdout byte for
 * byte, then, once the guest is gone, a trailer (its exit, the limits' verdict, its usage) behind a mark
 * that holds a nonce only the runner knows, so the guest cannot forge it. Both ends build and check them here.
 */
import { randomBytes } from "node:crypto";
import { RESOURCE_LIMITS } from "../settings.js";
import type { SandboxMechanism, SandboxReport } from "../sandbox/index.js";
import type { HostFailure, HostFailureCode, LimitState, ResourceLimitName, ResourceUsage, RunDetails } from "../api/types.js";

/** The version of these lines (both ends must speak it). */
export const RUNNER_LINES = 1;
/**
 * The version of a launch line that names a sandbox mechanism: version 1 and `mechanism`. A runner of this package
 * reads both; an older one refuses version 2 before it starts anything, so a mechanism asked for is never dropped.
 */
export const LAUNCH_WITH_MECHANISM = 2;
/** The most bytes a launch line, a header or a trailer may have. */
export const MAX_RUNNER_LINE_BYTES = 1024 * 1024;
/** The trailer's mark starts with this byte (ASCII record separator), which no JSON frame holds unescaped. */
export const TRAILER_START = 0x1e;

/** Host to runner, the first line on its stdin: how the host asks for the run to be confined. */
export interface RunnerLaunch {
  type: "runner";
  /** {@link RUNNER_LINES}, or {@link LAUNCH_WITH_MECHANISM} when `mechanism` is given. */
  version: typeof RUNNER_LINES | typeof LAUNCH_WITH_MECHANISM;
  /** The host's `sandbox` setting: "auto" and "required" confine (a runner without `--no-sandbox` always does). */
  sandbox: "auto" | "required" | "off";
  /** The host's `sandbox.mechanism`, when it named one: the runner confines with it, or refuses the run. */
  mechanism?: SandboxMechanism;
  /** The resource limits the host asked for (null: none, the JSON of Infinity); the rest are the runner's defaults. */
  limits: Partial<Record<ResourceLimitName, number | null>>;
  killGraceMs: number;
}

/** Runner to host, its first line: the guest was started, or why not. */
export type RunnerHeader =
  | {
      type: "runner";
      version: typeof RUNNER_LINES;
      sdk: string;
      /** The trailer's mark follows {@link TRAILER_START}: 32 hex digits. */
      nonce: string;
      sandbox: SandboxReport | null;
      sandboxFallback?: string;
    }
  | { type: "runner"; version: typeof RUNNER_LINES; sdk: string; refused: HostFailure };

/** Runner to host, after the guest's output: how the guest ended on the far end. */
export interface RunnerTrailer {
  exit: NonNullable<RunDetails["exit"]>;
  forcedStop?: "SIGTERM" | "SIGKILL";
  /** The far end's own verdict (a limit passed, the launcher's failure); the session's is the host's. */
  failure?: HostFailure;
  limits?: Record<ResourceLimitName, LimitState>;
  usage?: ResourceUsage;
}

/** A fresh nonce for one run's trailer mark. */
export function newNonce(): string {
  return randomBytes(16).toString("hex");
}

/** The bytes in front of the trailer: {@link TRAILER_START}, the nonce, a space. */
export function trailerMark(nonce: string): Buffer {
  return Buffer.concat([Buffer.of(TRAILER_START), Buffer.from(`${nonce} `)]);
}

/** The launch line for a run with these limits (as the host's checked launch has them) and, if named, this sandbox mechanism. */
export function launchLine(
  sandbox: RunnerLaunch["sandbox"],
  limits: Readonly<Record<ResourceLimitName, number>>,
  requested: ReadonlySet<ResourceLimitName>,
  killGraceMs: number,
  mechanism?: SandboxMechanism,
): string {
  const asked: RunnerLaunch["limits"] = {};
  for (const name of RESOURCE_LIMITS) if (requested.has(name)) asked[name] = limits[name] === Infinity ? null : limits[name];
  const launch: RunnerLaunch =
    mechanism === undefined
      ? { type: "runner", version: RUNNER_LINES, sandbox, limits: asked, killGraceMs }
      : { type: "runner", version: LAUNCH_WITH_MECHANISM, sandbox, mechanism, limits: asked, killGraceMs };
  return `${JSON.stringify(launch)}\n`;
}

/** Reads a launch line; a string says what is wrong with it. */
export function parseLaunch(line: string): RunnerLaunch | string {
  const value = parseObject(line);
  if (typeof value === "string") return value;
  if (value.type !== "runner" || (value.version !== RUNNER_LINES && value.version !== LAUNCH_WITH_MECHANISM)) {
    return (
      `the first line is not an ears runner launch of version ${RUNNER_LINES} or ${LAUNCH_WITH_MECHANISM} ` +
      "(is the host's @posoco/ears too old or too new?)"
    );
  }
  if (value.sandbox !== "auto" && value.sandbox !== "required" && value.sandbox !== "off")
    return "its sandbox must be auto, required or off";
  if (value.version === LAUNCH_WITH_MECHANISM) {
    if (value.mechanism !== "bubblewrap" && value.mechanism !== "landlock") return "its mechanism must be bubblewrap or landlock";
    if (value.sandbox === "off") return "its mechanism names a sandbox, which its sandbox: off turns off";
  } else if (value.mechanism !== undefined) return `a launch line names a mechanism only in version ${LAUNCH_WITH_MECHANISM}`;
  if (typeof value.killGraceMs !== "number" || !(value.killGraceMs >= 0)) return "its killGraceMs must be a number >= 0";
  const limits = value.limits;
  if (typeof limits !== "object" || limits === null || Array.isArray(limits)) return "its limits must be an object";
  for (const [name, limit] of Object.entries(limits)) {
    if (!(RESOURCE_LIMITS as readonly string[]).includes(name))
      return `its limits name ${JSON.stringify(name)}, which a runner does not set`;
    if (limit !== null && typeof limit !== "number") return `its limit ${name} must be a number or null`;
  }
  return value as unknown as RunnerLaunch;
}

/** Reads a runner's header; a string says what is wrong with it. */
export function parseHeader(line: string): RunnerHeader | string {
  const value = parseObject(line);
  if (typeof value === "string") return value;
  if (value.type !== "runner") return "it is not an ears runner's header";
  if (value.version !== RUNNER_LINES) return `it is an ears runner's header of version ${String(value.version)}, not ${RUNNER_LINES}`;
  if (typeof value.sdk !== "string") return "its sdk is not a string";
  if ("refused" in value) {
    const refused = value.refused as Partial<HostFailure> | null;
    if (typeof refused?.code !== "string" || typeof refused.message !== "string") return "its refusal is not a failure";
    return {
      type: "runner",
      version: RUNNER_LINES,
      sdk: value.sdk,
      refused: { code: refused.code as HostFailureCode, message: refused.message },
    };
  }
  if (typeof value.nonce !== "string" || !/^[0-9a-f]{32}$/.test(value.nonce)) return "its nonce is not 32 hex digits";
  if (value.sandbox !== null && (typeof value.sandbox !== "object" || Array.isArray(value.sandbox))) return "its sandbox is not an object";
  if (value.sandboxFallback !== undefined && typeof value.sandboxFallback !== "string") return "its sandboxFallback is not a string";
  return value as unknown as RunnerHeader;
}

/** Reads a trailer; a string says what is wrong with it. */
export function parseTrailer(line: string): RunnerTrailer | string {
  const value = parseObject(line);
  if (typeof value === "string") return value;
  const exit = value.exit as RunnerTrailer["exit"] | undefined;
  if (typeof exit !== "object" || exit === null || !("code" in exit) || !("signal" in exit)) return "its exit is not { code, signal }";
  if (value.failure !== undefined) {
    const failure = value.failure as Partial<HostFailure> | null;
    if (typeof failure?.code !== "string" || typeof failure.message !== "string") return "its failure is not a failure";
  }
  return value as unknown as RunnerTrailer;
}

function parseObject(line: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "it is not JSON";
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it is not a JSON object";
  return value as Record<string, unknown>;
}
