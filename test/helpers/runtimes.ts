// Other JavaScript runtimes to run guests under, beside this Node: Bun and Deno, found as the npm
// packages `bun` and `deno` (node_modules/.bin), or at the paths in EARS_BUN / EARS_DENO. A runtime that
// is not found is reported as skipped by the tests that use it, with how to provide it.
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export interface Runtime {
  name: "bun" | "deno";
  /** The command and the arguments that come before the script. */
  command: string[];
}

function find(name: "bun" | "deno", variable: string): string | undefined {
  const fromEnv = process.env[variable];
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  const installed = resolve(import.meta.dirname, "../../node_modules/.bin", name);
  return existsSync(installed) ? installed : undefined;
}

const bun = find("bun", "EARS_BUN");
const deno = find("deno", "EARS_DENO");

/** The runtimes found; `missing` names the others. */
export const runtimes: Runtime[] = [
  ...(bun === undefined ? [] : [{ name: "bun" as const, command: [bun] }]),
  ...(deno === undefined ? [] : [{ name: "deno" as const, command: [deno, "run", "-A"] }]),
];
export const missingRuntimes = (["bun", "deno"] as const).filter((name) => !runtimes.some((runtime) => runtime.name === name));
