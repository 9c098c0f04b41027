/**
 * A session's workspace on a host that cannot mount (not root; a container): the "copy" mechanism. The
 * workspace lives in a plain directory of the host's (`Session.path`); a run gets, at the same path inside
 * its sandbox, a tmpfs of `workspaceBytes` that bubblewrap mounts (no privilege needed: it is made in the
 * sandbox's own namespaces), so a write past the bound fails with ENOSPC inside the body, as a mounted
 * workspace's does.
 *
 * The copies, and why they are safe:
 * - In: the sandbox's first program is a gate (a POSIX sh, {@link gateScript}) that says it is ready on one
 *   descriptor and waits for a line on another before it executes the guest. Once ready, the sandbox's
 *   mounts are all made and nothing of the guest has run: the host opens the tmpfs through the sandbox's
 *   root (`/proc/<pid>/root`), checks it is the tmpfs it asked for, copies the workspace into it, and
 *   only then lets the gate go on. The host keeps that descriptor for the whole run.
 * - Out: after the run, the host reads the tmpfs through its descriptor (the mount lives while it is held,
 *   even once the sandbox is gone) into a fresh directory, which then takes the workspace's place. Every
 *   step names one entry relative to a directory descriptor and never follows a link, so a process of the
 *   run that is still there cannot lead the walk outside the tmpfs by swapping a directory for a link; only
 *   files and directories are kept (no link, pipe, socket or device, no setuid, setgid or sticky bit); and
 *   the walk stops at the bounds (files, and bytes counted by size: a sparse file's holes count), in which
 *   case nothing of the run is kept and the run fails naming the bound.
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statfsSync,
  writeSync,
} from "node:fs";
import type { Readable, Writable } from "node:stream";
import { dirname, join } from "node:path";
import { childrenOf } from "../limits/process-tree.js";

/** The descriptor on which the gate waits for the host's go-ahead (after the seccomp program's, 3). */
export const GATE_GO_FD = 4;
/** The descriptor on which the gate says the sandbox is ready. */
export const GATE_READY_FD = 5;

/** The bytes a file counts for: its size in whole 4 KiB pages, as a tmpfs holds it. */
const PAGE = 4096;
/** Linux's TMPFS_MAGIC, statfs's type of a tmpfs. */
const TMPFS_MAGIC = 0x01021994;

/**
 * The gate's script: ready on {@link GATE_READY_FD}, then the go-ahead on {@link GATE_GO_FD} (anything else,
 * or the descriptor's end, and the guest never runs: exit 125), both descriptors closed, and the guest
 * executed in its place. `sh -c SCRIPT NAME COMMAND ARGS...`: the command is `"$@"`, never parsed by the shell.
 */
export function gateScript(): string {
  const wait = `echo ready >&${GATE_READY_FD} && read -r go <&${GATE_GO_FD} && [ "$go" = go ] || exit 125`;
  return `${wait}; exec ${GATE_GO_FD}<&- ${GATE_READY_FD}>&-; exec "$@"`;
}

/** The shell the gate runs in: the sandbox shows the system directories, where every Linux has one. */
export const GATE_SHELL = "/bin/sh";

/** A copy workspace's bounds. */
export interface CopyBound {
  bytes: number;
  files: number;
}

/** Why a run's workspace was not kept (the run fails with it), or undefined when it was. */
export type ReadBackProblem = string | undefined;

/** What the bytes and entries of a directory tree on the host come to (regular files and directories only). */
export function treeUsage(root: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      files++;
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.isFile()) bytes += pages(fstatSize(join(dir, entry.name)));
    }
  };
  walk(root);
  return { bytes, files };
}

