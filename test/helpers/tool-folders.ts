/**
 * Test-only packages kept apart from the package's own node_modules, each in its own folder under tools/
 * with a lock file (tools/typescript5: TypeScript 5.9; tools/ai7: the AI SDK 7), installed from the lock
 * the first time (and whenever the lock changes), as scripts/lint.mjs installs tools/lint.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The path of tools/<name>/ (ending in "/"), its node_modules installed from its lock file. */
export function installedToolFolder(name: string): string {
  const folder = fileURLToPath(new URL(`../../tools/${name}/`, import.meta.url));
  const stamp = `${folder}node_modules/.installed-from-lock`;
  const wanted = createHash("sha256")
    .update(readFileSync(`${folder}package-lock.json`))
    .digest("hex");
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
    const { status, stderr } = spawnSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: folder, encoding: "utf8" });
    if (status !== 0) throw new Error(`could not install tools/${name} (npm ci exited with ${status}): ${stderr}`);
    writeFileSync(stamp, wanted);
  }
  return folder;
}
