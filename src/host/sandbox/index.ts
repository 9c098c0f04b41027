/**
 * The sandbox seam: picks the OS mechanism for this platform (one module each; only Linux's
 * bubblewrap today, macOS's sandbox-exec can be added as another), probes it once per process, and
 * turns a run's launch into the command that starts the guest confined.
 */
import { bubblewrap } from "./bubblewrap.js";
import { checkSandboxOptions, CommandNotFoundError, SandboxPathError, sandboxPolicy, type Launch, type SandboxPolicy } from "./policy.js";
import type { SandboxMechanism, SandboxOptions, SandboxReport } from "./types.js";

export type { SandboxOptions, SandboxReport, SandboxSetting } from "./types.js";

/** A sandbox setting after checking: whether it is required, and its options. */
export interface SandboxRequest {
  mode: "auto" | "required" | "off";
  options: SandboxOptions;
}

/** How to start the guest. */
export type SandboxPlan =
  | { kind: "confined"; command: string; args: string[]; env: Record<string, string>; report: SandboxReport }
  /** Unconfined; `fallback` says why when "auto" found no sandbox. */
  | { kind: "unconfined"; fallback?: string }
  /** Required but impossible: the guest must not start. */
  | { kind: "unavailable"; reason: string }
  /** The command itself cannot be found: the same failure as an unconfined spawn. */
  | { kind: "spawnFailed"; error: Error };

/** Checks `runGuest`'s `sandbox` option synchronously. Throws TypeError naming the problem. */
export function sandboxRequest(setting: unknown, caller: string): SandboxRequest {
  if (setting === undefined || setting === "auto") return { mode: "auto", options: {} };
  if (setting === true) return { mode: "required", options: {} };
  if (setting === false) return { mode: "off", options: {} };
  if (typeof setting !== "object" || setting === null || Array.isArray(setting)) {
    throw new TypeError(`${caller}: options.sandbox must be "auto", true, false or an options object { readable, writable, network, env }`);
  }
  checkSandboxOptions(setting as SandboxOptions, caller);
  return { mode: "required", options: setting as SandboxOptions };
}

/** The mechanism of each platform that has one. */
const MECHANISMS: Partial<Record<NodeJS.Platform, SandboxMechanism>> = { linux: bubblewrap };

let probed: Promise<string | undefined> | undefined;

/**
 * Why this platform cannot confine a guest here, or undefined when it can. Probed once per process
 * (starting a throw-away sandbox costs a few milliseconds) and cached.
 */
export function sandboxUnavailableReason(): Promise<string | undefined> {
  const mechanism = MECHANISMS[process.platform];
  if (mechanism === undefined) {
    return Promise.resolve(`no OS sandbox is supported on ${process.platform} yet (only Linux, with bubblewrap)`);
  }
  probed ??= mechanism.probe();
  return probed;
}

/**
 * Decides how to start the guest (`tmpBytes`: the size of its private /tmp, if bounded). Never rejects:
 * a policy that cannot be built is "unavailable" with the reason.
 */
export async function planSandbox(request: SandboxRequest, launch: Launch, tmpBytes?: number): Promise<SandboxPlan> {
  if (request.mode === "off") return { kind: "unconfined" };
  const reason = await sandboxUnavailableReason();
  const mechanism = MECHANISMS[process.platform];
  if (reason !== undefined || mechanism === undefined) {
    const why = reason ?? `no OS sandbox is supported on ${process.platform}`;
    return request.mode === "auto" ? { kind: "unconfined", fallback: why } : { kind: "unavailable", reason: why };
  }
  try {
    const policy: SandboxPolicy = { ...sandboxPolicy(launch, request.options), tmpBytes };
    const { command, args, report } = mechanism.command(policy);
    return { kind: "confined", command, args, env: policy.env, report };
  } catch (error) {
    if (error instanceof SandboxPathError) return { kind: "unavailable", reason: error.message };
    if (error instanceof CommandNotFoundError) return { kind: "spawnFailed", error };
    // The system directories changed while they were read, or bwrap went away: refuse rather than start half a sandbox.
    return { kind: "unavailable", reason: `the sandbox could not be prepared: ${(error as Error).message}` };
  }
}
