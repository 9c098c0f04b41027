/**
 * Finding a script this package builds into dist/ (the code runner, the type checker's server) from a
 * module that may itself be bundled into dist/host, dist/chunks, or run from src/ by the tests.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The first of `candidates` (relative to the module at `base`) that exists; throws `missing` when none does. */
export function builtScript(candidates: readonly string[], base: string, missing: string): string {
  for (const candidate of candidates) {
    const path = fileURLToPath(new URL(candidate, base));
    if (existsSync(path)) return path;
  }
  throw new Error(missing);
}
