/**
 * A sandboxed guest that closes its stdout and lives on must end the run as an unconfined one does
 * (`NoResult`, after the same grace). Unconfined, the host sees end-of-file; in a sandbox it never does,
 * because bubblewrap's own two processes (the monitor outside, the init inside) hold stdout until the
 * sandbox ends. So the host looks: when no process inside but bubblewrap's holds the stream bubblewrap
 * was given as stdout, the guest has closed it. Linux /proc only; elsewhere there is no bubblewrap.
 */
import { readdirSync, readlinkSync } from "node:fs";
import { childrenOf } from "../limits/process-tree.js";

/** How often a confined run's stdout is checked. */
export const OUTPUT_WATCH_MS = 250;
/**
 * At most this many descriptors are looked at per check: the reads are synchronous, and a guest that
 * opens tens of thousands would otherwise stall the host's event loop on every check. Past it the answer
 * is "cannot tell", and the run goes on as if stdout were held (its deadlines still apply).
 */
export const OUTPUT_WATCH_BUDGET = 2000;

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
  const budget = { left: OUTPUT_WATCH_BUDGET };
  for (let i = 0; i < queue.length; i++) {
    const pid = queue[i]!;
    const held = holds(pid, stream, budget);
    if (held !== false) return held;
    queue.push(...(childrenOf(pid) ?? []));
  }
  return false;
}

/** Whether `pid` holds `stream`; undefined when the budget ran out before it could tell. */
function holds(pid: number, stream: string, budget: { left: number }): boolean | undefined {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone meanwhile
  }
  for (const fd of fds) {
    if (--budget.left < 0) return undefined;
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === stream) return true;
    } catch {
      // Closed meanwhile.
    }
  }
  return false;
}
