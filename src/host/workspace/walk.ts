/**
 * The host's walks over a workspace and a durable session's directory: cleaning a workspace after a run,
 * writing it back to the host's directory, loading it from there, and removing a tree. One set of rules
 * for all of them (docs/host.md, "Sessions"):
 *
 * - **Never through a link.** Every directory is opened with `O_DIRECTORY | O_NOFOLLOW` and checked to be
 *   the one its entry named (device and inode); every entry is reached relative to its directory's open
 *   descriptor (`/proc/self/fd/N/name`: the kernel resolves the descriptor, not a path, and the last step
 *   is never followed), so a directory swapped for a link mid-walk is never entered, and a path's length
 *   never grows with depth. Node has no `openat`; the descriptor's path is its equivalent on Linux.
 * - **Byte names.** Names are read and used as bytes (`Buffer`), never decoded, so any name can be
 *   handled; a name that is not valid UTF-8 is removed from a workspace (the host's file operations
 *   take text paths, so it could never be read, listed or removed through them).
 * - **Bounded.** At most {@link MAX_DEPTH} levels of directories (deeper ones are removed), at most
 *   `files` entries and `bytes` of apparent file size (a sparse file counts its whole length: a tmpfs
 *   keeps no holes on the host's disk, but a copy would write them), so a write-back never writes more
 *   than the bound. Removing a tree is iterative (each directory is moved to the top and emptied there),
 *   so no depth makes it recurse or fail on a path's length.
 * - **Off the event loop.** Every step is an asynchronous call (libuv's thread pool); a file is copied in
 *   chunks of {@link CHUNK_BYTES}, so the host's other work runs between steps.
 * - **Never throws** (but {@link surveyTree}, whose refusal is the caller's answer): an entry that cannot be
 *   handled is removed; what cannot be removed makes the walk report itself incomplete.
 */
import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, opendirSync, openSync, type Stats } from "node:fs";
import { lstat, mkdir, open, readdir, rename, rmdir, unlink, type FileHandle } from "node:fs/promises";

/** The deepest a workspace's directories go (the top's own entries are level 1); deeper directories are removed. */
export const MAX_DEPTH = 128;
/** A file is copied this many bytes at a time. */
export const CHUNK_BYTES = 1024 * 1024;

const DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
const WRITE = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** What a walk bounds a tree to. */
export interface TreeBound {
  /** The most bytes of apparent file size. */
  bytes: number;
  /** The most entries (files and directories). */
  files: number;
}

/** What a workspace keeps: a file, a directory, or nothing else ("other": links, sockets, pipes, devices). */
export function kindOf(stat: Stats): "file" | "directory" | "other" {
  return stat.isFile() ? "file" : stat.isDirectory() ? "directory" : "other";
}

/**
 * The mode a kept entry gets: no setuid, setgid or sticky bit, no write for group or others (another local
 * user must not change a session), and the owner may always read and write a file and enter a directory.
 */
export function maskedMode(kind: "file" | "directory", mode: number): number {
  return (mode & 0o755) | (kind === "directory" ? 0o700 : 0o600);
}

/** Whether `name` is valid UTF-8 (what the host's text paths can name). */
export function isTextName(name: Buffer): boolean {
  return Buffer.from(name.toString("utf8"), "utf8").equals(name);
}

/** The path of `name` inside the directory open as `dir` (or the directory itself): resolved by the kernel through the descriptor. */
function at(dir: FileHandle, name?: Buffer): Buffer {
  const base = Buffer.from(`/proc/self/fd/${dir.fd}/`);
  return name === undefined ? base : Buffer.concat([base, name]);
}

