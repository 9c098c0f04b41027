/**
 * How runCode starts its runner, cold or in a run pool: the runner script, its launch (runGuest's checks,
 * the sandbox showing it this package's dist/), and the private working directory each runner gets.
 */
import { dirname } from "node:path";
import * as failures from "../report/failures.js";
import { checkLaunch, withPaths, type CheckedLaunch } from "../run-guest.js";
import type { GuestCommand, HostFailure } from "../types.js";
import { builtScript } from "./built-script.js";
import { filesFor, makeBoundedDir } from "../workspace/bounded-dir.js";

let runnerPath: string | undefined;

/** The runner script in this package's dist/ (this module may be bundled into dist/host or dist/chunks). */
export function codeRunner(): string {
  // dist/host/index.js, dist/chunks/*.js, or the sources run by vitest (src/host/code/): the built runner.
  return (runnerPath ??= builtScript(
    ["../guest/code-runner.js", "../../../dist/guest/code-runner.js"],
    import.meta.url,
    "runCode: the code runner (dist/guest/code-runner.js) is missing from this installation of @posoco/ears",
  ));
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
 * own, on its machine). The directory is a bounded tmpfs
 * (workspace/bounded-dir.ts) of `limits.tmpBytes` bytes and as many files as go with them, so a body
 * filling it gets ENOSPC and the host's disk is never touched; where the host cannot mount (not root) it
 * is a plain directory, bounded by nothing (docs/host.md, "Workspaces"). With `shared`, its mount's
 * propagation is shared (bounded-dir.ts), and `shared` in the result says whether that could be had.
 */
export function withWorkDir(
  launch: CheckedLaunch,
  shared = false,
): { launch: CheckedLaunch; remove: () => Promise<void>; shared?: boolean } | { failure: HostFailure } {
  if (launch.cwd !== undefined || launch.remote !== undefined) return { launch, remove: () => Promise.resolve() };
  const bytes = launch.settings.limits.tmpBytes;
  try {
    // `shared` (a pool's runner): a session's workspace can be bound onto the directory after the runner started (pool-session.ts).
    const made = makeBoundedDir("ears-code-", bytes === Infinity ? undefined : { bytes, files: filesFor(bytes) }, true, shared);
    const { work } = made;
    return {
      launch: { ...launch, cwd: work, scratch: made.dir, sandbox: withPaths(launch.sandbox, [], [work]) },
      remove: made.remove,
      shared: made.shared,
    };
  } catch (error) {
    // A full disk, a missing temporary directory: reported like any other failure to start, never a rejection.
    return { failure: failures.workDirNotMade(error) };
  }
}
