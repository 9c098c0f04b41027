// Runs a bench host script in a fresh node process and returns the JSON it prints as its last line.
// Fresh processes keep one scenario's heap and peak RSS from leaking into the next.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

export const hostScript = (name) => fileURLToPath(new URL(`../hosts/${name}`, import.meta.url));

export function runNode(script, args, { timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [script, ...args.map(String)],
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`${script} ${args.join(" ")} failed: ${error.message}\n${stderr}`));
          return;
        }
        const last = stdout.trimEnd().split("\n").at(-1) ?? "";
        try {
          resolve(JSON.parse(last));
        } catch {
          reject(new Error(`${script} printed no JSON result: ${stdout.slice(-500)}\n${stderr}`));
        }
      },
    );
  });
}
