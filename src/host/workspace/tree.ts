/**
 * What a workspace may hold, and moving it between the host's directory and the bounded tmpfs: only
 * regular files and directories. A link, socket, named pipe or device is never kept (it could widen a
 * later run, or make the host write through it: the least-privilege rules of sandbox/policy.ts), and
 * no setuid, setgid or sticky bit survives. Every walk uses lstat and never follows a link.
 */
import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, rmSync, utimesSync, type Stats } from "node:fs";
import { join } from "node:path";

/** The permission bits a workspace keeps (rwx for user, group, others: no setuid, setgid, sticky). */
const KEPT_MODE = 0o777;

/** What an entry is, for a workspace: kept ("file", "directory") or not ("other": links and special files). */
export function entryKind(stat: Stats): "file" | "directory" | "other" {
  return stat.isFile() ? "file" : stat.isDirectory() ? "directory" : "other";
}

/**
 * After a run: removes every link and special file under `root` and clears every setuid, setgid and
 * sticky bit, so nothing a body planted is kept or followed by a later run or by the host. Returns the
 * paths removed (relative to `root`).
 */
export function sanitize(root: string, at = ""): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(join(root, at))) {
    const path = join(at, name);
    const full = join(root, path);
    const stat = lstatSync(full);
    const kind = entryKind(stat);
    if (kind === "other") {
      rmSync(full, { force: true });
      removed.push(path);
      continue;
    }
    if ((stat.mode & ~KEPT_MODE & 0o7777) !== 0) chmodSync(full, stat.mode & KEPT_MODE);
    if (kind === "directory") removed.push(...sanitize(root, path));
  }
  return removed;
}

/** A directory's entries that a workspace keeps, by name, with their lstat. */
function keptEntries(dir: string): Map<string, Stats> {
  const entries = new Map<string, Stats>();
  for (const name of readdirSync(dir)) entries.set(name, lstatSync(join(dir, name)));
  return entries;
}

/**
 * Loads a host directory into a workspace (a durable session opened): every file and directory of
 * `from`, copied into `to`. Throws on a link or special file (naming it: a workspace never holds one,
 * and the caller's directory is not changed to make it fit), and with ENOSPC when it does not fit the bound.
 */
export function load(from: string, to: string, at = ""): void {
  for (const [name, stat] of keptEntries(join(from, at))) {
    const path = join(at, name);
    const kind = entryKind(stat);
    if (kind === "other") {
      throw new Error(
        `${join(from, path)} is ${stat.isSymbolicLink() ? "a symbolic link" : "not a regular file or directory"}; ` +
          "a workspace holds only files and directories (remove it, or copy what it leads to in its place)",
      );
    }
    if (kind === "directory") {
      mkdirSync(join(to, path), { mode: stat.mode & KEPT_MODE });
      load(from, to, path);
    } else {
      copyFileSync(join(from, path), join(to, path));
      chmodSync(join(to, path), stat.mode & KEPT_MODE);
      utimesSync(join(to, path), stat.atime, stat.mtime);
    }
  }
}

/**
 * Makes `to` (a durable session's directory) hold what `from` (its bounded workspace, sanitized) holds:
 * first removes what is gone or changed kind (so the directory never holds more than the bound), then
 * copies each file whose size or modification time differs. Links and special files in `to` are removed,
 * never written through.
 */
export function mirror(from: string, to: string, at = ""): void {
  const source = keptEntries(join(from, at));
  const target = keptEntries(join(to, at));
  for (const [name, stat] of target) {
    const wanted = source.get(name);
    if (wanted === undefined || entryKind(stat) === "other" || entryKind(wanted) !== entryKind(stat)) {
      rmSync(join(to, at, name), { recursive: true, force: true });
      target.delete(name);
    }
  }
  for (const [name, stat] of source) {
    const path = join(at, name);
    const kind = entryKind(stat);
    if (kind === "other") continue;
    const had = target.get(name);
    if (kind === "directory") {
      if (had === undefined) mkdirSync(join(to, path));
      chmodSync(join(to, path), stat.mode & KEPT_MODE);
      mirror(from, to, path);
    } else if (
      had === undefined ||
      had.size !== stat.size ||
      had.mtimeMs !== stat.mtimeMs ||
      (had.mode & KEPT_MODE) !== (stat.mode & KEPT_MODE)
    ) {
      copyFileSync(join(from, path), join(to, path));
      chmodSync(join(to, path), stat.mode & KEPT_MODE);
      utimesSync(join(to, path), stat.atime, stat.mtime);
    }
  }
}
