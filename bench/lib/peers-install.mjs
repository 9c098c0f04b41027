// Installs the peers scenario's packages (bench/peers: isolated-vm, quickjs-emscripten, Anthropic's
// sandbox-runtime) from their own lock file on first use, and whenever the lock or the Node running the bench
// changes, as scripts/lint.mjs does for the lint tools: never part of the root `npm ci`, because isolated-vm
// compiles from source (about two minutes here) and users and CI need none of it. sandbox-runtime needs socat and
// ripgrep on Linux: installed with apt-get when missing and this process may (root), as
// scripts/system-packages.mjs does, else said.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { headersVersion, installNodeHeaders } from "../../scripts/install-node.mjs";

export const PEERS_DIR = fileURLToPath(new URL("../peers/", import.meta.url));

/**
 * The --nodedir for native builds that this Node loads: a directory whose include/node holds the headers of exactly
 * this release. Beside the binary (a registry build from scripts/install-node.mjs), or Debian's /usr when that is this
 * Node, else unpacked from the registry package of this release. Returns { dir } or { failure }.
 */
export function nodeHeadersDir(execPath = process.execPath, version = process.version.slice(1)) {
  const candidates = [join(dirname(execPath), ".."), "/usr"];
  const found = candidates.find((dir) => headersVersion(join(dir, "include", "node")) === version);
  if (found !== undefined) return { dir: resolve(found) };
  try {
    return { dir: installNodeHeaders(version) };
  } catch (error) {
    return { failure: `no headers of Node ${version} to build isolated-vm against (${error.message.split("\n")[0]})` };
  }
}

/**
 * Installs bench/peers (or `dir`, a stand-in in tests) when its lock changed or the Node running the bench is another
 * release than the one it was built for (isolated-vm's addon loads only into the Node whose headers it was compiled
 * against); returns undefined when installed, else why not.
 */
export function installPeers(dir = PEERS_DIR) {
  const lock = readFileSync(join(dir, "package-lock.json"));
  const stamp = join(dir, "node_modules", ".installed-from-lock");
  const wanted = `${createHash("sha256").update(lock).digest("hex")} node ${process.version} ${process.arch}`;
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === wanted) return undefined;
  const headers = nodeHeadersDir();
  if (headers.failure !== undefined) return headers.failure;
  process.stderr.write(
    `peers: installing bench/peers from its lock file for Node ${process.version} (isolated-vm compiles: about 2 minutes)\n`,
  );
  // Compiled here against this Node's headers (node-gyp would otherwise download them from nodejs.org), not taken
  // from the prebuilt binaries isolated-vm ships for some Node releases only.
  const args = ["ci", "--no-audit", "--no-fund", "--loglevel=error", "--build-from-source", `--nodedir=${headers.dir}`];
  const run = spawnSync("npm", args, {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (run.error !== undefined || run.status !== 0) return `npm ci in bench/peers failed (${run.error?.message ?? `status ${run.status}`})`;
  writeFileSync(stamp, wanted);
  return undefined;
}

const onPath = (name) => (process.env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, name)));

/** socat and ripgrep for sandbox-runtime (Linux): undefined when there, else what is missing and why it stays so. */
export function sandboxRuntimeTools() {
  const missing = [
    ["socat", "socat"],
    ["rg", "ripgrep"],
    ["bwrap", "bubblewrap"],
  ].filter(([command]) => !onPath(command));
  if (missing.length === 0) return undefined;
  const pkgs = missing.map(([, pkg]) => pkg);
  if (!(process.platform === "linux" && process.getuid?.() === 0 && onPath("apt-get"))) {
    return `${pkgs.join(", ")} not installed (not root, or no apt-get: apt-get install ${pkgs.join(" ")})`;
  }
  const apt = (args) =>
    spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
      .status === 0;
  process.stderr.write(`peers: installing ${pkgs.join(", ")} with apt-get (sandbox-runtime needs them)\n`);
  if (apt(["install", "-y", ...pkgs]) || (apt(["update"]) && apt(["install", "-y", ...pkgs]))) return undefined;
  return `apt-get could not install ${pkgs.join(", ")}`;
}
