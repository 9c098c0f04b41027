/**
 * The Landlock ABI this machine offers, for `ears doctor`: one function, so the Landlock helper (the C program
 * that applies Landlock and seccomp and then execs the runner) can answer it by its own probe. Until a build
 * carries that helper, nothing here can make the system call (Node cannot), so the answer is "unknown" with
 * the reason; a run never relies on this answer, only the doctor's matrix does.
 */

/** The Landlock ABI version (1 and up), or why it is not known or not offered. */
export type LandlockProbe = { abi: number; via: string } | { abi: null; reason: string };

/** This machine's Landlock ABI, through the Landlock helper where this build has one. */
export function landlockAbi(): LandlockProbe {
  return { abi: null, reason: "unknown: this build has no Landlock helper to ask the kernel with" };
}
