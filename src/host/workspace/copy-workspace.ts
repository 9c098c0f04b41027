/**
 * A session's workspace on a host that cannot mount (not root; a container): the "copy" mechanism. The
 * workspace lives in a plain directory of the host's (`Session.path`), which no run writes: each run gets a
 * copy of it, made before the run and read back after it, within the bounds. Where the copy lives depends on
 * the sandbox that confines the run:
 *
 * - **Bubblewrap:** at the same path inside the sandbox, a tmpfs of `workspaceBytes` that bubblewrap mounts
 *   (no privilege needed: it is made in the sandbox's own namespaces), so a write past the bound fails with
 *   ENOSPC inside the body, as a mounted workspace's does. The sandbox's first program is a gate (a POSIX sh,
 *   {@link gateScript}) that says it is ready on one descriptor and waits for a line on another before it
 *   executes the guest. Once ready, the sandbox's mounts are all made and nothing of the guest has run: the
 *   host opens the tmpfs through the sandbox's root (`/proc/<pid>/root`), checks it is the tmpfs it asked
 *   for, copies the workspace into it, and only then lets the gate go on. The host keeps that descriptor for
 *   the whole run (the mount lives while it is held, even once the sandbox is gone) and reads back through it.
 * - **Landlock** (no namespace, no mount: {@link CopyRun.scratchCopy}): in a scratch directory of the host's
 *   beside the workspace (mode 0700), the run's working directory and the one place of the session its
 *   Landlock rules let it write. No kernel bound fails a write past the total there, so: RLIMIT_FSIZE (the
 *   launcher's) bounds each file at `workspaceBytes` (EFBIG inside the body), and the host's watchdog measures
 *   the scratch copy every 100 ms ({@link CopyRun.overBound}) and ends the run past the bound, failing it
 *   `WorkspaceNotKept`; nothing of such a run is kept.
 *
 * The read-back, either way, starts once the run's whole process tree is gone: the copy is measured with
 * walk.ts's bounded walk (every entry against `workspaceFiles`, each file's apparent size against
 * `workspaceBytes`: a sparse file's holes count), and only within the bounds copied into a fresh directory
 * beside the workspace (walk.ts's mirror: never through a link, only files and directories, no setuid, setgid
 * or sticky bit, at most the size each file had when the walk reached it), which then takes the workspace's
 * place. Past a bound, or where the run left something the host cannot read, nothing of the run is kept and
 * the run fails naming the bound. Every step is asynchronous: a large workspace never blocks the event loop.
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, statfsSync } from "node:fs";
import { mkdtemp, rename } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { basename, dirname, join } from "node:path";
import { childrenOf } from "../limits/process-tree.js";
import { MAX_DEPTH, measureTree, mirrorTree, removePath, type Measured } from "./walk.js";

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

/**
 * What the bytes and entries of a directory tree on the host come to, each file counted in whole 4 KiB pages
 * (what the tmpfs of a run under bubblewrap must hold). Never rejects: what cannot be read counts nothing.
 */