function fstatSize(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

/** Bytes in whole pages. */
export function pages(size: number): number {
  return Math.ceil(size / PAGE) * PAGE;
}

/**
 * The first process inside the sandbox that `pid` (bubblewrap, as the host started it) made: its child, which
 * lives in the sandbox's mount namespace. Read from the kernel's children lists, else from every process's stat.
 */
export function sandboxProcess(pid: number): number | undefined {
  const listed = childrenOf(pid);
  if (listed !== undefined) return listed[0];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // The fields after the command (in parentheses, which may hold anything): state, then the parent's pid.
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (parent === pid) return Number(name);
  }
  return undefined;
}

/**
 * One run of a copy workspace: opens the sandbox's tmpfs when the gate is ready and fills it, then after the
 * run reads it back. Made by the session for each run ({@link CopyRun.privateDir} is the tmpfs to ask for).
 */
export class CopyRun {
  /** The descriptor of the sandbox's tmpfs, once open. */
  private fd: number | undefined;
  /** Why the run must fail, when the copy in could not be made. */
  problem: string | undefined;

  constructor(
    /** The workspace on the host (Session.path): the tmpfs is mounted at this path inside the sandbox. */
    readonly path: string,
    readonly bound: CopyBound,
  ) {}

  /** The tmpfs bubblewrap mounts at the workspace's path inside the sandbox. */
  get privateDir(): { path: string; bytes: number } {
    return { path: this.path, bytes: this.bound.bytes };
  }

  /**
   * Waits for the gate of the sandbox `pid` started (its ready line on `ready`), fills the tmpfs, and writes the
   * go-ahead on `go`. On any failure the go-ahead is never written (the gate exits 125 and the guest never
   * runs), and {@link CopyRun.problem} says why (the session fails the run with it). Never throws.
   */
  attach(pid: number, ready: Readable, go: Writable): void {
    go.on("error", () => {});
    ready.on("error", () => {});
    let answered = false;
    const refuse = (reason: string) => {
      if (answered) return;
      answered = true;
      this.problem = reason;
      go.destroy();
      ready.destroy();
    };
    ready.once("end", () => refuse("the sandbox ended before its workspace could be copied in"));
    ready.once("data", () => {
      if (answered) return;
      try {
        this.fill(pid);
      } catch (error) {
        // A half-filled tmpfs is never read back over the workspace.
        this.release();
        refuse(`the workspace could not be copied into the sandbox: ${(error as Error).message}`);
        return;
      }
      answered = true;
      ready.destroy();
      go.end("go\n");
    });
  }

  /** Opens the sandbox's tmpfs (checked to be the one asked for) and copies the workspace into it. */
  private fill(pid: number): void {
    const inner = sandboxProcess(pid);
    if (inner === undefined) throw new Error("no process of the sandbox was found");
    const fd = openSync(`/proc/${inner}/root${this.path}`, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    this.fd = fd;
    const at = `/proc/self/fd/${fd}`;
    const fs = statfsSync(at);
    const stat = fstatSync(fd);
    if (fs.type !== TMPFS_MAGIC || fs.blocks * fs.bsize !== pages(this.bound.bytes) || !stat.isDirectory()) {
      throw new Error(`${this.path} inside the sandbox is not the workspace's tmpfs of ${this.bound.bytes} bytes`);
    }
    copyTree(this.path, at);
  }

  /**
   * After the run (its processes ended, or not: see the module's comment): reads the tmpfs back into a fresh
   * directory beside the workspace, which takes its place; past a bound, or where the run left something
   * unreadable, the workspace is left as it was and the reason returned. Closes the descriptor. Never throws.
   */
  readBack(): ReadBackProblem {
    const { fd } = this;
    if (fd === undefined) return undefined;
    this.fd = undefined;
    let incoming: string | undefined;
    try {
      incoming = mkdtempSync(join(dirname(this.path), "incoming-"));
      const problem = readInto(fd, incoming, this.bound);
      if (problem !== undefined) return problem;
      const old = `${incoming}.old`;
      renameSync(this.path, old);
      renameSync(incoming, this.path);
      incoming = undefined;
      rmSync(old, { recursive: true, force: true });
      return undefined;
    } catch (error) {
      return `the workspace could not be read back from the sandbox: ${(error as Error).message}`;
    } finally {
      if (incoming !== undefined) rmSync(incoming, { recursive: true, force: true });
      closeSync(fd);
    }
  }

  /** Forgets the tmpfs without reading it (the run never started). */
  release(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Copies a host workspace (regular files and directories only: it holds nothing else) into `to`. */
function copyTree(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      mkdirSync(target, { mode: 0o700 });
      copyTree(source, target);
      chmodLike(source, target);
    } else if (entry.isFile()) {
      copyFile(openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK), target, Infinity);
    }
  }
}

