/**
 * Sessions: a workspace that lasts between runs (issue 32). A session owns a bounded directory
 * (bounded-dir.ts: a tmpfs the host mounts, `workspaceBytes` and one file per 4 KiB of them), which
 * `runCode({ session })` and `runGuest({ session })` get as their writable working directory. Where the
 * host cannot mount (not root, a container), the workspace is a plain directory copied for each run into a tmpfs
 * of the sandbox's own (bubblewrap) or a scratch directory only the run may write (Landlock), and read back
 * after it, within the bounds (copy-workspace.ts). Runs and
 * the host's own file operations on one session are serialised; after each run the workspace is
 * cleaned once the run's whole process tree is gone (walk.ts: no link, special file, setuid bit, byte
 * name, or anything past the bounds is kept). A session made with `dir` is durable:
 * its files are loaded from `dir` when it opens and written back to it after every run and every host
 * write, so `openSession(dir)` continues it in another process. See docs/host.md, "Sessions".
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readdir } from "node:fs/promises";
import { closeSync, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFile, readSync } from "node:fs";
import { promisify } from "node:util";
import { isAbsolute, join, normalize, resolve, sep } from "node:path";
import { makeBoundedDir, sealBounded, type BoundedDir } from "./bounded-dir.js";
import { LOCK_NAME, lockDir, type DirLock } from "./lock.js";
import { cleanTree, kindOf, mirrorTree, removePath, surveyCleanSync, surveyTree, TreeRefused } from "./walk.js";
import { CopyRun, pages, treeUsage } from "./copy-workspace.js";
import * as failures from "../report/failures.js";
import { notStartedReport } from "../report/report.js";
import type { HostFailure, RunReport } from "../api/types.js";
import type { Session, WorkspaceEntry } from "../api/session.js";

export type { Session, WorkspaceEntry } from "../api/session.js";

/** The default size of a session's workspace: 256 MiB (as `limits.tmpBytes`). */
export const DEFAULT_WORKSPACE_BYTES = 256 * 1024 * 1024;
/**
 * The default number of files and directories a session's workspace holds: 10,000. Each one costs the host a
 * step of the walks after every run (cleaning, writing back), so the count is bounded besides the bytes.
 */
export const DEFAULT_WORKSPACE_FILES = 10_000;

/** Options for {@link createSession}. */
export interface SessionOptions {
  /**
   * The workspace's size in bytes (default 256 MiB), counted as the files' apparent sizes (a sparse file
   * counts its whole length). Past it a write fails with `ENOSPC`, inside a body or from
   * {@link Session.writeFile}; a file a body made larger than the rest of the bound without writing it (a
   * sparse file) is removed after the run, never written back.
   */
  workspaceBytes?: number;
  /**
   * The most files and directories the workspace holds (default 10,000, at least 16). Past it, creating one
   * fails with `ENOSPC` inside a body or from {@link Session.writeFile}.
   */
  workspaceFiles?: number;
  /** Files placed in the workspace before the first run: relative path to text (UTF-8) or bytes. */
  files?: Readonly<Record<string, string | Uint8Array>>;
  /**
   * A directory of the host's that keeps the workspace: created if missing, and must be empty (continue
   * one with {@link openSession}). It is the caller's: `close()` leaves it, and it outlives this process.
   * Without it the workspace is temporary: removed by `close()`, or by the watchdog if the host dies.
   */
  dir?: string;
  /**
   * How the workspace is bounded (default "auto": "mount" where the host can mount, else "copy"). "mount": a
   * tmpfs the host mounts (root); the runs work in it. "copy": a plain directory of the host's, copied for each
   * run and read back after it within the bounds (any uid): into a tmpfs bubblewrap makes inside the sandbox, or,
   * under Landlock (no mount), into a scratch directory only the run may write. A write past the bounds fails
   * with ENOSPC inside the body, but under Landlock, where a file past `workspaceBytes` fails with EFBIG and a
   * run past the total is ended (`WorkspaceNotKept`); see docs/host.md, "Sessions", for what differs.
   */
  mechanism?: WorkspaceMechanism;
}

