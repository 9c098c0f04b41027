/**
 * The guest's process group. runGuest starts every guest as the leader of its own process group (and
 * session), so stopping it reaches everything it started that stayed in the group. A watchdog keeps
 * the group from outliving a host that is killed without a chance to clean up (SIGKILL, out of memory).
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { readdirSync, readFileSync } from "node:fs";
import { isRunCgroupDir } from "../limits/cgroup.js";
import { childrenOf } from "../limits/process-tree.js";
import type { SandboxMechanism } from "../sandbox/types.js";

/** Whether guests get their own process group here (POSIX); Windows has none, so the child alone is signalled. */
export const GROUPS_SUPPORTED = process.platform !== "win32";

/**
 * The watchdog: one shell per host, started with the first run that needs it, blocking on a pipe only
 * the host holds. The host tells it each run as it starts ("+ id group scratch cgroup…") and as it ends
 * ("- id"). When the host dies, however it dies, the kernel closes the pipe, the loop ends, and for each
 * run still told of the shell SIGKILLs the guest's group (a directory alone, "-", has none), removes the run's scratch directory if it has
 * one (runCode's compiled body), then SIGKILLs whatever is left in each of the run's cgroups (also what
 * left the group, e.g. with setsid) and removes them, retrying for up to 5 s while the kernel still counts
 * dying processes. One shell for the host, not one per run: a spawn costs the host about a millisecond
 * of blocked event loop (Node forks the whole host), a line on a pipe almost nothing.
 *
 * Paths travel as words of `[A-Za-z0-9/._-]` and `\0NNN` octal escapes (see {@link watchdogWord}),
 * decoded by printf's %b; ids are the host's own integers, so `eval` only ever sees `run_<digits>`.
 */
const WATCHDOG_SCRIPT = [
  "set -f; ids=",
  "while read -r op id rest; do case $op in",
  '  +) eval "run_$id=\\$rest"; ids="$ids $id" ;;',
  '  -) eval "unset run_$id"; kept=; for i in $ids; do [ "$i" = "$id" ] || kept="$kept $i"; done; ids=$kept ;;',
  "esac; done",
  'decode() { decoded=$(printf "%bx" "$1"); decoded=${decoded%x}; }',
  'for id in $ids; do eval "set -- \\$run_$id"',
  // A scratch directory may be a bounded tmpfs (workspace/bounded-dir.ts): detached first, then removed.
  '  [ "$1" = - ] || kill -KILL "-$1" 2>/dev/null; if [ "$2" != - ]; then decode "$2"; umount -l -- "$decoded" 2>/dev/null',
  '    rm -rf -- "$decoded"; fi; shift 2',
  '  for word in "$@"; do decode "$word"; n=0; while [ -d "$decoded" ] && [ $n -lt 50 ]; do',
  // Only a process's own number: 0 and negatives would name groups (0: the watchdog's own), 1 is init.
  '    while read pid; do case $pid in "" | *[!0-9]* | 0 | 1) ;; *) kill -KILL "$pid" ;; esac; done < "$decoded/cgroup.procs" 2>/dev/null',
  '    rmdir "$decoded" 2>/dev/null || sleep 0.1; n=$((n + 1))',
  "  done; done",
  "done",
].join("\n");

/** A path as one word the watchdog's printf %b turns back into the same bytes; "-" for none (paths are absolute). */
export function watchdogWord(path: string | undefined): string {
  if (path === undefined || path === "") return "-";
  let word = "";
  for (const byte of Buffer.from(path)) {
    const char = String.fromCharCode(byte);
    word += /^[A-Za-z0-9/._-]$/.test(char) ? char : `\\0${byte.toString(8).padStart(3, "0")}`;
  }
  return word;
}

/** The host's watchdog shell and the runs it covers. */
class Watchdog {
  private shell: ChildProcess | undefined;
  private lastId = 0;

  /** Tells the watchdog of a run; the id to {@link forget} it by, or undefined when there is no watchdog (no /bin/sh). */
  cover(group: number, scratch: string | undefined, cgroups: readonly string[]): number | undefined {
    const shell = this.running();
    if (shell === undefined) return undefined;
    this.lastId += 1;
    shell.stdin?.write(`+ ${this.lastId} ${group} ${watchdogWord(scratch)} ${cgroups.map(watchdogWord).join(" ")}\n`);
    return this.lastId;
  }

