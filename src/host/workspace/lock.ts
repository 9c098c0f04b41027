/**
 * A durable session's directory is held by one open session at a time: two hosts (two `ears mcp`
 * processes on one `--session-dir`, or two `openSession` calls) would each write back their own
 * workspace over the other's and lose files. The lock is a file `dir/.ears-session.lock` made with
 * `O_CREAT | O_EXCL` (atomic on a local file system) holding the holder's pid and its start time (from
 * /proc, so a reused pid is told from the holder); it is removed when the session closes. Node has no
 * flock, and a lock file survives the holder's SIGKILL: an opener that finds one whose holder is gone
 * (no such pid, or a pid started at another time) takes it over.
 *
 * Limits (docs/host.md, "Sessions"): the holder is looked for in this machine's pid namespace, so two
 * hosts on different machines (a network file system) or in different pid namespaces sharing `dir` are not
 * kept apart; and two openers taking over one stale lock (its holder died) at the very same moment may
 * both get it: the lock file is read back after it is written, which catches most but not every order.
 */
import { readFileSync } from "node:fs";
import { open, readFile, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";

/** The lock's name inside a durable session's directory; the walks never load nor write it back. */
export const LOCK_NAME = ".ears-session.lock";

/** A process's start time (clock ticks since boot, /proc/PID/stat's 22nd field), or undefined when it is not running. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Who holds a lock, as its file says. */
interface Holder {
  pid: number;
  start: string | undefined;
  host: string;
  token: string;
}

function parse(text: string): Holder | undefined {
  try {
    const value = JSON.parse(text) as Holder;
    return Number.isSafeInteger(value.pid) && typeof value.token === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the holder is still running (a holder on another host is taken to be). */
function alive(holder: Holder): boolean {
  if (holder.host !== hostname()) return true;
  const start = startTimeOf(holder.pid);
  return start !== undefined && (holder.start === undefined || holder.start === start);
}

/** A held lock: `release` removes it (once; never rejects). */
export interface DirLock {
  release(): Promise<void>;
}

/**
 * Takes `dir`'s lock, or rejects with an Error naming `dir` and the holder (`caller` first). A lock whose
 * holder is gone is taken over; a lock file that cannot be read as one is reported, not taken.
 */
export async function lockDir(dir: string, caller: string): Promise<DirLock> {
  const path = join(dir, LOCK_NAME);
  const token = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const mine: Holder = { pid: process.pid, start: startTimeOf(process.pid), host: hostname(), token };
  const text = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, "wx", 0o600);
      try {
        await handle.writeFile(text);
      } finally {
        await handle.close();
      }
      // Read back: an opener that took a stale lock over at the same moment may have replaced this one.
      if (parse(await readFile(path, "utf8"))?.token !== token) break;
      let released: Promise<void> | undefined;
      return {
        release: () =>
          (released ??= (async () => {
            try {
              if (parse(await readFile(path, "utf8"))?.token === token) await unlink(path);
            } catch {
              // Gone already (the directory was removed): nothing to release.
            }
          })()),
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw new Error(`${caller}: cannot lock ${dir}: ${(error as Error).message}`);
    }
    const held = await readFile(path, "utf8").catch(() => "");
    const holder = parse(held);
    if (holder === undefined) {
      // Being written by its taker this instant, or not a lock of ours: refused, never overwritten.
      throw new Error(`${caller}: ${dir} is locked by another session (${LOCK_NAME} is there); if no host uses it, remove that file`);
    }
    if (alive(holder)) {
      const who =
        holder.pid === process.pid && holder.host === hostname() ? "this process (a session not closed)" : `process ${holder.pid}`;
      throw new Error(`${caller}: ${dir} is in use by another open session, held by ${who} on ${holder.host}; close it first`);
    }
    // Its holder is gone: taken over, and the read back above tells a second taker it lost.
    await unlink(path).catch(() => {});
  }
  throw new Error(`${caller}: ${dir} is in use by another open session that took it at the same moment; close it first`);
}