/** How a session's workspace is bounded: see {@link SessionOptions.mechanism}. */
export type WorkspaceMechanism = "auto" | "mount" | "copy";

/**
 * Makes a session with a fresh workspace (empty but for `files`). Rejects when the workspace cannot be
 * bounded here (the host must be able to mount a tmpfs: root on Linux), when `dir` is not empty, or
 * when `files` do not fit. Invalid options throw TypeError or RangeError.
 *
 * @example
 * const session = await createSession({ files: { "data.csv": "a,b\n1,2\n" } });
 * await runCode({ code: 'const fs = process.getBuiltinModule("node:fs");\nfs.writeFileSync("out.txt", "hi");', session });
 * const out = await session.readFile("out.txt");
 * await session.close();
 */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  if (typeof options !== "object" || options === null) throw new TypeError("createSession: options must be an object");
  const {
    workspaceBytes = DEFAULT_WORKSPACE_BYTES,
    workspaceFiles = DEFAULT_WORKSPACE_FILES,
    files = {},
    dir,
    mechanism = "auto",
    ...rest
  } = options;
  const unknown = Object.keys(rest);
  if (unknown.length > 0)
    throw new TypeError(
      `createSession: unknown option ${JSON.stringify(unknown[0])}; it takes workspaceBytes, workspaceFiles, files, dir and mechanism`,
    );
  checkBytes(workspaceBytes, "createSession");
  checkFiles(workspaceFiles, "createSession");
  checkMechanism(mechanism, "createSession");
  if (typeof files !== "object" || files === null || Array.isArray(files)) {
    throw new TypeError("createSession: options.files must be an object of relative path to string or Uint8Array");
  }
  for (const [path, data] of Object.entries(files)) {
    relativePath(path, "createSession: options.files");
    if (typeof data !== "string" && !(data instanceof Uint8Array))
      throw new TypeError(`createSession: options.files[${JSON.stringify(path)}] must be a string or a Uint8Array`);
  }
  if (dir !== undefined && (typeof dir !== "string" || dir === ""))
    throw new TypeError("createSession: options.dir must be a non-empty string");
  return (async () => {
    let durable: string | undefined;
    let lock: DirLock | undefined;
    if (dir !== undefined) {
      durable = resolve(dir);
      mkdirSync(durable, { recursive: true });
      if (readdirSync(durable).some((name) => name !== LOCK_NAME))
        throw new Error(`createSession: ${durable} is not empty; continue its session with openSession(dir)`);
      lock = await lockDir(durable, "createSession");
    }
    const session = await WorkspaceSession.make(workspaceBytes, workspaceFiles, durable, lock, "createSession", mechanism);
    try {
      for (const [path, data] of Object.entries(files)) await session.writeFile(path, data);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  })();
}

/**
 * Continues a durable session in this process: a workspace loaded from `dir` (which another process's
 * `createSession({ dir })` made). Rejects when `dir` is not a directory, holds a link or special file, or
 * does not fit `workspaceBytes` (default 256 MiB) and `workspaceFiles` (default 10,000), and when another
 * open session holds `dir` (in this process or another: a durable directory is locked while its session
 * is open, see docs/host.md).
 */
export async function openSession(
  dir: string,
  options: { workspaceBytes?: number; workspaceFiles?: number; mechanism?: WorkspaceMechanism } = {},
): Promise<Session> {
  if (typeof dir !== "string" || dir === "") throw new TypeError("openSession: dir must be a non-empty string");
  const { workspaceBytes = DEFAULT_WORKSPACE_BYTES, workspaceFiles = DEFAULT_WORKSPACE_FILES, mechanism = "auto" } = options;
  checkBytes(workspaceBytes, "openSession");
  checkFiles(workspaceFiles, "openSession");
  checkMechanism(mechanism, "openSession");
  const durable = resolve(dir);
  return (async () => {
    const stat = lstatSync(durable, { throwIfNoEntry: false });
    if (stat === undefined || !stat.isDirectory()) throw new Error(`openSession: ${durable} is not a directory`);
    const lock = await lockDir(durable, "openSession");
    return WorkspaceSession.make(workspaceBytes, workspaceFiles, durable, lock, "openSession", mechanism);
  })();
}