/** Opens the directory `name` inside `dir` without following a link, and checks it is the entry `stat` described. */
async function openDirectory(path: Buffer | string, stat?: Stats): Promise<FileHandle> {
  const handle = await open(path, DIRECTORY);
  try {
    const opened = await handle.stat();
    if (!opened.isDirectory() || (stat !== undefined && (opened.ino !== stat.ino || opened.dev !== stat.dev)))
      throw Object.assign(new Error("the directory changed while it was walked"), { code: "ESTALE" });
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

async function names(dir: FileHandle): Promise<Buffer[]> {
  return (await readdir(at(dir), { encoding: "buffer" })).sort(Buffer.compare);
}

/** How many of a directory's steps (lstat, copy, removal) are under way at once: enough to keep libuv's thread pool busy. */
const PARALLEL = 16;

/** `work` for every item, at most {@link PARALLEL} at once; resolves with the results in order, or rejects with the first error. */
async function inParallel<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  return results;
}

/** The names of directories being removed (at a tree's top); a workspace never keeps one. */
const TRASH = ".ears-removing-";

/** A name no entry of a workspace has, for a directory being removed. */
function trashName(): Buffer {
  return Buffer.from(`${TRASH}${randomBytes(8).toString("hex")}`);
}

/**
 * Removes `name` inside `dir` (a file, link or special file is unlinked; a directory is removed with
 * everything in it), never following a link. A directory is first moved to `root`'s top, and each
 * directory in it is moved there too before it is emptied, so depth costs neither a call stack nor a path.
 * Resolves true when it is gone.
 */
export async function removeEntry(dir: FileHandle, name: Buffer, root: FileHandle): Promise<boolean> {
  try {
    const stat = await lstat(at(dir, name));
    if (!stat.isDirectory()) {
      await unlink(at(dir, name));
      return true;
    }
    const pending = [trashName()];
    await rename(at(dir, name), at(root, pending[0]));
    let gone = true;
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      try {
        const handle = await openDirectory(at(root, next));
        try {
          for (const entry of await names(handle)) {
            const inner = await lstat(at(handle, entry));
            if (inner.isDirectory()) {
              const moved = trashName();
              await rename(at(handle, entry), at(root, moved));
              pending.push(moved);
            } else await unlink(at(handle, entry));
          }
        } finally {
          await handle.close();
        }
        await rmdir(at(root, next));
      } catch {
        gone = false;
      }
    }
    return gone;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** What {@link cleanTree} did. */
export interface Cleaned {
  /** Entries removed: links, special files, byte names, too deep, past the bound, or that could not be handled. */
  removed: number;
  /** Files and directories removed because the bound was passed (part of `removed`). */
  overBound: number;
  /** Kept entries whose mode was masked ({@link maskedMode}). */
  masked: number;
  /** Files and directories kept, and their apparent bytes. */
  files: number;
  bytes: number;
  /** False when something could not be read or removed: the tree may hold what it should not (not written back). */
  complete: boolean;
}

/**
 * After a run (and after the host's own writes): removes from the workspace `root` every link, socket,
 * named pipe and device, every name that is not UTF-8, every directory deeper than {@link MAX_DEPTH}, and
 * every file or directory past `bound` (in name order, depth first: a file whose apparent size would take
 * the total past `bound.bytes` goes, as does every entry past `bound.files`); masks the modes of the rest
 * ({@link maskedMode}). Never throws. With `survey`, changes nothing (the tree may be read-only): what
 * it would remove and mask is counted as removed and masked.
 */
export async function cleanTree(root: string, bound: TreeBound, { survey = false } = {}): Promise<Cleaned> {
  const state: Cleaned = { removed: 0, overBound: 0, masked: 0, files: 0, bytes: 0, complete: true };
  let top: FileHandle;
  try {
    top = await openDirectory(root);
  } catch {
    return { ...state, complete: false };
  }
  const drop = async (dir: FileHandle, name: Buffer, overBound: boolean) => {
    if (survey || (await removeEntry(dir, name, top))) {
      state.removed++;
      if (overBound) state.overBound++;
    } else state.complete = false;
  };
  // Depth first, in name order within a directory: its files are decided first (so which file passes the
  // bound is the same every time), then its directories one at a time, so at most MAX_DEPTH are open at once.
  const walk = async (dir: FileHandle, depth: number): Promise<void> => {
    let entries: { name: Buffer; stat: Stats | undefined }[];
    try {
      entries = await inParallel(await names(dir), async (name) => ({ name, stat: await lstat(at(dir, name)).catch(() => undefined) }));
    } catch {
      state.complete = false;
      return;
    }
    const directories: { name: Buffer; stat: Stats }[] = [];
    const actions: (() => Promise<void>)[] = [];
    for (const { name, stat } of entries) {
      if (stat === undefined) {
        // Gone since the listing, or not to be looked at: removed if it is still there.
        actions.push(() => drop(dir, name, false));
        continue;
      }
      const kind = kindOf(stat);
      // A removal the host did not finish (it was killed) is finished now.
      const unfinished = dir === top && name.toString("latin1").startsWith(TRASH);
      if (kind === "other" || unfinished || !isTextName(name) || (kind === "directory" && depth >= MAX_DEPTH)) {
        actions.push(() => drop(dir, name, false));
        continue;
      }
      const size = kind === "file" ? stat.size : 0;
      if (state.files + 1 > bound.files || state.bytes + size > bound.bytes) {
        actions.push(() => drop(dir, name, true));
        continue;
      }
      state.files++;
      state.bytes += size;
      if (kind === "directory") directories.push({ name, stat });
      else if ((stat.mode & 0o7777) !== maskedMode("file", stat.mode)) {
        state.masked++;
        if (!survey)
          actions.push(async () => {
            const handle = await open(at(dir, name), READ);
            try {
              await handle.chmod(maskedMode("file", stat.mode));
            } finally {
              await handle.close();
            }
          });
      }
    }
    await inParallel(actions, (action) => action().catch(() => (state.complete = false)));
    for (const { name, stat } of directories) {
      try {
        const inner = await openDirectory(at(dir, name), stat);
        try {
          const mode = maskedMode("directory", stat.mode);
          if ((stat.mode & 0o7777) !== mode) {
            state.masked++;
            if (!survey) await inner.chmod(mode);
          }
          await walk(inner, depth + 1);
        } finally {
          await inner.close();
        }
      } catch {
        await drop(dir, name, false);
      }
    }
  };
  try {
    await walk(top, 0);
  } finally {
    await top.close();
  }
  return state;
}

/** Entries {@link surveyCleanSync} looks at before it leaves a tree to {@link cleanTree}'s survey, off the event loop. */
export const SYNC_SURVEY_ENTRIES = 256;

/**
 * Whether {@link cleanTree} would change nothing in `root`, for a tree nothing can change meanwhile (a sealed,
 * read-only workspace), looked at synchronously: a run's few files cost microseconds, where each of the
 * asynchronous walk's steps waits for the thread pool and the event loop. The same rules in the same order,
 * without a link ever followed; true or false, or undefined past `budget` entries. Never throws.
 */
export function surveyCleanSync(root: string, bound: TreeBound, budget = SYNC_SURVEY_ENTRIES): boolean | undefined {
  let files = 0;
  let bytes = 0;
  let seen = 0;
  const walk = (dir: number, depth: number): boolean | undefined => {
    const base = Buffer.from(`/proc/self/fd/${dir}/`);
    // Read only as far as the budget: a directory of thousands of entries is the asynchronous walk's, and reading
    // it whole here first would block the event loop for milliseconds.
    const entries: Buffer[] = [];
    // Names as bytes (a name need not be UTF-8): Node takes "buffer" here as readdir does; its types do not say so.
    const listing = opendirSync(base, { encoding: "buffer" as BufferEncoding });
    try {
      for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) {
        entries.push(entry.name as unknown as Buffer);
        if (seen + entries.length > budget) return undefined;
      }
    } finally {
      listing.closeSync();
    }
    seen += entries.length;
    entries.sort(Buffer.compare);
    const directories: { name: Buffer; stat: Stats }[] = [];
    for (const name of entries) {
      const stat = lstatSync(Buffer.concat([base, name]));
      const kind = kindOf(stat);
      if (kind === "other" || (depth === 0 && name.toString("latin1").startsWith(TRASH)) || !isTextName(name)) return false;
      if (kind === "directory" && depth >= MAX_DEPTH) return false;
      const size = kind === "file" ? stat.size : 0;
      if (files + 1 > bound.files || bytes + size > bound.bytes) return false;
      files++;
      bytes += size;
      if (kind === "directory") directories.push({ name, stat });
      else if ((stat.mode & 0o7777) !== maskedMode("file", stat.mode)) return false;
    }
    for (const { name, stat } of directories) {
      if ((stat.mode & 0o7777) !== maskedMode("directory", stat.mode)) return false;
      const inner = openSync(Buffer.concat([base, name]), DIRECTORY);
      try {
        const opened = fstatSync(inner);
        if (!opened.isDirectory() || opened.ino !== stat.ino || opened.dev !== stat.dev) return false;
        const clean = walk(inner, depth + 1);
        if (clean !== true) return clean;
      } finally {
        closeSync(inner);
      }
    }
    return true;
  };
  try {
    const top = openSync(root, DIRECTORY);
    try {
      return fstatSync(top).isDirectory() && walk(top, 0);
    } finally {
      closeSync(top);
    }
  } catch {
    // What cannot be read is what cleanTree would remove (or could not read): not clean.
    return false;
  }
}

/**
 * Makes the host's directory `to` hold what the workspace `from` (cleaned) holds: first removes what is
 * gone or changed kind, so `to` never holds more than the bound; then makes each directory and copies each
 * file whose size, modification time or mode differs, in chunks, at most the size it had when its walk
 * reached it. Links and special files in `to` are removed, never written through. `reserved`: a name at
 * the top that is neither written nor removed (the directory's lock). Never throws; resolves false when
 * something could not be written.
 */
export async function mirrorTree(from: string, to: string, reserved?: string): Promise<boolean> {
  let complete = true;
  let source: FileHandle;
  let target: FileHandle;
  try {
    source = await openDirectory(from);
  } catch {
    return false;
  }
  try {
    target = await openDirectory(to);
  } catch {
    await source.close();
    return false;
  }
  const walk = async (src: FileHandle, dst: FileHandle, depth: number): Promise<void> => {
    const wanted = new Map<string, { name: Buffer; stat: Stats }>();
    const had = new Map<string, { name: Buffer; stat: Stats }>();
    try {
      const [inSource, inTarget] = await Promise.all([names(src), names(dst)]);
      await Promise.all([
        inParallel(inSource, async (name) => {
          const key = name.toString("latin1");
          if (src === source && key === reserved) return;
          const stat = await lstat(at(src, name));
          if (kindOf(stat) !== "other") wanted.set(key, { name, stat });
        }),
        inParallel(inTarget, async (name) => {
          const key = name.toString("latin1");
          if (dst === target && key === reserved) return;
          had.set(key, { name, stat: await lstat(at(dst, name)) });
        }),
      ]);
    } catch {
      complete = false;
      return;
    }
    // Removals first: the directory never holds more than the bound.
    await inParallel([...had], async ([key, { name, stat }]) => {
      const want = wanted.get(key);
      if (want !== undefined && kindOf(stat) !== "other" && kindOf(stat) === kindOf(want.stat)) return;
      had.delete(key);
      if (!(await removeEntry(dst, name, target))) complete = false;
    });
    const directories: { name: Buffer; stat: Stats; old: Stats | undefined }[] = [];
    await inParallel([...wanted], async ([key, { name, stat }]) => {
      const old = had.get(key)?.stat;
      if (kindOf(stat) === "directory") {
        directories.push({ name, stat, old });
        return;
      }
      const mode = maskedMode("file", stat.mode);
      if (old !== undefined && old.size === stat.size && Math.abs(old.mtimeMs - stat.mtimeMs) < 1 && (old.mode & 0o7777) === mode) return;
      await copyFile(at(src, name), at(dst, name), stat, mode).catch(() => (complete = false));
    });
    directories.sort((a, b) => Buffer.compare(a.name, b.name));
    for (const { name, stat, old } of directories) {
      if (depth >= MAX_DEPTH) continue;
      try {
        if (old === undefined) await mkdir(at(dst, name), { mode: 0o700 });
        const inner = await openDirectory(at(src, name), stat);
        try {
          const out = await openDirectory(at(dst, name));
          try {
            const mode = maskedMode("directory", stat.mode);
            if (((await out.stat()).mode & 0o7777) !== mode) await out.chmod(mode);
            await walk(inner, out, depth + 1);
          } finally {
            await out.close();
          }
        } finally {
          await inner.close();
        }
      } catch {
        complete = false;
      }
    }
  };
  try {
    await walk(source, target, 0);
  } finally {
    await Promise.all([source.close(), target.close()]);
  }
  return complete;
}

/** Copies a regular file, at most `stat.size` bytes, chunk by chunk; the copy gets `mode` and the source's times. */
async function copyFile(from: Buffer, to: Buffer, stat: Stats, mode: number): Promise<void> {
  const input = await open(from, READ);
  try {
    const opened = await input.stat();
    if (!opened.isFile() || opened.ino !== stat.ino)
      throw Object.assign(new Error("the file changed while it was copied"), { code: "ESTALE" });
    const output = await open(to, WRITE, 0o600);
    try {
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(1, stat.size)));
      let copied = 0;
      while (copied < stat.size) {
        const { bytesRead } = await input.read(buffer, 0, Math.min(buffer.length, stat.size - copied), copied);
        if (bytesRead === 0) break;
        let written = 0;
        while (written < bytesRead) written += (await output.write(buffer, written, bytesRead - written, copied + written)).bytesWritten;
        copied += bytesRead;
      }
      await output.chmod(mode);
      // In seconds with their fraction (a Date would round to the millisecond).
      await output.utimes(stat.atimeMs / 1000, stat.mtimeMs / 1000);
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
}

/** What {@link measureTree} found. */
export interface Measured {
  /** The entries counted (every kind) and the apparent bytes of the regular files among them, up to where the walk stopped. */
  files: number;
  bytes: number;
  /** Which bound was passed (the walk stopped there), if one was. */
  over?: "files" | "bytes";
  /** A directory deeper than {@link MAX_DEPTH} levels was found (not walked: what it holds is not counted). */
  deep: boolean;
  /** A directory that could not be read (its path from the top, "" for the top itself): the count is incomplete. */
  unreadable?: string;
}

/**
 * Counts the tree under `root` as a workspace's bounds count it, and stops as soon as `bound` is passed:
 * every entry (a link, a pipe, a socket: each costs the disk an inode) against `bound.files`, and each regular
 * file's apparent size (holes counted) against `bound.bytes`. Directories deeper than {@link MAX_DEPTH} are
 * counted but not walked (`deep`). `page`: each file's size is counted in whole pages of this many bytes (what a
 * tmpfs holds it in; 1, the default, counts apparent bytes). Never follows a link, never changes the tree, never throws.
 */
export async function measureTree(root: string, bound: TreeBound, page = 1): Promise<Measured> {
  const state: Measured = { files: 0, bytes: 0, deep: false };
  const walk = async (dir: FileHandle, path: string, depth: number): Promise<boolean> => {
    let entries: { name: Buffer; stat: Stats | undefined }[];
    try {
      entries = await inParallel(await names(dir), async (name) => ({ name, stat: await lstat(at(dir, name)).catch(() => undefined) }));
    } catch {
      state.unreadable = path;
      return false;
    }
    const directories: { name: Buffer; stat: Stats }[] = [];
    for (const { name, stat } of entries) {
      // Gone since the listing: nothing to count.
      if (stat === undefined) continue;
      state.files++;
      if (stat.isFile()) state.bytes += Math.ceil(stat.size / page) * page;
      if (state.files > bound.files || state.bytes > bound.bytes) {
        state.over = state.files > bound.files ? "files" : "bytes";
        return false;
      }
      if (stat.isDirectory()) {
        if (depth >= MAX_DEPTH) state.deep = true;
        else directories.push({ name, stat });
      }
    }
    for (const { name, stat } of directories) {
      const inner = path === "" ? name.toString("utf8") : `${path}/${name.toString("utf8")}`;
      let handle: FileHandle;
      try {
        handle = await openDirectory(at(dir, name), stat);
      } catch (error) {
        // Removed or swapped meanwhile: nothing of it to count; unreadable (its mode): the count cannot be complete.
        if ((error as NodeJS.ErrnoException).code === "EACCES") {
          state.unreadable = inner;
          return false;
        }
        continue;
      }
      try {
        if (!(await walk(handle, inner, depth + 1))) return false;
      } finally {
        await handle.close();
      }
    }
    return true;
  };
  let top: FileHandle;
  try {
    top = await openDirectory(root);
  } catch {
    return { ...state, unreadable: "" };
  }
  try {
    await walk(top, "", 0);
  } finally {
    await top.close();
  }
  return state;
}

/** Why a host directory cannot be loaded as a workspace. */
export class TreeRefused extends Error {
  constructor(
    message: string,
    readonly code: "ENOSPC" | "EINVAL",
  ) {
    super(message);
  }
}

/**
 * Checks that the host's directory `root` can be loaded into a workspace bounded by `bound`: only files and
 * directories, UTF-8 names, at most {@link MAX_DEPTH} levels, within the bound (apparent sizes). Throws
 * {@link TreeRefused} naming the first problem (its path), or what the file system throws.
 * `reserved`: a name at the top that is not looked at (the directory's lock).
 */
export async function surveyTree(root: string, bound: TreeBound, reserved?: string): Promise<void> {
  let files = 0;
  let bytes = 0;
  const walk = async (dir: FileHandle, path: string, depth: number): Promise<void> => {
    for (const name of await names(dir)) {
      if (path === "" && name.toString("latin1") === reserved) continue;
      const relative = path === "" ? name.toString("utf8") : `${path}/${name.toString("utf8")}`;
      const shown = `${root}/${relative}`;
      if (!isTextName(name))
        throw new TreeRefused(`${JSON.stringify(shown)} is not named in UTF-8; a workspace's names are text`, "EINVAL");
      const stat = await lstat(at(dir, name));
      const kind = kindOf(stat);
      if (kind === "other") {
        throw new TreeRefused(
          `${shown} is ${stat.isSymbolicLink() ? "a symbolic link" : "not a regular file or directory"}; ` +
            "a workspace holds only files and directories (remove it, or copy what it leads to in its place)",
          "EINVAL",
        );
      }
      files++;
      bytes += kind === "file" ? stat.size : 0;
      if (files > bound.files || bytes > bound.bytes) throw new TreeRefused("past the bound", "ENOSPC");
      if (kind === "directory") {
        if (depth + 1 > MAX_DEPTH) throw new TreeRefused(`${shown} is more than ${MAX_DEPTH} directories deep`, "EINVAL");
        const inner = await openDirectory(at(dir, name), stat);
        try {
          await walk(inner, relative, depth + 1);
        } finally {
          await inner.close();
        }
      }
    }
  };
  const top = await openDirectory(root);
  try {
    await walk(top, "", 0);
  } finally {
    await top.close();
  }
}

/**
 * Removes `relative` (a normal relative path of text names) inside `root`, never through a link: each
 * directory on the way is opened without following one. A missing path is not an error. Rejects with
 * what the file system says when a directory on the way is not one.
 */
export async function removePath(root: string, relative: string): Promise<void> {
  const parts = relative.split("/");
  const last = Buffer.from(parts.pop()!);
  const top = await openDirectory(root);
  const opened: FileHandle[] = [];
  try {
    let dir = top;
    for (const part of parts) {
      try {
        dir = await openDirectory(at(dir, Buffer.from(part)));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      opened.push(dir);
    }
    if (!(await removeEntry(dir, last, top))) throw new Error(`could not remove all of ${JSON.stringify(relative)}`);
  } finally {
    for (const handle of opened.reverse()) await handle.close();
    await top.close();
  }
}