export async function treeUsage(root: string): Promise<{ bytes: number; files: number }> {
  const { bytes, files } = await measureTree(root, { bytes: Infinity, files: Infinity }, PAGE);
  return { bytes, files };
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

/** Why a measured copy cannot be kept (a bound passed, something unreadable), or undefined when it can. */
function measuredProblem(measured: Measured, bound: CopyBound): ReadBackProblem {
  const { over, unreadable } = measured;
  if (over === "files")
    return `the run left more than ${bound.files} files and directories in the workspace (workspaceFiles); nothing of the run was kept`;
  if (over === "bytes") {
    const past = `more than workspaceBytes (${bound.bytes} bytes, a file's holes counted)`;
    return `the run left ${past} in the workspace; nothing of the run was kept`;
  }
  if (unreadable !== undefined) {
    return `the run left ${unreadable === "" ? "its workspace" : unreadable} unreadable (its mode); nothing of the run was kept`;
  }
  return undefined;
}

/**
 * One run of a copy workspace: under bubblewrap, opens the sandbox's tmpfs when the gate is ready and fills it
 * ({@link CopyRun.attach}); under Landlock, makes the scratch copy ({@link CopyRun.scratchCopy}). After the run,
 * {@link CopyRun.readBack}. Made by the session for each run.
 */
export class CopyRun {
  /** The descriptor of the sandbox's tmpfs, once open (bubblewrap). */
  private fd: number | undefined;
  /** The scratch copy the run works in (Landlock). */
  private scratch: string | undefined;
  /** Why the run must fail, when the copy in could not be made. */
  problem: string | undefined;
  /** Why the watchdog ended the run: its scratch copy past the bounds (Landlock). */
  ended: string | undefined;

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
      this.problem = reason;
      go.destroy();
      ready.destroy();
    };
    ready.once("end", () => {
      if (answered) return;
      answered = true;
      refuse("the sandbox ended before its workspace could be copied in");
    });
    ready.once("data", () => {
      if (answered) return;
      answered = true;
      ready.destroy();
      this.fill(pid).then(
        () => go.end("go\n"),
        (error: unknown) => {
          // A half-filled tmpfs is never read back over the workspace.
          this.release();
          refuse(`the workspace could not be copied into the sandbox: ${(error as Error).message}`);
        },
      );
    });
  }

  /** Opens the sandbox's tmpfs (checked to be the one asked for) and copies the workspace into it. */
  private async fill(pid: number): Promise<void> {
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
    await this.copyIn(at);
  }

  /**
   * Copies the workspace into the directory `to` (a tmpfs through its descriptor's path, or the scratch copy),
   * first checking that it fits the bounds as a tmpfs holds it (in whole pages). Throws why not.
   */
  private async copyIn(to: string): Promise<void> {
    const measured = await measureTree(this.path, this.bound, PAGE);
    if (measured.over !== undefined) {
      throw new Error(
        `the workspace holds more than its bounds (${this.bound.bytes} bytes in whole 4 KiB pages, ${this.bound.files} files) (ENOSPC)`,
      );
    }
    // The trailing slash: a descriptor's path is followed to the directory it names.
    if (!(await mirrorTree(this.path, `${to}/`))) throw new Error("not all of it could be copied");
  }

  /**
   * Landlock: makes the run's scratch copy of the workspace, a fresh directory (mode 0700) beside it, and resolves
   * with its path; or, when it cannot be made, with undefined and {@link CopyRun.problem} saying why (nothing is
   * left of it then). Never rejects.
   */
  async scratchCopy(): Promise<string | undefined> {
    let made: string | undefined;
    try {
      made = await mkdtemp(join(dirname(this.path), "run-"));
      await this.copyIn(made);
      this.scratch = made;
      return made;
    } catch (error) {
      if (made !== undefined) await removeTree(made);
      this.problem = `the workspace could not be copied for the run: ${(error as Error).message}`;
      return undefined;
    }
  }

  /**
   * The watchdog's look at the scratch copy while the run lives: the reason the run must end (its total past the
   * bounds, or directories deeper than the walk goes, which could hide any amount), recorded as
   * {@link CopyRun.ended}; undefined while it is within them. Never rejects.
   */
  async overBound(): Promise<string | undefined> {
    if (this.scratch === undefined) return undefined;
    const measured = await measureTree(this.scratch, this.bound);
    const { over, deep, unreadable } = measured;
    // What the watchdog cannot see into could hold anything: a directory too deep, or one the run made unreadable.
    const past =
      over === "files"
        ? `wrote more than ${this.bound.files} files and directories (workspaceFiles)`
        : over === "bytes"
          ? `wrote more than workspaceBytes (${this.bound.bytes} bytes, a file's holes counted)`
          : deep
            ? `made directories more than ${MAX_DEPTH} levels deep`
            : unreadable !== undefined
              ? `made ${unreadable === "" ? "its workspace" : unreadable} unreadable to the host`
              : undefined;
    if (past === undefined) return undefined;
    this.ended ??= `the run ${past} in its workspace, so the host's watchdog ended it; nothing of the run was kept`;
    return this.ended;
  }

  /**
   * After the run, once its processes are gone: reads the copy (the tmpfs through its descriptor, or the
   * scratch copy) back into a fresh directory beside the workspace, which takes its place; past a bound, where
   * the watchdog ended the run, or where the run left something unreadable, the workspace is left as it was and
   * the reason returned. Lets go of the copy. Never rejects.
   */
  async readBack(): Promise<ReadBackProblem> {
    const { fd, scratch } = this;
    this.fd = undefined;
    this.scratch = undefined;
    if (fd === undefined && scratch === undefined) return undefined;
    const source = fd !== undefined ? `/proc/self/fd/${fd}/` : scratch!;
    let incoming: string | undefined;
    try {
      if (this.ended !== undefined) return this.ended;
      const problem = measuredProblem(await measureTree(source, this.bound), this.bound);
      if (problem !== undefined) return problem;
      incoming = await mkdtemp(join(dirname(this.path), "incoming-"));
      if (!(await mirrorTree(source, incoming))) return "the run left something the host could not read back; nothing of the run was kept";
      const old = `${incoming}.old`;
      await rename(this.path, old);
      await rename(incoming, this.path);
      incoming = undefined;
      await removeTree(old);
      return undefined;
    } catch (error) {
      return `the workspace could not be read back from the run: ${(error as Error).message}`;
    } finally {
      if (incoming !== undefined) await removeTree(incoming);
      if (fd !== undefined) closeSync(fd);
      if (scratch !== undefined) await removeTree(scratch);
    }
  }

  /** Forgets the tmpfs without reading it (the run never started). */
  release(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Forgets the copy without reading it back (the run never started): the tmpfs let go, the scratch copy removed. Never rejects. */
  async discard(): Promise<void> {
    this.release();
    const { scratch } = this;
    this.scratch = undefined;
    if (scratch !== undefined) await removeTree(scratch);
  }
}

/**
 * The entry a session's run under Landlock adds to `report.sandbox.gaps`: how its workspace is bounded without a
 * tmpfs (docs/host.md, "Sessions").
 */
export function scratchGap(bound: CopyBound): string {
  return (
    `workspace: no tmpfs bounds it: the run works in a scratch copy on the host's disk (up to ${bound.bytes} bytes besides ` +
    "the workspace, and as much again while it is read back); each file is bounded by RLIMIT_FSIZE (EFBIG), the total by " +
    "the host's watchdog every 100 ms, which ends the run past it (the copy can pass the total by what the body writes " +
    "between two looks); nothing past the bounds is written back"
  );
}

/** Removes a directory a run made (any depth, links never followed: walk.ts's removal). Never rejects. */
async function removeTree(path: string): Promise<void> {
  await removePath(dirname(path), basename(path)).catch(() => {});
}