function checkBytes(bytes: unknown, caller: string): asserts bytes is number {
  if (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes < 1024 * 1024) {
    throw new RangeError(`${caller}: options.workspaceBytes must be an integer of at least 1 MiB (1048576), got ${String(bytes)}`);
  }
}

function checkMechanism(mechanism: unknown, caller: string): asserts mechanism is WorkspaceMechanism {
  if (mechanism !== "auto" && mechanism !== "mount" && mechanism !== "copy")
    throw new TypeError(`${caller}: options.mechanism must be "auto", "mount" or "copy", got ${JSON.stringify(mechanism)}`);
}

function checkFiles(files: unknown, caller: string): asserts files is number {
  if (typeof files !== "number" || !Number.isSafeInteger(files) || files < 16 || files > 1 << 20) {
    throw new RangeError(`${caller}: options.workspaceFiles must be an integer from 16 to 1048576, got ${String(files)}`);
  }
}

/**
 * A path inside the workspace, as given to the file operations: relative, without `..` climbing out, no
 * NUL. Returns its normal form ("" for the top). Throws TypeError naming the problem.
 */
export function relativePath(path: unknown, what: string): string {
  if (typeof path !== "string" || path.includes("\0")) throw new TypeError(`${what}: a path must be a string without NUL`);
  if (isAbsolute(path)) throw new TypeError(`${what}: ${JSON.stringify(path)} is absolute; paths are relative to the workspace`);
  // Trailing slashes first: "./" is the top as "." is, not a name ".".
  const normal = normalize(path === "" ? "." : path).replace(/\/+$/, "");
  if (normal === ".." || normal.startsWith(`..${sep}`))
    throw new TypeError(`${what}: ${JSON.stringify(path)} climbs out of the workspace with ..`);
  return normal === "." ? "" : normal;
}

/** A whole file by its descriptor (fs/promises reads only a FileHandle). */
const readWholeFile = promisify((fd: number, done: (error: NodeJS.ErrnoException | null, data: Buffer) => void) => readFile(fd, done));

