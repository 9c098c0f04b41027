// Paths of the child programs, and the call arguments every round-trip contender sends.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const childScript = (name) => fileURLToPath(new URL(`../children/${name}`, import.meta.url));

/** The arguments of call number i: the same small object for every contender. */
export const callArguments = (i) => ({ i, path: `src/module-${i % 97}/file-${i}.ts` });

/**
 * Node arguments for a child: `--cpu-prof` into $BENCH_CPU_PROF_DIR when set (run the host script
 * itself with `node --cpu-prof` to profile both ends), then the script.
 */
export function childArgs(name, ...rest) {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  const profile = dir ? ["--cpu-prof", "--cpu-prof-dir", dir] : [];
  return [...profile, childScript(name), ...rest];
}

/**
 * CPU time (user + system, µs) another process has used so far, from /proc/<pid>/stat (Linux; 10 ms
 * resolution, enough over a timed loop of a second). Undefined where /proc is not available.
 */
export function processCpuUs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the command name, in clock ticks.
    return (Number(fields[11]) + Number(fields[12])) * (1e6 / CLOCK_TICKS);
  } catch {
    return undefined;
  }
}
const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux
