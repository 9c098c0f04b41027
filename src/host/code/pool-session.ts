/**
 * A session's run through a run pool (issue 32): the workspace is bound late. A pooled runner is already
 * inside its sandbox when a run takes it, so its working directory cannot be chosen then; instead every
 * runner's private directory is a mount whose propagation is shared (workspace/bounded-dir.ts), which
 * bubblewrap's bind of it receives as a slave. When a session's run takes a runner, the host binds the
 * session's workspace onto that directory; the mount reaches into the runner's sandbox, and the runner
 * enters it and checks it is the workspace (the body frame names its device and inode) before any code
 * runs. The runner serves that one run and exits; its directory's removal detaches the bind with it, so
 * no other run ever sees the workspace. See docs/host.md, "Sessions".
 */
import { statSync } from "node:fs";
import type { WorkspaceIdentity } from "../../protocol/code-body.js";
import * as failures from "../report/failures.js";
import type { CheckedLaunch } from "../run-guest.js";
import type { SandboxRequest } from "../sandbox/index.js";
import type { HostFailure } from "../api/types.js";
import { bindMount } from "../workspace/bounded-dir.js";
import type { Session } from "../workspace/index.js";

/**
 * Why a pool's runners cannot take a session's workspace (runCode throws it as a TypeError), or
 * undefined when they can: each runner must have a private working directory of this host's, sandboxed.
 */
export function poolSessionProblem(pool: CheckedLaunch, sandbox: SandboxRequest): string | undefined {
  const why = "a session's pooled run gets its workspace bound onto the runner's own private working directory";
  if (pool.remote !== undefined) return `options.pool runs remote runners and options.session is this host's; ${why}`;
  if (pool.cwd !== undefined) return `options.pool was made with cwd, so its runners have no private working directory; ${why}`;
  if (sandbox.mode === "off") return "options.pool was made with sandbox: false, and a session's runs are sandboxed";
  return undefined;
}

/** The workspace's identity, which a pooled runner checks its working directory against (the body frame's `workspace`). */
export function workspaceIdentity(session: Session): WorkspaceIdentity {
  const { dev, ino } = statSync(session.path);
  return { dev, ino };
}

/** What {@link bindSession} needs of a taken runner. */
export interface SessionRunner {
  /** The runner's working directory (on a shared mount), or undefined when it has none of its own. */
  work: string | undefined;
  /** Whether a mount on `work` reaches the runner's sandbox (see BoundedDir.shared). */
  shared: boolean;
  /** Whether the runner is confined (a session's runs must be). */
  confined: boolean;
}

/**
 * Binds the session's workspace onto the runner's working directory. Resolves with undefined when done,
 * else the failure the run reports (nothing ran); `unused` then says whether the runner was left as it
 * was (it may serve another run) or must be discarded. Never rejects.
 */
export async function bindSession(session: Session, runner: SessionRunner): Promise<{ failure: HostFailure; unused: boolean } | undefined> {
  if (!runner.confined) {
    const reason = "the pool's runners run unconfined (sandbox \"auto\" found no sandbox here), and a session's runs are sandboxed";
    return { failure: failures.sandboxUnavailable(reason), unused: true };
  }
  if (session.mechanism === "copy") {
    const reason =
      "the session's workspace is copied into each run's own sandbox (mechanism \"copy\": this host cannot mount), " +
      "which a runner started ahead cannot take; run it without a pool";
    return { failure: failures.poolSessionNotBound(reason), unused: true };
  }
  if (runner.work === undefined || !runner.shared) {
    const reason = "the runner's working directory is not a shared mount (the host could not mount one: it needs CAP_SYS_ADMIN)";
    return { failure: failures.poolSessionNotBound(reason), unused: true };
  }
  const problem = await bindMount(session.path, runner.work);
  // A failed (or timed-out) mount may still have happened: that runner is never handed to another run.
  return problem === undefined ? undefined : { failure: failures.poolSessionNotBound(problem), unused: false };
}