/** Open flags that never follow a link at the last step, nor block on a pipe or take a terminal. */
const NO_FOLLOW = (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** The session itself. */
class WorkspaceSession implements Session {
  closed = false;
  /** The tail of the queue: runs and file operations, one at a time. */
  private tail: Promise<unknown> = Promise.resolve();
  private closing: Promise<void> | undefined;
  /** The run under way's copy of the workspace ("copy" sessions). */
  private copying: CopyRun | undefined;
  /** The run under way was sealed ({@link seal}): the end of its processes, and whether it was made read-only. */
  private sealing: { gone: Promise<void>; sealed: boolean } | undefined;
  /** What the queue waits for after the run that set it, past its report: see {@link settle}. */
  private lingering: Promise<void> | undefined;

  private constructor(
    private readonly bounded: BoundedDir,
    readonly dir: string | undefined,
    private readonly lock: DirLock | undefined,
    readonly workspaceBytes: number,
    readonly workspaceFiles: number,
    readonly mechanism: "mount" | "copy",
  ) {}

  /**
   * Mounts the workspace or makes its plain directory (makeBoundedDir has the watchdog cover it), and loads a
   * durable one's files. Rejects why not (the lock released).
   */
  static async make(
    bytes: number,
    files: number,
    dir: string | undefined,
    lock: DirLock | undefined,
    caller: string,
    mechanism: WorkspaceMechanism,
  ): Promise<WorkspaceSession> {
    let bounded: BoundedDir;
    try {
      if (process.platform !== "linux") throw new Error(`sessions need Linux (this is ${process.platform})`);
      // Two inodes more than the files: the mount's top and the workspace directory in it. "auto": mounted
      // where the host can; else the plain directory "copy" works in.
      bounded = await makeBoundedDir("ears-session-", mechanism === "copy" ? undefined : { bytes, files: files + 2 }, mechanism === "auto");
    } catch (error) {
      await lock?.release();
      throw new Error(
        `${caller}: the workspace cannot be bounded here: ${(error as Error).message}; or give mechanism "copy" (no mount needed)`,
        { cause: error },
      );
    }
    const session = new WorkspaceSession(bounded, dir, lock, bytes, files, bounded.bounded ? "mount" : "copy");
    if (dir !== undefined) {
      try {
        await surveyTree(dir, { bytes, files }, LOCK_NAME);
        if (!(await mirrorTree(dir, bounded.work, LOCK_NAME))) throw new Error(`could not copy all of ${dir} into the workspace`);
      } catch (error) {
        await session.close();
        if (error instanceof TreeRefused && error.code === "ENOSPC")
          throw new Error(`${caller}: ${dir} holds more than workspaceBytes (${bytes}) or workspaceFiles (${files})`, { cause: error });
        if (error instanceof TreeRefused) throw new Error(`${caller}: ${error.message}`, { cause: error });
        throw new Error(`${caller}: ${(error as Error).message}`, { cause: error });
      }
    }
    return session;
  }

  get path(): string {
    return this.bounded.work;
  }

  /** @internal The copy of the workspace for the run under way ("copy" sessions; see copy-workspace.ts). */
  copyRun(): CopyRun | undefined {
    return this.copying;
  }

  /**
   * @internal Runs `task` (one run with this workspace) when the runs and operations before it are over;
   * then sanitizes the workspace and, for a durable session, writes it back to `dir`. Throws when closed.
   */
  use(task: () => Promise<RunReport>, caller: string): Promise<RunReport> {
    if (this.closed) throw new TypeError(`${caller}: options.session is closed (session.close() was called)`);
    const queued = performance.now();
    const refused = (problem: string) => notStartedReport(failures.workspaceNotWritable(problem), performance.now() - queued);
    return this.queue(async () => {
      const copy =
        this.mechanism === "copy" ? new CopyRun(this.path, { bytes: this.workspaceBytes, files: this.workspaceFiles }) : undefined;
      this.copying = copy;
      let report: RunReport | undefined;
      try {
        report = await task();
      } finally {
        this.copying = undefined;
        // Read back whatever the run did, also when it failed (a body that wrote, then crashed), as a mounted one keeps it.
        const problem = await copy?.readBack();
        await this.settle();
        if (report !== undefined && copy?.problem !== undefined) report = failed(report, failures.workspaceNotCopied(copy.problem));
        else if (report !== undefined && problem !== undefined) report = failed(report, failures.workspaceNotKept(problem));
      }
      return report;
    }, refused);
  }

  /**
   * @internal A pooled run's result is in and its processes are being killed (`gone` settles once they are):
   * makes the workspace's tmpfs read-only, so nothing they do can change it any more, and its clean-up need not
   * wait for their end (which is milliseconds: a runner's exit). False when it could not be (not mounted, no
   * mount helper, or EBUSY: a file on it is open for writing): then the caller waits for `gone` before the
   * report, as before. Either way the workspace is made writable again once `gone` settles ({@link settle}).
   */
  async seal(gone: Promise<void>): Promise<boolean> {
    if (this.mechanism !== "mount") return false;
    // A request that failed may have been done: it is made writable again after `gone` all the same.
    const sealed = (await sealBounded(this.bounded.dir, true)) === undefined;
    this.sealing = { gone, sealed };
    return sealed;
  }

  /**
   * Makes the workspace writable again after a seal: tried twice, and again before the next run or operation
   * ({@link writable}). Resolves with undefined when done, else the mount helper's reason (kept in `unsealFailed`).
   */
  private async unseal(): Promise<string | undefined> {
    let problem: string | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      problem = await sealBounded(this.bounded.dir, false);
      if (problem === undefined) return undefined;
    }
    this.unsealFailed = problem;
    return problem;
  }

  /** Why the workspace is still read-only after a seal (its undoing failed), until a later try succeeds. */
  private unsealFailed: string | undefined;

  /**
   * Before a run or operation: a workspace left read-only by a seal whose undoing failed is tried again, and,
   * made writable, cleaned and written back as {@link settle} would have (its clean, read-only, could not remove
   * anything). Resolves with undefined when the workspace is writable, else why not (the mount helper's words).
   */
  private async writable(): Promise<string | undefined> {
    if (this.unsealFailed === undefined) return undefined;
    this.unsealFailed = undefined;
    const problem = await this.unseal();
    if (problem !== undefined) return problem;
    // Never rejects by design (the walks never throw); a bug must not turn a run's report into a rejection.
    await this.clean().catch(() => {});
    return undefined;
  }

  /**
   * After a run or a write: nothing planted is kept, nothing past the bounds, and a durable session's
   * directory holds the same. Never rejects (a run's report must not become a rejection, nor a later run's):
   * what cannot be handled is removed, and a workspace that could not be cleaned whole is not written back.
   */
  private async settle(): Promise<void> {
    const sealing = this.sealing;
    this.sealing = undefined;
    try {
      if (sealing?.sealed === true) {
        // Read-only: what the survey sees is final. Nothing to change (the usual run: files written, no links,
        // within the bounds), and the run is over for the caller; it is made writable again once its processes
        // are gone, before the session's next run or operation (the queue waits for it).
        const bound = { bytes: this.workspaceBytes, files: this.workspaceFiles };
        const clean =
          surveyCleanSync(this.path, bound) ??
          (await cleanTree(this.path, bound, { survey: true }).then((seen) => seen.complete && seen.removed === 0 && seen.masked === 0));
        if (clean) {
          if (this.dir !== undefined && existsSync(this.dir)) await mirrorTree(this.path, this.dir, LOCK_NAME);
          this.lingering = sealing.gone.then(async () => {
            await this.unseal();
          });
          return;
        }
      }
      // Something to remove or mask: only once nothing the run started can write any more, and writable.
      if (sealing !== undefined) {
        await sealing.gone;
        await this.unseal();
      }
      await this.clean();
    } catch {
      // Not reached by design (the walks never throw); a bug must not make every later run reject.
    }
  }

  /** Removes and masks what must not be kept, and, where that was done whole, writes a durable session back. */
  private async clean(): Promise<void> {
    const cleaned = await cleanTree(this.path, { bytes: this.workspaceBytes, files: this.workspaceFiles });
    if (cleaned.complete && this.dir !== undefined && existsSync(this.dir)) await mirrorTree(this.path, this.dir, LOCK_NAME);
  }

  /** @internal See {@link sessionSettled}. */
  idle(): Promise<void> {
    return this.tail.then(() => {});
  }

  /** Runs `task` after the runs and operations before it; `refused` instead, with why, where the workspace is not writable. */
  private queue<T>(task: () => Promise<T>, refused: (problem: string) => T): Promise<T> {
    const start = async () => {
      const problem = await this.writable();
      return problem === undefined ? task() : refused(problem);
    };
    const run = this.tail.then(start, start);
    this.tail = run.catch(() => {}).then(() => this.drain());
    return run;
  }

  /** What the run just over left to finish after its report ({@link settle}); never rejects. */
  private drain(): Promise<void> {
    const lingering = this.lingering;
    this.lingering = undefined;
    return lingering ?? Promise.resolve();
  }

  private operation<T>(name: string, task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`session.${name}: the session is closed`));
    return this.queue(task, (problem) => {
      throw new Error(`session.${name}: the workspace is read-only since its last run and could not be made writable again (${problem})`);
    });
  }

  /** The host path of a relative path, every existing directory on the way checked to be a directory (not a link). */
  private located(path: string, name: string): string {
    const relative = relativePath(path, `session.${name}`);
    let at = this.path;
    const parts = relative === "" ? [] : relative.split(sep);
    for (const part of parts.slice(0, -1)) {
      at = join(at, part);
      const stat = lstatSync(at, { throwIfNoEntry: false });
      if (stat !== undefined && !stat.isDirectory()) throw new Error(`session.${name}: ${path}: ${part} is not a directory`);
    }
    return join(this.path, relative);
  }

  writeFile(path: string, data: string | Uint8Array): Promise<void> {
    if (typeof data !== "string" && !(data instanceof Uint8Array))
      return Promise.reject(new TypeError("session.writeFile: data must be a string or a Uint8Array"));
    return this.operation("writeFile", async () => {
      const target = this.located(path, "writeFile");
      if (target === this.path) throw new TypeError("session.writeFile: a path must name a file");
      const parent = join(target, "..");
      if (parent !== this.path) await mkdir(parent, { recursive: true, mode: 0o700 });
      const existing = await lstat(target).catch(() => undefined);
      if (existing !== undefined && !existing.isFile()) throw new Error(`session.writeFile: ${path} is a ${kindOf(existing)}, not a file`);
      if (this.mechanism === "copy") {
        // The host's write is bounded as a body's is: what the tmpfs of the next run must hold.
        const used = await treeUsage(this.path);
        const size = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
        const bytes = used.bytes - (existing === undefined ? 0 : pages(existing.size)) + pages(size);
        const files = used.files + (existing === undefined ? 1 : 0);
        if (bytes > this.workspaceBytes || files > this.workspaceFiles)
          throw bounds(Object.assign(new Error("ENOSPC"), { code: "ENOSPC" }), this);
      }
      const handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | NO_FOLLOW, 0o600).catch(
        (error: unknown) => {
          throw bounds(error, this);
        },
      );
      try {
        await handle.writeFile(data).catch((error: unknown) => {
          throw bounds(error, this);
        });
      } finally {
        await handle.close();
        await this.settle();
      }
    });
  }

  readFile(path: string): Promise<Buffer> {
    return this.operation("readFile", async () => {
      const { fd } = this.openFile(path, "readFile");
      try {
        return await readWholeFile(fd);
      } finally {
        closeSync(fd);
      }
    });
  }

  /**
   * A regular file of the workspace opened for reading: never through a link, never a pipe or device. Throws
   * why not. Synchronous (as the sanitizing after a run is): a short check that must not wait behind other work.
   */
  private openFile(path: string, name: string): { fd: number; size: number } {
    const target = this.located(path, name);
    let fd: number;
    try {
      fd = openSync(target, constants.O_RDONLY | NO_FOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ELOOP")
        throw new Error(`session.${name}: ${path} is a link; a workspace holds only files`, { cause: error });
      throw error;
    }
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile())
        throw new Error(`session.${name}: ${path} is ${stat.isDirectory() ? "a directory; use list" : "not a regular file"}`);
      return { fd, size: stat.size };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * @internal See {@link readSessionFile}. Synchronous within its turn (at most the bound, 4 MiB from ears
   * mcp): `ears mcp` answers a call with the files before the pool starts the next runner, which blocks the
   * event loop for milliseconds.
   */
  readBounded(path: string, maxBytes: number): Promise<BoundedRead> {
    return this.operation("readFile", async () => {
      const { fd, size } = this.openFile(path, "readFile");
      try {
        // Past the bound only the first bytes are read (enough to tell what the file is); within it, one byte
        // more than the bound, so that a file growing while it is read is seen to pass it.
        const wanted = size > maxBytes ? Math.min(size, HEAD_BYTES) : Math.min(size, maxBytes) + 1;
        const buffer = Buffer.alloc(wanted);
        let read = 0;
        while (read < wanted) {
          const bytesRead = readSync(fd, buffer, read, wanted - read, read);
          if (bytesRead === 0) break;
          read += bytesRead;
        }
        const head = buffer.subarray(0, Math.min(read, HEAD_BYTES));
        if (size > maxBytes) return { complete: false, size, head, grew: false };
        // More than its size at the start: it is being written, so what was read may be no whole file.
        if (read > size) return { complete: false, size: read, head, grew: true };
        return { complete: true, size: read, bytes: buffer.subarray(0, read) };
      } finally {
        closeSync(fd);
      }
    });
  }

  list(path = ""): Promise<WorkspaceEntry[]> {
    return this.operation("list", async () => {
      const target = this.located(path, "list");
      const stat = await lstat(target);
      if (!stat.isDirectory()) throw new Error(`session.list: ${path} is not a directory`);
      const entries: WorkspaceEntry[] = [];
      for (const name of (await readdir(target)).sort()) {
        // An entry gone, or not nameable as text (the clean-up after a run removes those), is not listed.
        const entry = await lstat(join(target, name)).catch(() => undefined);
        const type = entry === undefined ? "other" : kindOf(entry);
        if (type !== "other") entries.push({ name, type, size: type === "file" ? entry!.size : 0 });
      }
      return entries;
    });
  }

  remove(path: string): Promise<void> {
    return this.operation("remove", async () => {
      const target = this.located(path, "remove");
      if (target === this.path) throw new TypeError("session.remove: a path must name a file or directory in the workspace");
      try {
        await removePath(this.path, relativePath(path, "session.remove"));
      } finally {
        await this.settle();
      }
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      await this.tail;
      await this.bounded.remove();
      await this.lock?.release();
    })();
    return this.closing;
  }
}

