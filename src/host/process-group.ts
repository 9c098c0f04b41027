/**
 * The guest's process group. runGuest starts every guest as the leader of its own process group (and
 * session), so stopping it reaches everything it started that stayed in the group. A watchdog keeps
 * the group from outliving a host that is killed without a chance to clean up (SIGKILL, out of memory).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Whether guests get their own process group here (POSIX); Windows has none, so the child alone is signalled. */
export const GROUPS_SUPPORTED = process.platform !== "win32";

/**
 * The watchdog: a shell that blocks reading a pipe only the host holds. When the host dies, however it
 * dies, the kernel closes the pipe, `read` returns, and the shell SIGKILLs the guest's group, removes
 * the run's scratch directory if it has one (runCode's compiled body), then SIGKILLs whatever is left in
 * each of the run's cgroups (also what left the group, e.g. with setsid) and removes them, retrying for
 * up to 5 s while the kernel still counts dying processes. At the end of a normal run the host SIGKILLs
 * the watchdog first, so it never fires then.
 */
const WATCHDOG_SCRIPT = [
  'read _; kill -KILL "-$1" 2>/dev/null; if [ -n "$2" ]; then rm -rf -- "$2"; fi; shift 2',
  'for dir in "$@"; do n=0; while [ -d "$dir" ] && [ $n -lt 50 ]; do',
  '  while read pid; do kill -KILL "$pid"; done < "$dir/cgroup.procs" 2>/dev/null',
  '  rmdir "$dir" 2>/dev/null || sleep 0.1; n=$((n + 1))',
  "done; done",
].join("\n");
/** Where guests go when their group is gone within this poll while it is cleared. */
const POLL_MS = 25;

/** Signals and clears one guest's process group; owns its watchdog. */
export class ProcessGroup {
  private watchdog: ChildProcess | undefined;

  /**
   * `child` must have been spawned with `detached: true` (POSIX: its own group and session). An
   * unconfined child gets a watchdog; a `sandboxed` one (bubblewrap) is covered by --die-with-parent, and
   * gets one only to remove what the host made for this run should the host die: `scratch`, a
   * directory, and `cgroups`, the run's cgroup directories.
   */
  constructor(
    private readonly child: ChildProcess,
    private readonly sandboxed: boolean,
    scratch?: string,
    cgroups: readonly string[] = [],
  ) {
    if (!GROUPS_SUPPORTED || child.pid === undefined || (sandboxed && scratch === undefined && cgroups.length === 0)) return;
    try {
      const watchdog = spawn("/bin/sh", ["-c", WATCHDOG_SCRIPT, "ears-watchdog", String(child.pid), scratch ?? "", ...cgroups], {
        stdio: ["pipe", "ignore", "ignore"],
        detached: true, // its own group: a terminal's Ctrl-C for the host's group must not end it early
      });
      watchdog.on("error", () => {});
      watchdog.stdin?.on("error", () => {});
      // The guest keeps the host alive while it runs; the watchdog must never do so by itself.
      watchdog.unref();
      (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      this.watchdog = watchdog;
    } catch {
      // No /bin/sh: the run goes on; only the host-killed case loses its cover (documented).
    }
  }

  /**
   * Sends `signal` to the whole group (the child alone where there are no groups). In a sandbox, the
   * group is bubblewrap's: SIGTERM would end bubblewrap, and with it the sandbox at once, so it goes to
   * the session inside the sandbox instead, and the guest gets its chance to end cleanly.
   */
  signal(signal: NodeJS.Signals): void {
    if (this.sandboxed && signal !== "SIGKILL" && this.child.pid !== undefined) {
      const inner = childrenOf(this.child.pid)[0];
      if (inner !== undefined) {
        try {
          process.kill(-inner, signal);
          return;
        } catch {
          // The sandbox is ending; signal bubblewrap's group below.
        }
      }
    }
    if (GROUPS_SUPPORTED && this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, signal);
        return;
      } catch {
        // The group is gone (ESRCH); the child may still need its own signal below.
      }
    }
    this.child.kill(signal);
  }

  /**
   * True while a live process is still in the group. Zombies do not count on Linux: a descendant that
   * died waits there for a parent to reap it, which a container's init may never do.
   */
  alive(): boolean {
    if (!GROUPS_SUPPORTED || this.child.pid === undefined) return false;
    const group = this.child.pid;
    try {
      process.kill(-group, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "EPERM";
    }
    const processes = processTable();
    return processes === undefined || processes.some((entry) => entry.group === group && entry.state !== "Z");
  }

  /**
   * After the leader exited: ends whatever it left behind in the group. SIGTERM, up to `graceMs` for
   * the group to empty, then SIGKILL. Costs nothing when the group is already empty (the usual case).
   * Returns the last signal it had to send, if any.
   */
  async clear(graceMs: number): Promise<"SIGTERM" | "SIGKILL" | undefined> {
    if (!this.alive()) return undefined;
    this.signal("SIGTERM");
    for (let waited = 0; waited < graceMs; waited += POLL_MS) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (!this.alive()) return "SIGTERM";
    }
    this.signal("SIGKILL");
    return "SIGKILL";
  }

  /** Stops the watchdog (SIGKILL before its pipe closes, so it cannot fire). */
  release(): void {
    const watchdog = this.watchdog;
    this.watchdog = undefined;
    if (watchdog === undefined) return;
    watchdog.kill("SIGKILL");
    watchdog.stdin?.destroy();
  }
}

/**
 * The pids whose parent is `pid` (Linux /proc; empty elsewhere). bubblewrap's first child is the
 * sandbox's init, which leads the sandbox's session and process group (--new-session).
 */
function childrenOf(pid: number): number[] {
  return (processTable() ?? []).filter((entry) => entry.parent === pid).map((entry) => entry.pid);
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
