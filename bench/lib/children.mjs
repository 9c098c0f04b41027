// Paths of the child programs, and the call arguments every round-trip contender sends.
import { fileURLToPath } from "node:url";

export const childScript = (name) => fileURLToPath(new URL(`../children/${name}`, import.meta.url));

/** The arguments of call number i: the same small object for every contender. */
export const callArguments = (i) => ({ i, path: `src/module-${i % 97}/file-${i}.ts` });