/** A write past the workspace's bounds: ENOSPC, saying which bounds (not the host's path). */
function bounds(error: unknown, session: Session): unknown {
  if ((error as NodeJS.ErrnoException).code !== "ENOSPC") return error;
  return Object.assign(
    new Error(
      `the workspace is full: it holds at most ${session.workspaceBytes} bytes and ${session.workspaceFiles} files and directories` +
        " (ENOSPC)",
    ),
    { code: "ENOSPC", cause: error },
  );
}

/** @internal Settles when the runs and operations of `session` queued so far are over (never rejects). */
export function sessionSettled(session: Session): Promise<void> {
  return (session as WorkspaceSession).idle();
}

/**
 * @internal A pooled run of `session` has its result and its processes are being killed (`gone`): makes the
 * workspace read-only until they are gone; false when it could not, and the caller must wait for `gone`.
 */
export function sealSession(session: Session, gone: Promise<void>): Promise<boolean> {
  return (session as WorkspaceSession).seal(gone);
}

/** @internal Runs `task` as a run of `session` (runCode's and runGuest's `session` option). */
export function sessionRun(session: Session, task: () => Promise<RunReport>, caller: string): Promise<RunReport> {
  return (session as WorkspaceSession).use(task, caller);
}

/** Bytes a {@link readSessionFile} past its bound still reads from the file's start (to tell an image by its magic bytes). */
const HEAD_BYTES = 64;

