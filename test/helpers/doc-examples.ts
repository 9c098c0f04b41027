/**
 * Code examples the docs show users: type-checked the way a user's project would check them (strict,
 * nodenext, against the built package, with the project's tsc) and run with their types stripped the
 * way runCode strips a body's. `scratch` is a folder inside the repository, where the package name
 * resolves to this package's build.
 */
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** tsc's output for one file written to `scratch` as `name`: "" when it type-checks. */
export function typeErrors(scratch: string, name: string, code: string): string {
  mkdirSync(scratch, { recursive: true });
  writeFileSync(join(scratch, name), code);
  const tsc = join(root, "node_modules/typescript/bin/tsc");
  const args = ["--ignoreConfig", "--strict", "--noEmit", "--module", "nodenext", "--target", "es2022"];
  args.push("--types", "node", "--skipLibCheck", join(scratch, name));
  try {
    execFileSync(process.execPath, [tsc, ...args], { cwd: root, encoding: "utf8" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout);
  }
}

/**
 * Writes `code`, its types stripped, to `scratch` as `name` and runs it; its stdout. From the repository
 * by default; `quiet` drops its stderr (a server it starts may chatter there).
 */
export function runStripped(scratch: string, name: string, code: string, { cwd = root, quiet = false } = {}): string {
  mkdirSync(scratch, { recursive: true });
  const amaro = createRequire(import.meta.url)("amaro") as { transformSync(code: string, options: { mode: string }): { code: string } };
  writeFileSync(join(scratch, name), amaro.transformSync(code, { mode: "strip-only" }).code);
  const stdio = quiet ? (["ignore", "pipe", "ignore"] as const) : undefined;
  return execFileSync(process.execPath, [join(scratch, name)], { cwd, encoding: "utf8", ...(stdio && { stdio: [...stdio] }) });
}
