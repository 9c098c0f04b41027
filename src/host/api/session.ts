/**
 * A session's public shape (the implementation is in ../workspace/): here, in the leaf of public types, so
 * the run options can name it without importing the workspace.
 */
/** One entry of {@link Session.list}. */
export interface WorkspaceEntry {
  name: string;
  type: "file" | "directory";
  /** Size in bytes (files). */
  size: number;
}

/** A session: a workspace that lasts between runs. Pass it to runCode or runGuest as `session`. */
export interface Session {
  /**
   * The workspace's path on the host: a run's working directory, at the same path inside the sandbox (a
   * pooled run's working directory is its runner's own path, with the workspace bound onto it). Right after
   * a pooled run's report it may be read-only (`EROFS`) until the runner's processes are gone: write through
   * this session's operations, which wait for that, or await one of them before writing here directly.
   */
  readonly path: string;
  /** The durable session's directory, or undefined for a temporary one. */
  readonly dir: string | undefined;
  /** The workspace's bounds. */
  readonly workspaceBytes: number;
  readonly workspaceFiles: number;
  /** How the workspace is bounded here: a tmpfs the host mounted, or copied in and out of each run's sandbox. */
  readonly mechanism: "mount" | "copy";
  /** True once {@link Session.close} was called. */
  readonly closed: boolean;
  /** Writes a file (creating its directories); rejects with `ENOSPC` past the bounds. */
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  /** A file's bytes. Rejects for a missing path, a directory, and anything but a regular file. */
  readFile(path: string): Promise<Buffer>;
  /** A directory's entries (default the workspace's top), sorted by name. */
  list(path?: string): Promise<WorkspaceEntry[]>;
  /** Removes a file or a directory with everything in it; a missing path is not an error. */
  remove(path: string): Promise<void>;
  /**
   * Waits for the runs and file operations under way, then removes the workspace (a durable session's
   * `dir` stays, holding its last state). Calling it again returns the same promise.
   */
  close(): Promise<void>;
}
