// Paths of the child programs, and the call arguments every round-trip contender sends.
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
