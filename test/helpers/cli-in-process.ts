import { PassThrough } from "node:stream";
import { main } from "../../src/cli/cli.js";

/** Runs the CLI in this process with captured output (only for paths that stop before starting a guest). */
export async function cliInProcess(argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const code = await main([...argv], { stdout, stderr, cwd: process.cwd() });
  return { code, stdout: out, stderr: err };
}
