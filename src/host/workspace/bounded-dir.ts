/**
 * A directory bounded in bytes and in files: a tmpfs the host mounts on it (`size`, `nr_inodes`,
 * `nosuid`, `nodev`, mode 0700). The kernel enforces both bounds, so a write past them fails with
 * ENOSPC in whatever writes (a body in its sandbox, or the host), and nothing of it ever reaches the
 * host's disk. It is the one mechanism behind runCode's private working directory and a session's
 * workspace (docs/host.md, "Workspaces").
 *
 * Why a tmpfs the host mounts, not bubblewrap's `--size --tmpfs` (which bounds /tmp): a session's
 * workspace outlives its runs, and the host must reach it between them to put files in and take them
 * out; a tmpfs made inside a sandbox dies with it. Mounting needs CAP_SYS_ADMIN (a root host, as the
 * cgroup limits do); a host that cannot mount gets {@link mountBounded}'s reason and the caller decides.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coverDirectory } from "../process/process-group.js";
import { findMountHelper, MountHelper, type Mounter } from "./mount-helper.js";

/** A directory's bounds: bytes of file data, and files (every file, directory and link counts one). */
export interface DirBound {
  bytes: number;
  files: number;
}

/** Bytes per file the default file bound allows: one file per 4 KiB page of the byte bound. */
const BYTES_PER_FILE = 4096;
/** The file bound is never below this (a small bound still holds a project's worth of small files)... */
const MIN_FILES = 1024;
/** ...nor above this (each file costs the kernel memory outside the byte bound). */
const MAX_FILES = 1 << 20;

/** The file bound that goes with a byte bound: one file per 4 KiB of it, from 1024 to 1,048,576. */
export function filesFor(bytes: number): number {
  return Math.min(MAX_FILES, Math.max(MIN_FILES, Math.floor(bytes / BYTES_PER_FILE)));
}

/** The mount options of a bounded directory (pure; the bytes rounded down to whole KiB, which tmpfs takes). */
export function boundOptions(bound: DirBound): string {
  return `size=${Math.max(1, Math.floor(bound.bytes / 1024))}k,nr_inodes=${bound.files},mode=0700,nosuid,nodev`;
}

/** The filesystem type a bounded directory's mount reports (its `source` in /proc/self/mounts). */
const SOURCE = "ears-bounded";
/** How long mount or umount may take before it counts as failing. */
const TIMEOUT_MS = 10_000;

let tools: { mount: string; umount: string } | string | undefined;

/**
 * What a bounded directory uses of the machine besides its temporary directory: the mount and umount programs,
 * the mount helper, and the watchdog's cover. {@link hostMounts} by default; the in-process tests give stand-ins
 * (programs that only record what they were asked), so that no test, and no mutant under Stryker, mounts or
 * unmounts anything (CONTRIBUTING.md, "Mutation testing").
 */
export interface MountSystem {
  /** The mount and umount programs, or why there are none. */
  tools(): { mount: string; umount: string } | string;
  /**
   * The mount helper (mount-helper.ts) that binds and detaches without a fork of the host, or undefined where
   * there is none: then the programs do it.
   */
  helper?(): Mounter | undefined;
  /** Has the watchdog remove `dir` should the host die; returns what forgets it. */
  cover(dir: string): () => void;
}

let helper: MountHelper | null | undefined;

/** This package's mount helper, started with its first request; undefined where none is built. */
function hostHelper(): Mounter | undefined {
  if (helper === undefined) {
    const path = findMountHelper();
    helper = path === undefined ? null : new MountHelper(path);
  }
  return helper?.request;
}

/** The machine's own: util-linux's mount and umount, this package's mount helper, and the host's watchdog. */
export const hostMounts: MountSystem = { tools: mountTools, helper: hostHelper, cover: coverDirectory };

