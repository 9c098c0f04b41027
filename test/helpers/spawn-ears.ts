import { spawn } from "node:child_process";
import { resolve } from "node:path";

/** The built CLI, as `npm run demo` and the package's bin run it. */
export const EARS = resolve("dist/cli/main.js");

/** What one run of the CLI produced. */
export interface EarsRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/cli/main.js ...args` and collects its output. `onStderr` sees stderr as it arrives,
 * with the child, so a test can act on the CLI mid-run (send it a signal).
 */
export function ears(
  args: string[],
  options: { cwd?: string; onStderr?: (soFar: string, child: import("node:child_process").ChildProcess) => void } = {},
): Promise<EarsRun> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [EARS, ...args], { cwd: options.cwd ?? process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      options.onStderr?.(stderr, child);
    });
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

/** True while a process with this id exists (signal 0 only checks). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