function chmodLike(source: string, target: string): void {
  const fd = openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const mode = fstatSync(fd).mode & 0o777;
    const out = openSync(target, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      fchmodSync(out, mode);
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(fd);
  }
}

/** Chunk of a file copy. */
const CHUNK = 1 << 20;

/**
 * Copies the open regular file `fd` (closed here) into a new file `target` with its permission bits (no
 * setuid, setgid, sticky), at most `budget` bytes: returns the bytes copied, or -1 past the budget.
 */
function copyFile(fd: number, target: string, budget: number): number {
  try {
    const stat = fstatSync(fd);
    if (stat.size > budget) return -1;
    const out = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, stat.size)));
      let copied = 0;
      for (;;) {
        const read = readSync(fd, buffer, 0, buffer.length, null);
        if (read === 0) break;
        copied += read;
        // A file still growing (a process of the run that is still there) is bounded all the same.
        if (copied > budget) return -1;
        let written = 0;
        while (written < read) written += writeSync(out, buffer, written, read - written);
      }
      fchmodSync(out, stat.mode & 0o777);
      return copied;
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads the tree under the directory descriptor `root` into `to`, within `bound`; returns why it stopped,
 * or undefined when all of it was read. Each entry is opened as one name under its directory's descriptor
 * (`/proc/self/fd/<dir>/<name>`, O_NOFOLLOW): no step ever resolves a link.
 */
function readInto(root: number, to: string, bound: CopyBound): ReadBackProblem {
  let bytes = 0;
  let files = 0;
  const walk = (dir: number, target: string, at: string): ReadBackProblem => {
    const names = readdirSync(`/proc/self/fd/${dir}`);
    for (const name of names) {
      const shown = at === "" ? name : `${at}/${name}`;
      let fd: number;
      try {
        fd = openSync(
          `/proc/self/fd/${dir}/${name}`,
          constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY,
        );
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A link (ELOOP), or what vanished meanwhile: not kept. A pipe without a writer opens; a socket does not (ENXIO).
        if (code === "ELOOP" || code === "ENOENT" || code === "ENXIO" || code === "EOPNOTSUPP") continue;
        if (code === "EACCES") return `the run left ${shown} unreadable (its mode); nothing of the run was kept`;
        throw error;
      }
      const stat = fstatSync(fd);
      if (!stat.isFile() && !stat.isDirectory()) {
        closeSync(fd);
        continue;
      }
      files++;
      if (files > bound.files) {
        closeSync(fd);
        return `the run left more than ${bound.files} files and directories in the workspace (workspaceFiles); nothing of the run was kept`;
      }
      if (stat.isDirectory()) {
        const made = join(target, name);
        mkdirSync(made, { mode: 0o700 });
        let problem: ReadBackProblem;
        try {
          problem = walk(fd, made, shown);
        } finally {
          closeSync(fd);
        }
        if (problem !== undefined) return problem;
        chmodSync(made, (stat.mode & 0o777) | 0o700);
        continue;
      }
      const copied = copyFile(fd, join(target, name), bound.bytes - bytes);
      if (copied < 0 || (bytes += pages(copied)) > bound.bytes) {
        const past = `more than workspaceBytes (${bound.bytes} bytes, a file's holes counted)`;
        return `the run left ${past} in the workspace; nothing of the run was kept`;
      }
    }
    return undefined;
  };
  return walk(root, to, "");
}