  /** Tells the watchdog of a directory alone (no process group): removed should the host die. */
  coverDirectory(dir: string): number | undefined {
    const shell = this.running();
    if (shell === undefined) return undefined;
    this.lastId += 1;
    shell.stdin?.write(`+ ${this.lastId} - ${watchdogWord(dir)}\n`);
    return this.lastId;
  }

  /** The run ended and its host cleared it: nothing for the watchdog to do should the host die now. */
  forget(id: number): void {
    this.shell?.stdin?.write(`- ${id}\n`);
  }

  private running(): ChildProcess | undefined {
    if (this.shell !== undefined) return this.shell;
    try {
      const shell = spawn("/bin/sh", ["-c", WATCHDOG_SCRIPT, "ears-watchdog"], {
        stdio: ["pipe", "ignore", "ignore"],
        detached: true, // its own group: a terminal's Ctrl-C for the host's group must not end it early
      });
      shell.on("error", () => {});
      shell.stdin?.on("error", () => {});
      // Killed from outside: the runs it covered lose their cover; the next run starts a new one.
      shell.on("exit", () => {
        if (this.shell === shell) this.shell = undefined;
      });
      // Guests keep the host alive while they run; the watchdog must never do so by itself.
      shell.unref();
      (shell.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      this.shell = shell;
      return shell;
    } catch {
      // No /bin/sh: runs go on; only the host-killed case loses its cover (documented).
      return undefined;
    }
  }
}

const watchdog = new Watchdog();

/**
 * Has the watchdog remove `dir` (unmounting it first if it is a mount point) should the host die before
 * the returned function is called (a session's workspace between its runs). Without a watchdog (no
 * /bin/sh) the directory has no cover.
 */
export function coverDirectory(dir: string): () => void {
  const id = watchdog.coverDirectory(dir);
  return () => {
    if (id !== undefined) watchdog.forget(id);
  };
}

/** Where guests go when their group is gone within this poll while it is cleared. */
const POLL_MS = 25;
/** How long a cleared group's SIGKILLed processes are waited for (the watchdog's bound too). */
const KILLED_MS = 5000;

/** Signals and clears one guest's process group, covered by the host's watchdog. */
export class ProcessGroup {
  private covered: number | undefined;
  /**
   * The sandbox's init as bubblewrap told it ({@link followSandboxInit}): its pid and its start time, which tells it
   * from a later process given the same pid.
   */
  private init: { pid: number; start: string } | undefined;
  /** Settles once bubblewrap's report of its init is read (at once without one). */
  private initTold: Promise<void> = Promise.resolve();
  /** Set once the group was seen empty: its id may then be another group's, and it is never signalled or polled again. */
  private groupGone = false;

  /**
   * `child` must have been spawned with `detached: true` (POSIX: its own group and session). An
   * unconfined child (`sandbox` false) is told to the watchdog; a confined one (bubblewrap, or the Landlock
   * helper) ends its run should the host die (--die-with-parent; the helper's parent-death signal), and is told
   * only to remove what the host made for this run: `scratch`, a directory, and `cgroups`, the run's cgroup
   * directories.
   */
  constructor(
    private readonly child: ChildProcess,
    private readonly sandbox: false | SandboxMechanism,
    scratch?: string,
    cgroups: readonly string[] = [],
  ) {
    if (!GROUPS_SUPPORTED || child.pid === undefined || (sandbox !== false && scratch === undefined && cgroups.length === 0)) return;
    // Only directories named as this host's run cgroups: a wrong one would have the watchdog kill what is in it.
    this.covered = watchdog.cover(
      child.pid,
      scratch,
      cgroups.filter((dir) => isRunCgroupDir(dir)),
    );
  }