/** The mount and umount programs, or why there are none. */
function mountTools(): { mount: string; umount: string } | string {
  if (tools !== undefined) return tools;
  const find = (name: string) =>
    [`/usr/bin/${name}`, `/bin/${name}`, `/usr/sbin/${name}`, `/sbin/${name}`].find((path) => {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  const mount = find("mount");
  const umount = find("umount");
  tools = mount === undefined || umount === undefined ? "mount and umount (util-linux) are not installed" : { mount, umount };
  return tools;
}

/** The first line a failed program wrote, or its error's message. */
function why(error: unknown): string {
  // Empty or null when the program could not be started at all (a spawn error).
  const stderr = (error as { stderr?: Buffer | string | null }).stderr;
  const text = (stderr === undefined || stderr === null ? "" : String(stderr)).trim().split("\n")[0];
  return text !== undefined && text !== "" ? text : (error as Error).message;
}

/**
 * A shared mount's propagation, in a peer group of its own: made private first, so that it is nobody's
 * peer (the host's / may be shared, systemd's default), then shared, so that a mount made on it later
 * reaches the sandboxes whose binds were taken from it (bubblewrap makes their copies slaves).
 */
const SHARED = ["--make-private", "--make-shared"];

/**
 * Mounts a bounded tmpfs on `dir` (an existing, empty directory of the host's), or with `bound` undefined
 * binds `dir` onto itself (unbounded, but a mount point), without blocking the event loop: through the mount
 * helper where there is one, else the mount program. `shared`: see {@link BoundedDir.shared}. Resolves with
 * undefined when it is mounted, else why not (not Linux, no mount program, not permitted: the host is not
 * root); never rejects.
 */
export async function mountBounded(
  dir: string,
  bound: DirBound | undefined,
  shared = false,
  system = hostMounts,
): Promise<string | undefined> {
  if (process.platform !== "linux") return `bounded directories need Linux (this is ${process.platform})`;
  const found = system.tools();
  if (typeof found === "string") return found;
  const failed = (reason: string) => `could not mount a bounded tmpfs on ${dir} (${reason}); the host needs CAP_SYS_ADMIN (run it as root)`;
  const mounter = system.helper?.();
  if (mounter !== undefined) {
    // The helper's tmpfs is nosuid and nodev, as boundOptions' own flags say for the mount program.
    const problem = await mounter(
      bound === undefined ? { verb: "self-bind", dir } : { verb: "tmpfs", dir, data: tmpfsData(bound), shared },
    );
    return problem === undefined ? undefined : failed(problem);
  }
  const what = bound === undefined ? ["--bind", dir] : ["-t", "tmpfs", "-o", boundOptions(bound), SOURCE];
  return new Promise((settle) => {
    execFile(found.mount, [...what, ...(shared ? SHARED : []), dir], { env: {}, timeout: TIMEOUT_MS }, (error, _stdout, stderr) =>
      settle(error === null ? undefined : failed(why({ stderr, message: error.message }))),
    );
  });
}

/** The tmpfs data options of a bound for the mount helper: boundOptions without the flags it always sets (nosuid, nodev). */
export function tmpfsData(bound: DirBound): string {
  return boundOptions(bound).replace(/,nosuid,nodev$/, "");
}

/**
 * Binds `source` (a session's workspace) onto `target` (a pooled runner's working directory, on a
 * {@link BoundedDir.shared} mount), without blocking the event loop. Resolves with undefined when it is
 * bound, else why not; never rejects. The bind goes when `target`'s mount is detached (its `remove`).
 */
export function bindMount(source: string, target: string, system = hostMounts): Promise<string | undefined> {
  const found = system.tools();
  if (typeof found === "string") return Promise.resolve(found);
  // The helper where there is one: a pooled session's run waits for this bind, and a fork of the host costs milliseconds.
  const mounter = system.helper?.();
  if (mounter !== undefined) {
    return mounter({ verb: "bind", source, target }).then((problem) =>
      problem === undefined ? undefined : `could not bind ${source} onto ${target} (${problem})`,
    );
  }
  return new Promise((settle) => {
    execFile(found.mount, ["--bind", source, target], { env: {}, timeout: TIMEOUT_MS }, (error, _stdout, stderr) =>
      settle(error === null ? undefined : `could not bind ${source} onto ${target} (${why({ stderr, message: error.message })})`),
    );
  });
}

/**
 * Makes the bounded tmpfs mounted on `dir` read-only (`readOnly`) or writable again: its superblock, so every
 * mount of it at once, also the binds inside sandboxes. Through the mount helper only (a fork of the host would
 * cost what this saves: see WorkspaceSession.seal). Resolves with undefined when done, else why not (EBUSY:
 * a file on it is open for writing); never rejects. A request that failed may still have been done.
 */
export function sealBounded(dir: string, readOnly: boolean, system = hostMounts): Promise<string | undefined> {
  const mounter = system.helper?.();
  if (mounter === undefined) return Promise.resolve("there is no mount helper");
  return mounter({ verb: readOnly ? "read-only" : "writable", dir });
}

/**
 * Detaches the bounded tmpfs on `dir` (lazily: it is freed once nothing uses it). Resolves with undefined
 * when it is detached, else why not (the helper's or umount's words, a timeout); never rejects. Without
 * mount programs there is nothing this host could have mounted: undefined.
 */
export function unmountBounded(dir: string, system = hostMounts): Promise<string | undefined> {
  const found = system.tools();
  if (typeof found === "string") return Promise.resolve(undefined);
  const failed = (reason: string) => `could not detach ${dir} (${reason})`;
  const mounter = system.helper?.();
  if (mounter !== undefined)
    return mounter({ verb: "detach", dir }).then((problem) => (problem === undefined ? undefined : failed(problem)));
  return new Promise((settle) => {
    execFile(found.umount, ["-l", dir], { env: {}, timeout: TIMEOUT_MS }, (error, _stdout, stderr) =>
      settle(error === null ? undefined : failed(why({ stderr, message: error.message }))),
    );
  });
}

/** A bounded directory made by {@link makeBoundedDir}: `work` inside `dir`, the mount point. */
export interface BoundedDir {
  /** The directory the host made (mode 0700), the mount point: the watchdog removes it should the host die before `remove` ends. */
  dir: string;
  /** The directory inside it to use (mode 0700). */
  work: string;
  /** Whether the tmpfs is mounted; false: `fallback` was true and the host could not mount (then unbounded). */
  bounded: boolean;
  /**
   * Whether `dir` is a mount of its own whose propagation is shared: a mount the host makes on `work`
   * after a sandbox bound it (a session's workspace, bound late onto a pooled runner's directory) is seen
   * inside that sandbox too. False unless asked for, and where the host could not mount.
   */
  shared: boolean;
  /**
   * Unmounts and removes it, once; resolves when it is gone, or is left (covered by the watchdog) because
   * its detach failed. Never rejects.
   */
  remove(): Promise<void>;
}

/**
 * Makes a fresh directory under the OS temporary directory, named `prefix` and a random suffix, with the
 * tmpfs of `bound` mounted on it and `work` made inside. Where the host cannot mount, it rejects with the
 * reason, unless `fallback` (then the directory is a plain one, bounded by nothing). With `shared`, the mount's
 * propagation is shared (and with no `bound`, `dir` is bound onto itself to be a mount); where that cannot
 * be had, `shared` is false and the rest as without it. Rejects with what mkdtemp throws.
 */
export async function makeBoundedDir(
  prefix: string,
  bound: DirBound | undefined,
  fallback: boolean,
  shared = false,
  system = hostMounts,
): Promise<BoundedDir> {
  // Its real path: the sandbox compares the working directory by it.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  // Covered from the moment it exists until it is gone: a host killed at any point in between (a run pool's
  // runner still starting, or ended and its directory still being unmounted) has the watchdog remove it.
  const uncover = system.cover(dir);
  let bounded = false;
  let mounted = false;
  let removing: Promise<void> | undefined;
  const remove = () =>
    (removing ??= (async () => {
      // Detached with everything mounted on it (a session's workspace bound onto `work`), before anything is removed.
      // Where the detach failed, the directory is kept: a recursive removal would go through a bind still on
      // `work` and delete the session's files. It stays covered, so the watchdog detaches and removes it when
      // the host ends.
      if (mounted && (await unmountBounded(dir, system)) !== undefined) return;
      try {
        rmSync(dir, { recursive: true, force: true });
        uncover();
      } catch {
        // Best effort: a directory that cannot be removed must not turn a report into a rejection (the watchdog keeps it).
      }
    })());
  try {
    if (bound !== undefined) {
      const problem = await mountBounded(dir, bound, shared, system);
      if (problem !== undefined && !fallback) throw new Error(problem);
      bounded = problem === undefined;
      mounted = bounded;
    } else if (shared) mounted = (await mountBounded(dir, undefined, true, system)) === undefined;
    const work = join(dir, "work");
    mkdirSync(work, { mode: 0o700 });
    return { dir, work, bounded, shared: shared && mounted, remove };
  } catch (error) {
    void remove();
    throw error;
  }
}
