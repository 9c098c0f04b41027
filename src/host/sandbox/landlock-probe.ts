/**
 * The Landlock ABI this machine offers, for `ears doctor`: asked of the Landlock helper (the static program that
 * applies Landlock and seccomp, then execs the runner), since Node cannot make the system call itself. A run never
 * relies on this answer (it runs the helper's own self-test, index.ts); only the doctor's matrix does.
 */
import { spawnSync } from "node:child_process";
import { nodeFileSystem } from "./file-system-view.js";
import { CONFINE_MARK, findConfineHelper, selfTestAbi, selfTestArgs } from "./landlock.js";

/** The Landlock ABI version (1 and up), or why it is not known or not offered. */
export type LandlockProbe = { abi: number; via: string } | { abi: null; reason: string };

/** How long the helper's self-test may take for the doctor. */
const PROBE_TIMEOUT_MS = 5000;

/** This machine's Landlock ABI, through this package's Landlock helper (its self-test at ABI 1: any Landlock). */
export function landlockAbi(): LandlockProbe {
  if (process.platform !== "linux") return { abi: null, reason: `Landlock is Linux's (this is ${process.platform})` };
  const helper = findConfineHelper(nodeFileSystem);
  if ("missing" in helper) return { abi: null, reason: helper.missing };
  const run = spawnSync(helper.path, selfTestArgs(1), { encoding: "utf8", timeout: PROBE_TIMEOUT_MS, env: {} });
  if (run.error !== undefined) return { abi: null, reason: `the Landlock helper could not be run: ${run.error.message}` };
  const abi = run.status === 0 ? selfTestAbi(run.stdout) : undefined;
  if (abi !== undefined) return { abi, via: helper.path };
  const said = run.stderr
    .split("\n")
    .find((line) => line.startsWith(CONFINE_MARK))
    ?.slice(CONFINE_MARK.length)
    .trim();
  return { abi: null, reason: said ?? `the Landlock helper's self-test exited ${run.status ?? run.signal}` };
}
