/**
 * The sandbox seam: picks the OS mechanism for this platform (Linux: bubblewrap where it starts, else
 * Landlock through this package's helper; macOS's sandbox-exec can be added beside them), checks that it
 * starts, and turns a run's launch into the command that starts the guest confined.
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
import { CONFINE_MARK, findConfineHelper, landlockArgs, selfTestAbi, selfTestArgs } from "./landlock.js";
import type { SandboxMechanism, SandboxOptions, SandboxReport } from "./types.js";

export type { SandboxMechanism, SandboxOptions, SandboxReport, SandboxSetting } from "./types.js";

/** A sandbox setting after checking: whether it is required, and its options. */
export interface SandboxRequest {
  mode: "auto" | "required" | "off";
  options: SandboxOptions;
}

/** The descriptor on which bwrap (or the Landlock helper) reads its seccomp filter (the first after stdin, stdout and stderr). */
export const SECCOMP_FD = 3;

/**
 * The descriptor on which bwrap tells the pid of the sandbox's init (`--info-fd`), after the seccomp filter's (3) and
 * the workspace gate's (4, 5). The host waits for that init's end, not only for bwrap's (process/process-group.ts).
 */
export const SANDBOX_INFO_FD = 6;

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
      /** bwrap tells its sandbox's init on {@link SANDBOX_INFO_FD} (bubblewrap's plans; the Landlock helper waits for its tree itself). */
      info?: true;
    }
  /** Unconfined; `fallback` says why when "auto" found no sandbox to have (only off Linux). */
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
 * the end and closes before the guest starts; bwrap's report of its sandbox's init comes on
 * {@link SANDBOX_INFO_FD} (read by the run's process group). Throws as spawn does.
 */
export function spawnConfined(plan: ConfinedPlan, options: { cwd: string; detached: boolean }): ChildProcessWithoutNullStreams {
  const stdio: ("pipe" | "ignore")[] = ["pipe", "pipe", "pipe", plan.seccomp === undefined ? "ignore" : "pipe"];
  // The gate's go-ahead (4, which it reads) and its ready line (5, which it writes).
  stdio.push(...(plan.gate === true ? (["pipe", "pipe"] as const) : (["ignore", "ignore"] as const)));
  if (plan.info === true) stdio.push("pipe");
  // Nothing past the last descriptor in use: an "ignore" there would only be one more closed descriptor.
  while (stdio.length > 3 && stdio.at(-1) === "ignore") stdio.pop();
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
        "{ readable, writable, network, env, showSecrets, allowBroadPaths, mechanism }",
    );
  }
  checkSandboxOptions(setting as SandboxOptions, caller);
  return { mode: "required", options: setting as SandboxOptions };
}

/**
 * Why bubblewrap is not here to be had (not installed, or a platform without it), or undefined when it is
 * installed. Whether it starts is {@link sandboxStartProblem}'s question.
 */
export function sandboxMissing(path = process.env.PATH, fs: FileSystemView = nodeFileSystem): string | undefined {
  const found = locateSandbox(path, fs);
  return "missing" in found ? found.missing : undefined;
}

/**
 * The bwrap this run would use; or why there is none to have (`missing`); or why the one installed cannot be
 * used (`unusable`).
 */
