/**
 * The Landlock helper built into this checkout's dist/native, and what this kernel offers, asked of the helper
 * itself (not of src/: load-time coverage would make Stryker run every test for each mutant it reaches).
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const arch = process.arch === "x64" || process.arch === "arm64" ? process.arch : undefined;
/** This machine's helper, when built. */
export const helperPath: string | undefined = (() => {
  if (process.platform !== "linux" || arch === undefined) return undefined;
  const path = fileURLToPath(new URL(`../../dist/native/ears-confine-linux-${arch}`, import.meta.url));
  return existsSync(path) ? path : undefined;
})();
/** The arm64 build, run under qemu on x64. */
export const arm64Helper = fileURLToPath(new URL("../../dist/native/ears-confine-linux-arm64", import.meta.url));

/** The kernel's Landlock ABI as the helper's self-test finds it (0: none, or the self-test failed). */
export const landlockAbi: number = (() => {
  if (helperPath === undefined) return 0;
  const run = spawnSync(helperPath, ["--self-test", "--abi-min", "1"], { encoding: "utf8" });
  return Number(/^landlock-abi (\d+) ok$/m.exec(run.stdout ?? "")?.[1] ?? 0);
})();
/** Whether runs can be confined with Landlock here (the helper's floor is ABI 6). */
export const hasLandlock = landlockAbi >= 6;
