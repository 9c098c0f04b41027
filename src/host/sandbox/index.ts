/**
 * The sandbox seam: picks the OS mechanism for this platform (only Linux's bubblewrap today; macOS's
 * sandbox-exec can be added beside it), checks that it starts, and turns a run's launch into the
 * command that starts the guest confined.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import type { Writable } from "node:stream";
import { homedir, tmpdir } from "node:os";
import { bubblewrapArgs, findBwrap, probeArgs, standardBinDirs, systemLayout } from "./bubblewrap.js";
import { nodeFileSystem, type FileSystemView } from "./file-system-view.js";
import { runBounded } from "../process/bounded-child.js";
import {
  checkSandboxOptions,
  CommandNotFoundError,
  MaskCache,
  SandboxPathError,
  sandboxPolicy,
  type HostPlaces,
  type Launch,
} from "./policy.js";
import { seccompProgram } from "./seccomp.js";
import type { SandboxOptions, SandboxReport } from "./types.js";

export type { SandboxOptions, SandboxReport, SandboxSetting } from "./types.js";

/** A sandbox setting after checking: whether it is required, and its options. */
export interface SandboxRequest {
  mode: "auto" | "required" | "off";
  options: SandboxOptions;
}

/** The descriptor on which bwrap reads its seccomp filter (the first after stdin, stdout and stderr). */
export const SECCOMP_FD = 3;

/** How to start the guest. */
export type SandboxPlan =
  | {
      kind: "confined";
      command: string;
      args: string[];
      /** The guest's environment (passed by bwrap's --setenv; bwrap itself gets none). */
      env: Record<string, string>;
      /** The seccomp filter to write on descriptor {@link SECCOMP_FD}, or undefined when there is none. */
      seccomp: Buffer | undefined;
      report: SandboxReport;
      /** The guest waits behind the workspace gate (descriptors 4 and 5: workspace/copy-workspace.ts). */
      gate?: true;
    }
  /** Unconfined; `fallback` says why when "auto" found no sandbox to have. */
  | { kind: "unconfined"; fallback?: string }
  /** Required, or installed but failing: the guest must not start. */
  | { kind: "unavailable"; reason: string }
  /** The command itself cannot be found: the same failure as an unconfined spawn. */
  | { kind: "spawnFailed"; error: Error };

/** A plan whose guest runs confined. */
export type ConfinedPlan = Extract<SandboxPlan, { kind: "confined" }>;

/**
 * Starts a confined plan: bwrap with no environment of its own (the guest's comes through --setenv),
 * stdio piped, and its seccomp filter written on descriptor {@link SECCOMP_FD}, which bwrap reads to
 * the end and closes before the guest starts. Throws as spawn does.
 */
export function spawnConfined(plan: ConfinedPlan, options: { cwd: string; detached: boolean }): ChildProcessWithoutNullStreams {
  const stdio: ("pipe" | "ignore")[] = plan.seccomp === undefined ? ["pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe", "pipe"];
  // The gate's go-ahead (4, which it reads) and its ready line (5, which it writes).
  if (plan.gate === true) stdio.push(...(plan.seccomp === undefined ? (["ignore"] as const) : []), "pipe", "pipe");
  const child = spawn(plan.command, plan.args, {
    ...options,
    stdio,
    env: {},
    shell: false,
    windowsHide: true,
  }) as ChildProcessWithoutNullStreams;
  const pipe = child.stdio[SECCOMP_FD] as Writable | null | undefined;
  if (plan.seccomp !== undefined && pipe !== null && pipe !== undefined) {
    pipe.on("error", () => {}); // bwrap that died first is reported by its exit
    pipe.end(plan.seccomp);
  }
  return child;
}

/** Checks `runGuest`'s `sandbox` option synchronously. Throws TypeError naming the problem. */
export function sandboxRequest(setting: unknown, caller: string): SandboxRequest {
  if (setting === undefined || setting === "auto") return { mode: "auto", options: {} };
  if (setting === true) return { mode: "required", options: {} };
  if (setting === false) return { mode: "off", options: {} };
  if (typeof setting !== "object" || setting === null || Array.isArray(setting)) {
    throw new TypeError(
      `${caller}: options.sandbox must be "auto", true, false or an options object ` +
        "{ readable, writable, network, env, showSecrets, allowBroadPaths }",
    );
  }
  checkSandboxOptions(setting as SandboxOptions, caller);
  return { mode: "required", options: setting as SandboxOptions };
}

/** Why there is no sandbox to have here at all (so "auto" may run unconfined), or undefined. */
export function sandboxMissing(path = process.env.PATH, fs: FileSystemView = nodeFileSystem): string | undefined {
  const found = locateSandbox(path, fs);
  return "missing" in found ? found.missing : undefined;
}

/**
 * The bwrap this run would use; or why there is none to have (`missing`: "auto" may run unconfined); or why
 * the one installed cannot be used (`unusable`: every run is refused, as a sandbox that fails to start).
 */
