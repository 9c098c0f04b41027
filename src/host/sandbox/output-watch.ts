/**
 * A sandboxed guest that closes its stdout and lives on must end the run as an unconfined one does
 * (`NoResult`, after the same grace). Unconfined, the host sees end-of-file; in a sandbox it never does,
 * because bubblewrap's own two processes (the monitor outside, the init inside) hold stdout until the
 * sandbox ends. So the host looks: when no process inside but bubblewrap's holds the stream bubblewrap
 * was given as stdout, the guest has closed it. Linux /proc only; elsewhere there is no bubblewrap.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** How often a confined run's stdout is checked. */
export const OUTPUT_WATCH_MS = 250;

/**
 * Whether a process in bubblewrap `monitor`'s sandbox other than bubblewrap's own still holds what the
 * monitor has as fd 1; undefined when /proc cannot tell (the monitor is gone, or no children lists).
 */
export function guestHoldsOutput(monitor: number): boolean | undefined {
  let stream: string;
  try {
    stream = readlinkSync(`/proc/${monitor}/fd/1`);
  } catch {
    return undefined;
  }
  const inits = childrenOf(monitor);
  if (inits === undefined) return undefined;
  // Depth 0 is the monitor, depth 1 the sandbox's init (both bubblewrap): everything below is the guest's.
  const queue = inits.flatMap((init) => childrenOf(init) ?? []);
  for (let i = 0; i < queue.length; i++) {
    const pid = queue[i]!;
    if (holds(pid, stream)) return true;
    queue.push(...(childrenOf(pid) ?? []));
  }
  return false;
}

/** The children of every thread of `pid`, or undefined when /proc has no children lists. */
function childrenOf(pid: number): number[] | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8");
      for (const part of text.split(" ")) if (part.trim() !== "") children.push(Number(part));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" && task === String(pid)) return undefined;
    }
  }
  return children;
}

function holds(pid: number, stream: string): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone meanwhile
  }
  return fds.some((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`) === stream;
    } catch {
      return false;
    }
  });
}
