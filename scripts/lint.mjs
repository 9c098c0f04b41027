#!/usr/bin/env node
// `npm run lint`: ESLint (typescript-eslint) and Prettier over the repository's code.
// The tools live in their own package, tools/lint: typescript-eslint 8 needs TypeScript < 6.1, and this package
// builds with TypeScript 7, which has no JavaScript API. That package is installed here from its own lock file
// the first time (and whenever the lock changes), so `npm test` needs no other set-up step.
// Prettier checks code only (.ts, .mts, .mjs, .js): the JSON schemas are generated and compared byte for byte
// with their generator, the wire vectors hold lines as written, and Markdown is prose wrapped by hand whose code
// blocks are run and type-checked by tests. `npm run lint -- --fix` formats and applies ESLint's fixes instead.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tools = `${root}tools/lint/`;
const fix = process.argv.includes("--fix");

function run(command, args, cwd = root) {
  const { status, error } = spawnSync(command, args, { cwd, stdio: "inherit" });
  if (error) {
    console.error(`lint: cannot run ${command}: ${error.message}`);
    return 1;
  }
  return status ?? 1;
}

// Installed when the lock file differs from the one the tools were installed from (a content hash in
// node_modules, not file dates: a fresh clone or worktree has new dates and the same lock).
const lock = readFileSync(`${tools}package-lock.json`);
const stamp = `${tools}node_modules/.installed-from-lock`;
const wanted = createHash("sha256").update(lock).digest("hex");
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== wanted) {
  console.error("lint: installing the lint tools (tools/lint) from their lock file");
  const status = run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], tools);
  if (status !== 0) process.exit(status);
  writeFileSync(stamp, wanted);
}

const bin = `${tools}node_modules/.bin/`;
const code = ["**/*.{ts,mts,mjs,js}"];
const eslint = run(`${bin}eslint`, ["--config", `${tools}eslint.config.mjs`, "--max-warnings", "0", ...(fix ? ["--fix"] : []), "."]);
const prettier = run(`${bin}prettier`, [fix ? "--write" : "--check", "--log-level", "warn", ...code]);
if (eslint === 0 && prettier === 0)
  console.error(fix ? "lint: formatted; ESLint has nothing left to report" : "lint: ESLint and Prettier found nothing to change");
process.exit(eslint || prettier);