  /**
   * Reads bubblewrap's `--info-fd` report (`{"child-pid": N, ...}`, then the end of the pipe) from `info`: the pid
   * of the sandbox's init, its first child. bubblewrap's own process exits as soon as the guest does, with the init
   * still running: only the init's end (the kernel ends every process of the sandbox's pid namespace first, also those
   * that left the guest's session) means that nothing in the sandbox runs. Until then the group counts as
   * {@link alive}, and {@link clear} signals the init when bubblewrap is gone.
   */
  followSandboxInit(info: Readable): void {
    let text = "";
    let told = false;
    this.initTold = new Promise<void>((resolve) => {
      info.setEncoding("utf8");
      info.on("data", (chunk: string) => {
        // The report is a few hundred bytes; more is not bubblewrap's.
        if (told || text.length > 4096) return;
        text += chunk;
        const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)?.[1];
        if (pid === undefined) return;
        told = true;
        // Ours only while bubblewrap, not yet reaped (so its own pid is no one else's), is its parent. Read after
        // bubblewrap's end (a guest whose whole life fit in one stall of the host's event loop), the pid could be a
        // later process's: the init stays unknown, and bubblewrap's end stands for the sandbox's (docs/host.md).
        const found = identify(Number(pid));
        this.init = found !== undefined && found.parent === this.child.pid && !this.childEnded() ? found : undefined;
      });
      info.on("error", () => resolve());
      info.on("close", () => resolve());
    });
  }

  /**
   * Sends `signal` to the whole group (the child alone where there are no groups). In a sandbox, the
   * group is bubblewrap's: SIGTERM would end bubblewrap, and with it the sandbox at once, so it goes to
   * the session inside the sandbox instead, and the guest gets its chance to end cleanly. Under Landlock
   * the group is the helper's, the guest's session its child's: every signal goes to that session, and where
   * there is none to signal (the guest is gone, its tree not yet), SIGKILL reaches the helper as SIGTERM, which
   * it answers by killing and reaping the run's whole tree before it exits. SIGKILLed, it could not: what the
   * run detached into a session of its own would outlive it.
   */
  signal(signal: NodeJS.Signals): void {
    const inside = this.sandbox === "landlock" || (this.sandbox === "bubblewrap" && signal !== "SIGKILL");
    if (inside && this.signalInside(signal)) return;
    const sent = this.sandbox === "landlock" && signal === "SIGKILL" ? "SIGTERM" : signal;
    if (GROUPS_SUPPORTED && this.child.pid !== undefined && !this.groupGone) {
      try {
        process.kill(-this.child.pid, sent);
        return;
      } catch {
        // The group is gone (ESRCH); the child may still need its own signal below.
      }
    }
    this.child.kill(sent);
    // bubblewrap gone, its sandbox not yet: the init's group (its session: what left it is ended by the init's end).
    const init = this.liveInit();
    if (init !== undefined && signal === "SIGKILL") {
      try {
        process.kill(-init, "SIGKILL");
      } catch {
        // Ended meanwhile.
      }
    }
  }

  /**
   * SIGKILLs what the guest runs, at once (runCode's runner: nothing in it has anything to clean up). In a
   * sandbox, the sandbox's session: bubblewrap then exits once the kernel has emptied the sandbox's PID
   * namespace (its init waits for that), so bubblewrap's exit still means that everything inside is gone.
   * Bubblewrap's own group when the session cannot be found; the Landlock helper, told to end, when its guest's
   * session cannot be (see {@link signal}); unconfined, the whole group.
   */
  endNow(): void {
    if (this.sandbox !== false && this.signalInside("SIGKILL")) return;
    this.signal("SIGKILL");
  }

  /** Sends `signal` to the sandbox's session (its init's group); false when there is none to signal. */
  private signalInside(signal: NodeJS.Signals): boolean {
    if (this.child.pid === undefined) return false;
    // The child's children only while it is not reaped: after that its pid may be another process's.
    const inner = (this.childEnded() ? undefined : sandboxInit(this.child.pid)) ?? this.liveInit();
    // Only a process's own number: -0 would be kill(0), this host's own group (a misread children list did that
    // to the mutation runner: CONTRIBUTING.md, "Mutation testing"), and -1 every process there is.
    if (inner === undefined || !Number.isSafeInteger(inner) || inner <= 1) return false;
    try {
      process.kill(-inner, signal);
      return true;
    } catch {
      // The sandbox is ending; the caller signals bubblewrap's group.
      return false;
    }
  }