export function locateSandbox(
  path = process.env.PATH,
  fs: FileSystemView = nodeFileSystem,
): { bwrap: string } | { missing: string } | { unusable: string } {
  if (process.platform !== "linux")
    return { missing: `no OS sandbox is supported on ${process.platform} yet (only Linux, with bubblewrap or Landlock)` };
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
/** The bwrap that was found unable to start a sandbox here (no user namespaces): "auto" goes on to Landlock. */
let cannotStart: { bwrap: string; why: string } | undefined;
/** The helper whose self-test passed, and the kernel's refusal of Landlock (neither changes while the host runs). */
let landlockPassed: string | undefined;
let landlockRefused: { helper: string; why: string } | undefined;
/** The mask walks of this process, reused while the walked directories do not change. */
const maskCache = new MaskCache();

/**
 * Why the installed sandbox cannot start a sandbox here, or undefined when it can. A success is
 * remembered for the process (by the bwrap path); a failure or a slow start is not, so the next run tries
 * again. Never rejects.
 */
export async function sandboxStartProblem(bwrap: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  const problem = await bubblewrapStart(bwrap, timeoutMs);
  return problem?.why;
}

/** {@link sandboxStartProblem}, telling a slow start (`transient`: try again) from a refusal. */
async function bubblewrapStart(bwrap: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ why: string; transient: boolean } | undefined> {
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
  if (end.spawnError !== undefined) return { why: `bubblewrap could not be started: ${end.spawnError.message}`, transient: false };
  if (end.stopped !== undefined) {
    return {
      why: `bubblewrap did not start a sandbox within ${timeoutMs} ms (the machine may be overloaded; the next run tries again)`,
      transient: true,
    };
  }
  const { code, signal } = end.exit!;
  if (code === 0) {
    started = bwrap;
    return undefined;
  }
  const why = end.output.trim().split("\n")[0] || (signal !== null ? `signal ${signal}` : `exit code ${code}`);
  return { why: `bubblewrap is installed but cannot create a sandbox here (${why}); run \`ears doctor\` for the fix`, transient: false };
}

/**
 * Why Landlock cannot confine a run here (no helper for this machine, a kernel without Landlock or older than
 * ABI {@link LANDLOCK_ABI_MIN}, rules not enforced), or undefined when the helper's self-test passed. Both answers
 * are remembered for the process, except a slow self-test. Never rejects.
 */
export async function landlockProblem(fs: FileSystemView = nodeFileSystem, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  const found = findConfineHelper(fs);
  if ("missing" in found) return found.missing;
  return landlockHelperProblem(found.path, timeoutMs);
}

/**
 * @internal {@link landlockProblem} for a helper at a given path (tests give stand-ins): its self-test's answer,
 * remembered by path as there.
 */
export async function landlockHelperProblem(helper: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<string | undefined> {
  if (landlockPassed === helper) return undefined;
  if (landlockRefused?.helper === helper) return landlockRefused.why;
  const end = await runBounded(
    helper,
    selfTestArgs(),
    { stdio: ["ignore", "pipe", "pipe"], env: {} },
    {
      killGraceMs: PROBE_KILL_GRACE_MS,
      timeoutMs,
      output: { streams: ["stdout", "stderr"], maxBytes: PROBE_STDERR_BYTES, keep: "first" },
      group: { sandboxed: false },
    },
  );
  if (end.spawnError !== undefined) return `the Landlock helper ${helper} could not be started: ${end.spawnError.message}`;
  if (end.stopped !== undefined) return `the Landlock helper's self-test did not end within ${timeoutMs} ms (the next run tries again)`;
  if (end.exit!.code === 0 && selfTestAbi(end.output) !== undefined) {
    landlockPassed = helper;
    return undefined;
  }
  const line = end.output.split("\n").find((text) => text.startsWith(CONFINE_MARK));
  const said = line?.slice(CONFINE_MARK.length).trim() ?? `the self-test exited ${end.exit!.code ?? end.exit!.signal}`;
  const why = `Landlock cannot confine a run here (${said})`;
  landlockRefused = { helper, why };
  return why;
}

/** @internal Forgets what the probes remembered (tests). */
export function forgetSandboxStart(): void {
  started = undefined;
  cannotStart = undefined;
  landlockPassed = undefined;
  landlockRefused = undefined;
}

/**
 * The mechanism a run with `request` will most likely get, known without starting anything: bubblewrap when it is
 * installed and not known to fail here, Landlock when asked for or when bubblewrap cannot be had, undefined
 * unconfined. runCode asks it to decide whether bubblewrap mounts the private directory (code-launch.ts).
 */
export function expectedMechanism(request: SandboxRequest, fs: FileSystemView = nodeFileSystem): SandboxMechanism | undefined {
  if (request.mode === "off" || process.platform !== "linux") return undefined;
  const asked = request.options.mechanism ?? "auto";
  if (asked !== "auto") return asked;
  const found = locateSandbox(process.env.PATH, fs);
  return "bwrap" in found && cannotStart?.bwrap !== found.bwrap ? "bubblewrap" : "landlock";
}

/** The places no sandbox shows unless asked: homes and temporary roots. */
export function hostPlaces(env: NodeJS.ProcessEnv = process.env): HostPlaces {
  return { homes: [homedir(), ...(env.HOME ? [env.HOME] : [])], temporaryRoots: [tmpdir(), "/tmp"] };
}

/** What planSandbox is given besides the request and the launch. */
export interface PlanWiring {
  tmpBytes?: number;
  privateDir?: { path: string; bytes: number };
  /** The guest starts behind the workspace gate (a "copy" session's run under bubblewrap: workspace/copy-workspace.ts). */
  gate?: boolean;
  /** Where bwrap and the helper are looked for (tests; default the host's file system). */
  lookup?: FileSystemView;
}

/**
 * Decides how to start the guest. Never rejects: a policy that cannot be built is "unavailable" with the reason.
 * On Linux: bubblewrap where it starts, else Landlock; with neither the run is refused with both reasons and the
 * fix. A bubblewrap slow to start fails the run rather than fall back (it is tried again on the next).
 */
export async function planSandbox(request: SandboxRequest, launch: Launch, wiring: PlanWiring = {}): Promise<SandboxPlan> {
  if (request.mode === "off") return { kind: "unconfined" };
  const asked = request.options.mechanism ?? "auto";
  const found = locateSandbox(process.env.PATH, wiring.lookup);
  if (process.platform !== "linux" && "missing" in found) {
    return request.mode === "auto" ? { kind: "unconfined", fallback: found.missing } : { kind: "unavailable", reason: found.missing };
  }
  let bubblewrapWhy: string;
  if (asked === "landlock") bubblewrapWhy = 'not asked for (sandbox.mechanism: "landlock")';
  else if ("bwrap" in found) {
    const known = cannotStart?.bwrap === found.bwrap && asked === "auto" ? { why: cannotStart.why, transient: false } : undefined;
    const problem = known ?? (await bubblewrapStart(found.bwrap));
    if (problem === undefined) return bubblewrapPlan(found.bwrap, request, launch, wiring);
    if (problem.transient || asked === "bubblewrap") return { kind: "unavailable", reason: problem.why };
    cannotStart = { bwrap: found.bwrap, why: problem.why };
    bubblewrapWhy = problem.why;
  } else {
    bubblewrapWhy = "missing" in found ? found.missing : found.unusable;
    if (asked === "bubblewrap") return { kind: "unavailable", reason: bubblewrapWhy };
  }
  const landlockWhy = await landlockProblem(wiring.lookup);
  if (landlockWhy === undefined) return landlockPlan(findConfineHelper(wiring.lookup ?? nodeFileSystem), request, launch);
  if (asked === "landlock") return { kind: "unavailable", reason: `${landlockWhy}; sandbox.mechanism "landlock" was asked for` };
  return {
    kind: "unavailable",
    reason:
      `no sandbox can start here: ${bubblewrapWhy}; and ${landlockWhy}. Fix one: let bubblewrap create user namespaces ` +
      "(run `ears doctor` for this machine's line), or run on Linux 6.12 or later with Landlock enabled; " +
      "or pass sandbox: false (--no-sandbox) to run the guest unconfined",
  };
}

/** Turns a policy error into the plan that reports it. */
function policyFailure(error: unknown): SandboxPlan {
  if (error instanceof SandboxPathError) return { kind: "unavailable", reason: error.message };
  if (error instanceof CommandNotFoundError) return { kind: "spawnFailed", error };
  // The system directories changed while they were read: refuse rather than start half a sandbox.
  return { kind: "unavailable", reason: `the sandbox could not be prepared: ${(error as Error).message}` };
}

function bubblewrapPlan(bwrap: string, request: SandboxRequest, launch: Launch, wiring: PlanWiring): SandboxPlan {
  try {
    const policy = sandboxPolicy(launch, request.options, nodeFileSystem, hostPlaces(launch.env), maskCache);
    const seccomp = seccompProgram({ network: policy.network });
    const { args, report } = bubblewrapArgs(policy, systemLayout(nodeFileSystem), {
      seccompFd: seccomp === undefined ? undefined : SECCOMP_FD,
      infoFd: SANDBOX_INFO_FD,
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
      info: true,
      ...(wiring.gate === true && { gate: true as const }),
    };
  } catch (error) {
    return policyFailure(error);
  }
}

function landlockPlan(helper: ReturnType<typeof findConfineHelper>, request: SandboxRequest, launch: Launch): SandboxPlan {
  if ("missing" in helper) return { kind: "unavailable", reason: helper.missing };
  try {
    const policy = sandboxPolicy(launch, request.options, nodeFileSystem, hostPlaces(launch.env), maskCache);
    // No mount namespace hides the host's unix sockets: socket(AF_UNIX) is refused, socketpair kept.
    const seccomp = seccompProgram({ network: policy.network, unixSockets: false });
    const { args, report } = landlockArgs(policy, systemLayout(nodeFileSystem), nodeFileSystem, {
      seccompFd: seccomp === undefined ? undefined : SECCOMP_FD,
      parentPid: process.pid,
      tmpRoot: nodeFileSystem.realpath(tmpdir()),
    });
    return { kind: "confined", command: helper.path, args, env: policy.env, seccomp, report };
  } catch (error) {
    return policyFailure(error);
  }
}
