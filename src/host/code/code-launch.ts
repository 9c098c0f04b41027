/**
 * How runCode starts its runner, cold or in a run pool: the runner script, its launch (runGuest's checks,
 * the sandbox showing it this package's dist/), and the private working directory each runner gets.
 */
import { dirname } from "node:path";
import * as failures from "../report/failures.js";
import { checkLaunch, withPaths, type CheckedLaunch } from "../run-guest.js";
import type { GuestCommand, HostFailure } from "../api/types.js";
import { builtScript } from "./built-script.js";
import { filesFor, makeBoundedDir } from "../workspace/bounded-dir.js";
import { expectedMechanism } from "../sandbox/index.js";
import { RUNNER_MAIN_FILE, RUNNER_START_FILE } from "../../protocol/code-body.js";

let runnerPath: string | undefined;

/**
 * The runner script in this package's dist/ (this module may be bundled into dist/host or dist/chunks): under
 * Node, the start script that loads the runner with its V8 code cache (src/guest/code-cache.ts); under Deno
 * and Bun, the runner itself (Deno's runner may read no other file, and a V8 cache is no use to Bun).
 */
export function codeRunner(): string {
  const name = underNode() ? RUNNER_START_FILE : RUNNER_MAIN_FILE;
  // dist/host/index.js, dist/chunks/*.js, or the sources run by vitest (src/host/code/): the built runner.
  return (runnerPath ??= builtScript(
    [`../guest/${name}`, `../../../dist/guest/${name}`],
    import.meta.url,
    `runCode: the code runner (dist/guest/${name}) is missing from this installation of @posoco/ears`,
  ));
}

/** Whether this host is Node itself, not Deno or Bun (both of which set process.versions.node too). */
function underNode(): boolean {
  return typeof process.versions.bun !== "string" && typeof (globalThis as { Deno?: unknown }).Deno === "undefined";
}

/**
 * @internal The runner's launch for runCode's options (or a pool's): checked once, by runGuest's own
 * checks. The sandbox shows the runner this package's dist/ and nothing the sandbox would look for.
 */
export function codeLaunch(options: Omit<GuestCommand, "command" | "args">, caller: "runCode" | "createRunPool"): CheckedLaunch {
  const script = codeRunner();
  return checkLaunch({ ...options, command: process.execPath, args: [script] }, caller, {
    readable: [dirname(dirname(script))],
    discover: false,
    disposable: true,
  });
}

/**
 * @internal Gives a launch its private working directory (mode 0700, removed by `remove`, and by the
 * watchdog if the host dies first), unless the options named a `cwd` or the runner is remote (it makes its
 * own, on its machine). It holds at most `limits.tmpBytes` bytes, so a body filling it gets ENOSPC and the
 * host's disk is never touched (docs/code.md, "How the body reaches the child"). A cold confined run's is a
 * tmpfs bubblewrap mounts inside the sandbox (`privateDirBytes`: no mount or umount for the host to fork,
 * and nothing left behind, since it dies with the sandbox); the directory the host makes stays empty. A
 * pool's runner (`shared`) and an unconfined run get a bounded tmpfs the host mounts (workspace/bounded-dir.ts),
 * of `tmpBytes` bytes and as many files as go with them; where the host cannot mount (not root) that is a
 * plain directory, bounded by nothing. With `shared`, its mount's propagation is shared (bounded-dir.ts),
 * and `shared` in the result says whether that could be had.
 */
export async function withWorkDir(
  launch: CheckedLaunch,
  shared = false,
): Promise<{ launch: CheckedLaunch; remove: () => Promise<void>; shared?: boolean } | { failure: HostFailure }> {
  if (launch.cwd !== undefined || launch.remote !== undefined) return { launch, remove: () => Promise.resolve() };
  const bytes = launch.settings.limits.tmpBytes;
  // `shared` (a pool's runner): a session's workspace can be bound onto the directory after the runner started
  // (pool-session.ts), which needs the host's own mount; a tmpfs inside the sandbox would hide it.
  const inSandbox = !shared && bytes !== Infinity && willBeConfined(launch);
  try {
    const bound = bytes === Infinity || inSandbox ? undefined : { bytes, files: filesFor(bytes) };
    const made = await makeBoundedDir("ears-code-", bound, true, shared);
    const { work } = made;
    const own = { cwd: work, scratch: made.dir, sandbox: withPaths(launch.sandbox, [], [work]) };
    return {
      launch: { ...launch, ...own, ...(inSandbox && { privateDirBytes: bytes }) },
      remove: made.remove,
      shared: made.shared,
    };
  } catch (error) {
    // A full disk, a missing temporary directory: reported like any other failure to start, never a rejection.
    return { failure: failures.workDirNotMade(error) };
  }
}

/**
 * Whether a launch's guest will run in bubblewrap, which mounts the private directory inside the sandbox: bubblewrap
 * installed and not known to fail here, or asked for. The same look planSandbox takes; a sandbox uninstalled
 * between the two, or found unable to start by that run's probe (it goes on under Landlock), leaves that one run's
 * directory unbounded (docs/code.md).
 */
function willBeConfined(launch: CheckedLaunch): boolean {
  return expectedMechanism(launch.sandbox) === "bubblewrap";
}
