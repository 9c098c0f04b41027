/**
 * Whether bwrap is on PATH, asked of the shell rather than of the code under test: a module-level call
 * into src/ would count as load-time coverage, which makes Stryker run every test for each mutant it reaches.
 */
import { execFileSync } from "node:child_process";

export const bwrapPath: string | undefined = (() => {
  if (process.platform !== "linux") return undefined;
  try {
    return execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
})();