  /**
   * True while a live process is still in the group. Zombies do not count on Linux: a descendant that
   * died waits there for a parent to reap it, which a container's init may never do.
   */
  alive(): boolean {
    return this.groupAlive() || this.liveInit() !== undefined;
  }

  private groupAlive(): boolean {
    // bubblewrap's group holds bubblewrap alone (its init leads a session of its own): empty once bubblewrap ended.
    if (this.sandbox === "bubblewrap" && this.childEnded()) this.groupGone = true;
    if (this.groupGone || !GROUPS_SUPPORTED || this.child.pid === undefined) return false;
    const group = this.child.pid;
    let alive: boolean;
    try {
      process.kill(-group, 0);
      const processes = processTable();
      alive = processes === undefined || processes.some((entry) => entry.group === group && entry.state !== "Z");
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code === "EPERM";
    }
    // No process can join an empty group: once empty, it stays so, and its id may be reused.
    if (!alive) this.groupGone = true;
    return alive;
  }

  /** Whether the child was reaped (Node saw its exit): its pid may then be another process's. */
  private childEnded(): boolean {
    return typeof this.child.exitCode === "number" || typeof this.child.signalCode === "string";
  }

  /**
   * The sandbox's init's pid while it runs: not yet a zombie (a zombie init has ended every other process of its
   * namespace: the kernel waits for them before the init's exit goes on), and still the process bubblewrap told of.
   */
  private liveInit(): number | undefined {
    const { init } = this;
    if (init === undefined) return undefined;
    const now = identify(init.pid);
    if (now === undefined || now.start !== init.start || now.state === "Z" || now.state === "X") {
      this.init = undefined;
      return undefined;
    }
    return init.pid;
  }

  /**
   * After the leader exited: ends whatever it left behind in the group. SIGTERM, up to `graceMs` for
   * the group to empty, then SIGKILL. Costs nothing when the group is already empty (the usual case).
   * Returns the last signal it had to send, if any.
   */
  async clear(graceMs: number): Promise<"SIGTERM" | "SIGKILL" | undefined> {
    // bubblewrap's report is written before the guest starts; its pipe ends with bubblewrap at the latest.
    await Promise.race([this.initTold, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    if (!this.alive()) return undefined;
    this.signal("SIGTERM");
    if (await this.goneWithin(graceMs)) return "SIGTERM";
    this.signal("SIGKILL");
    // A sandbox's init ends its namespace's processes before it is gone. Bounded: a process stuck in the kernel
    // (a dead network file system) must not hang the host.
    await this.goneWithin(KILLED_MS);
    return "SIGKILL";
  }

  /** Polls until nothing in the group (or the sandbox) is alive, at most `ms`; true when it emptied. */
  private async goneWithin(ms: number): Promise<boolean> {
    for (let waited = 0; waited < ms; waited += POLL_MS) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (!this.alive()) return true;
    }
    return false;
  }

  /** Takes the run off the watchdog: it is cleared, and its group id may be reused. */
  release(): void {
    const covered = this.covered;
    this.covered = undefined;
    if (covered !== undefined) watchdog.forget(covered);
  }
}

/**
 * bubblewrap's first child, the sandbox's init, which leads the sandbox's session and process group
 * (--new-session): from /proc's children list, or the whole process table on a kernel without one.
 */
function sandboxInit(pid: number): number | undefined {
  const children = childrenOf(pid) ?? (processTable() ?? []).filter((entry) => entry.parent === pid).map((entry) => entry.pid);
  return children[0];
}

/** A process's state, parent and start time (in clock ticks since boot) from /proc, or undefined when it is gone. */
function identify(pid: number): { pid: number; state: string; parent: number; start: string } | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 1) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name: state (field 3), ppid (4) ... starttime (22).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { pid, state: fields[0] ?? "", parent: Number(fields[1]), start: fields[19] ?? "" };
  } catch {
    return undefined;
  }
}

/** Every process's state, parent and group from Linux's /proc; undefined where there is no /proc. */
function processTable(): { pid: number; state: string; parent: number; group: number }[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const table = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The fields after the command name (which may hold spaces and parentheses): state, ppid, pgrp, ...
      const [state = "", parent, group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      table.push({ pid: Number(entry), state, parent: Number(parent), group: Number(group) });
    } catch {
      // Gone meanwhile.
    }
  }
  return table;
}
