/**
 * A durable session's directory from the command line: `ears exec --workspace DIR` and `ears mcp
 * --session-dir DIR`, bounded by `--workspace-size`. One rule for both: DIR is opened as a session when it
 * exists (openSession: its files are loaded, so any directory of files and subdirectories will do), and
 * created otherwise (createSession with `dir`). Either way the host's session machinery does the work
 * (src/host/workspace/): the bounded tmpfs, the sanitizing after each run, the writing back to DIR.
 */
import { lstatSync, rmdirSync } from "node:fs";
import { resolve } from "node:path";
import { createSession, openSession, type Session } from "../host/index.js";
import { parseSize, UsageError } from "./usage.js";

/** `--workspace-size`'s least value, as createSession's: 1 MiB. */
export const WORKSPACE_MIN_BYTES = 1024 * 1024;

/** `--workspace-size <size>` as bytes, or undefined for createSession's default (256 MiB). Throws {@link UsageError}. */
export function workspaceSizeOf(text: string | undefined): number | undefined {
  return parseSize("workspace-size", text);
}

/**
 * The session whose durable directory is `dir` (relative to `cwd`): opened when it exists, created when
 * it does not. Rejects with a {@link UsageError} naming `option` when DIR cannot hold a session (a file, a
 * link, a special file or more than the bound inside) or the host cannot bound a workspace (not root).
 */
export async function durableSession(option: string, dir: string, bytes: number | undefined, cwd: string): Promise<Session> {
  const path = resolve(cwd, dir);
  const options = bytes === undefined ? {} : { workspaceBytes: bytes };
  // lstat: a link at DIR itself is not followed (openSession then refuses it as not a directory).
  const creating = lstatSync(path, { throwIfNoEntry: false }) === undefined;
  try {
    return creating ? await createSession({ ...options, dir: path }) : await openSession(path, options);
  } catch (error) {
    // createSession made DIR before it found it could not bound the workspace: a refusal leaves no trace.
    if (creating) rmdirSafely(path);
    // createSession's and openSession's messages start with their own name; the user gave the option.
    const message = (error as Error).message.replace(/^(createSession|openSession): /, "");
    throw new UsageError(`${option} ${JSON.stringify(dir)}: ${message.replaceAll("workspaceBytes", "--workspace-size")}`);
  }
}

function rmdirSafely(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // Not made, or not empty any more: then it is not ours to remove.
  }
}