export function locateSandbox(
  path = process.env.PATH,
  fs: FileSystemView = nodeFileSystem,
): { bwrap: string } | { missing: string } | { unusable: string } {
  if (process.platform !== "linux")
    return { missing: `no OS sandbox is supported on ${process.platform} yet (only Linux, with bubblewrap)` };
  const found = findBwrap(fs, path);
  if (found === undefined) {
    return {
      missing:
        `bubblewrap (bwrap) is not installed (not on PATH, nor in ${standardBinDirs().join(", ")}); ` + "install the OS package bubblewrap",
    };
  }
  if (!found.executable) {
    return { unusable: `bubblewrap is installed at ${found.path} but is not an executable file; reinstall the OS package bubblewrap` };
  }
  return { bwrap: found.path };
}

/** How long one start of the sandbox may take before it counts as failing (for this run only). */
export const PROBE_TIMEOUT_MS = 5000;
/** A probe past its deadline gets SIGTERM, then SIGKILL after this. */
const PROBE_KILL_GRACE_MS = 1000;
/** The probe's stderr kept for its failure (its first line is shown). */
const PROBE_STDERR_BYTES = 2000;

let started: string | undefined;
/** The mask walks of this process, reused while the walked directories do not change. */
const maskCache = new MaskCache();

/**
 * Why the installed sandbox cannot start a sandbox here, or undefined when it can. A success is
 * remembered for the process (by the bwrap path); a failure or a slow start is not, so the next run tries
 * again. Never rejects.
 */
export async function sandboxStartProblem(bwrap: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  if (started === bwrap) return undefined;
  const end = await runBounded(
    bwrap,
    probeArgs(bwrap),
    { stdio: ["ignore", "ignore", "pipe"], env: {} },
    {
      killGraceMs: PROBE_KILL_GRACE_MS,
      timeoutMs,
      output: { streams: ["stderr"], maxBytes: PROBE_STDERR_BYTES, keep: "first" },
      // bwrap runs with --die-with-parent: no watchdog is needed should the host die.
      group: { sandboxed: true },
    },
  );
  if (end.spawnError !== undefined) return `bubblewrap could not be started: ${end.spawnError.message}`;
  if (end.stopped !== undefined) {
    return `bubblewrap did not start a sandbox within ${timeoutMs} ms (the machine may be overloaded; the next run tries again)`;
  }
  const { code, signal } = end.exit!;
  if (code === 0) {
    started = bwrap;
    return undefined;
  }
  const why = end.output.trim().split("\n")[0] || (signal !== null ? `signal ${signal}` : `exit code ${code}`);
  return `bubblewrap is installed but cannot create a sandbox here (${why}); run \`ears doctor\` for the fix`;
}

/** @internal Forgets a remembered successful start (tests). */
export function forgetSandboxStart(): void {
  started = undefined;
}

/** The places no sandbox shows unless asked: homes and temporary roots. */
export function hostPlaces(env: NodeJS.ProcessEnv = process.env): HostPlaces {
  return { homes: [homedir(), ...(env.HOME ? [env.HOME] : [])], temporaryRoots: [tmpdir(), "/tmp"] };
}

/**
 * Decides how to start the guest. Never rejects: a policy that cannot be built is "unavailable" with the reason.
 * `wiring.lookup` is where bwrap is looked for (tests; default the host's file system).
 */
export async function planSandbox(
  request: SandboxRequest,
  launch: Launch,
  wiring: { tmpBytes?: number; privateDir?: { path: string; bytes: number }; gate?: boolean; lookup?: FileSystemView } = {},
): Promise<SandboxPlan> {
  if (request.mode === "off") return { kind: "unconfined" };
  const found = locateSandbox(process.env.PATH, wiring.lookup);
  if ("missing" in found) {
    return request.mode === "auto" ? { kind: "unconfined", fallback: found.missing } : { kind: "unavailable", reason: found.missing };
  }
  if ("unusable" in found) return { kind: "unavailable", reason: found.unusable };
  const { bwrap } = found;
  const problem = await sandboxStartProblem(bwrap);
  if (problem !== undefined) return { kind: "unavailable", reason: problem };
  try {
    const policy = sandboxPolicy(launch, request.options, nodeFileSystem, hostPlaces(launch.env), maskCache);
    const seccomp = seccompProgram({ network: policy.network });
    const { args, report } = bubblewrapArgs(policy, systemLayout(nodeFileSystem), {
      seccompFd: seccomp === undefined ? undefined : SECCOMP_FD,
      tmpBytes: wiring.tmpBytes,
      privateDir: wiring.privateDir,
      hostExecutable: process.execPath,
      gate: wiring.gate,
    });
    return {
      kind: "confined",
      command: bwrap,
      args,
      env: policy.env,
      seccomp,
      report,
      ...(wiring.gate === true && { gate: true as const }),
    };
  } catch (error) {
    if (error instanceof SandboxPathError) return { kind: "unavailable", reason: error.message };
    if (error instanceof CommandNotFoundError) return { kind: "spawnFailed", error };
    // The system directories changed while they were read: refuse rather than start half a sandbox.
    return { kind: "unavailable", reason: `the sandbox could not be prepared: ${(error as Error).message}` };
  }
}
