/**
 * TypeScript 5.9 for the tests that must also pass with a 5.x release (the package builds with 7): its own
 * package in tools/typescript5, installed from its lock file the first time (and whenever the lock
 * changes), as scripts/lint.mjs installs tools/lint. A dev dependency alias in the root would do, but its
 * `tsc` bin takes over node_modules/.bin/tsc, which the build uses.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const tools = fileURLToPath(new URL("../../tools/typescript5/", import.meta.url));

/** The directory of the installed TypeScript 5.9 package (installing it first if needed). */
export function typeScript5(): string {
  const stamp = `${tools}node_modules/.installed-from-lock`;
  const wanted = createHash("sha256")
    .update(readFileSync(`${tools}package-lock.json`))
    .digest("hex");
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
    const { status, stderr } = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: tools, encoding: "utf8" });
    if (status !== 0) throw new Error(`could not install tools/typescript5 (npm ci exited with ${status}): ${stderr}`);
    writeFileSync(stamp, wanted);
  }
  return `${tools}node_modules/typescript`;
}