/**
 * What {@link readSessionFile} read: the whole file, or only its first bytes: when it is larger than the
 * bound, or when it grew while it was read (`grew`; then `size` is what was read, at most the bound and a byte).
 */
export type BoundedRead = { complete: true; size: number; bytes: Buffer } | { complete: false; size: number; head: Buffer; grew: boolean };

/**
 * @internal Reads a regular file of the workspace, at most `maxBytes` of it, as one of the session's
 * operations (after the run under way, before the next). Rejects as {@link Session.readFile} does: a path
 * outside the workspace, a missing path, a link, a directory or a special file.
 */
export function readSessionFile(session: Session, path: string, maxBytes: number): Promise<BoundedRead> {
  return (session as WorkspaceSession).readBounded(path, maxBytes);
}

/** @internal Whether `value` is a session made by createSession or openSession. */
export function isSession(value: unknown): value is Session {
  return value instanceof WorkspaceSession;
}

/** @internal The copy of a "copy" session's workspace for its run under way; undefined for a mounted one. */
export function sessionCopyRun(session: Session): CopyRun | undefined {
  return (session as WorkspaceSession).copyRun();
}

/** A run that fails with `failure`, whatever it returned (its workspace was not kept, or never given to it). */
function failed(report: RunReport, failure: HostFailure): RunReport {
  const { paused: _paused, ...rest } = report;
  return { ...rest, ok: false, failure } as RunReport;
}
