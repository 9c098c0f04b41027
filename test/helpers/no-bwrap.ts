/**
 * A command prefix that runs a program as on a machine without bubblewrap. ears looks for bwrap on PATH and in
 * /usr/local/bin, /usr/bin and /bin, so a PATH without it no longer hides it: the program runs in a mount namespace
 * (made by bwrap itself) in which each of those directories that holds `bwrap` is a tmpfs of links to everything
 * else in it. `scratch` is an empty directory of the test's own (the real directories are mounted inside it).
 * `landlock: false` hides the Landlock helper as well (an empty dist/native), as on a machine with neither mechanism.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bwrapPath } from "./has-bwrap.js";

export function withoutBubblewrap(scratch: string, { landlock = true }: { landlock?: boolean } = {}): string[] {
  if (bwrapPath === undefined) return [];
  const args = ["--dev-bind", "/", "/"];
  // Without Landlock too: this checkout's helpers (dist/native) are hidden, so neither mechanism can be had.
  if (!landlock) args.push("--tmpfs", fileURLToPath(new URL("../../dist/native", import.meta.url)));
  const hidden = new Set<string>();
  for (const dir of ["/usr/local/bin", "/usr/bin", "/bin"]) {
    if (!existsSync(join(dir, "bwrap"))) continue;
    const real = realpathSync(dir);
    if (hidden.has(real)) continue;
    hidden.add(real);
    const keep = join(scratch, `real-${hidden.size}`);
    mkdirSync(keep);
    args.push("--ro-bind", real, keep, "--tmpfs", real);
    for (const name of readdirSync(real)) if (name !== "bwrap") args.push("--symlink", join(keep, name), join(real, name));
  }
  return [bwrapPath, ...args, "--"];
}

/** Whether {@link withoutBubblewrap} works here (bwrap may mount as this user). */
export const canHideBubblewrap: boolean = (() => {
  if (bwrapPath === undefined) return true;
  try {
    execFileSync(bwrapPath, ["--dev-bind", "/", "/", "--tmpfs", "/mnt", "--", "/bin/true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
