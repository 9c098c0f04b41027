/**
 * Running the built package as another uid (e.g. 65534, nobody) from a test, whatever the checkout's parents
 * allow: a clone under a 0700 directory (`/root`, `mktemp -d`) is out of that uid's reach, so the process is
 * started from a copy of what it needs (dist/, package.json, the named packages with their dependencies, and
 * Node itself when its binary is out of reach too), made by the test in a directory that uid can reach.
 * Files are hard-linked where the file system allows (cheap), copied otherwise. CONTRIBUTING.md, "Tests that
 * run as another user".
 */
import { spawn, type SpawnOptions } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

/** The unprivileged uid (and gid) the tests run as by default: nobody. */
export const NOBODY = 65534;

/** A copy of the package that `uid` can reach. */
export interface UserCopy {
  /** The copy's root (a private temporary directory, mode 0755); holds dist/, package.json, node_modules/. */
  root: string;
  /** The Node binary `uid` can run: process.execPath when reachable, else a copy in the root. */
  node: string;
  /** The copy's CLI (dist/cli/main.js). */
  ears: string;
  /** Makes a fresh directory under the root that `uid` owns (mode 0755), for its cwd or files. */
  dir(name: string): string;
  /** Removes the copy. */
  remove(): void;
}

/** What one run produced. */
export interface UserRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Whether `uid`/`gid` (not root) can reach `path`: search every directory above it, and read (and, with
 * `execute`, execute) the file itself, by the owner, group and other bits of each.
 */
export function reachableBy(path: string, uid: number, gid: number, execute = false): boolean {
  const allows = (target: string, bits: number): boolean => {
    let stat;
    try {
      stat = statSync(target);
    } catch {
      return false;
    }
    const shift = stat.uid === uid ? 6 : stat.gid === gid ? 3 : 0;
    return ((stat.mode >> shift) & bits) === bits;
  };
  const full = resolve(path);
  for (let dir = dirname(full); ; dir = dirname(dir)) {
    if (!allows(dir, 1)) return false;
    if (dir === dirname(dir)) break;
  }
  return allows(full, execute ? 5 : 4);
}

/** The first directory for temporary files that `uid` can reach: os.tmpdir(), else /tmp, /var/tmp, /dev/shm. */
function reachableTemp(uid: number, gid: number): string {
  for (const candidate of [tmpdir(), "/tmp", "/var/tmp", "/dev/shm"]) {
    if (existsSync(candidate) && reachableBy(join(candidate, "."), uid, gid)) return candidate;
  }
  throw new Error(`as-user: no temporary directory that uid ${uid} can reach (tried TMPDIR, /tmp, /var/tmp, /dev/shm)`);
}

/** Hard-links (or copies, across file systems) `from` to `to`, recreating directories and links. */
function mirror(from: string, to: string): void {
  const stat = lstatSync(from);
  if (stat.isSymbolicLink()) {
    symlinkSync(readlinkSync(from), to);
  } else if (stat.isDirectory()) {
    mkdirSync(to, { mode: 0o755 });
    chmodSync(to, 0o755);
    for (const entry of readdirSync(from)) mirror(join(from, entry), join(to, entry));
  } else if (stat.isFile()) {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
    // A hard link shares the file's modes: the file must be readable by everyone already (npm's 0644/0755 are).
    if ((lstatSync(to).mode & 0o004) === 0) {
      rmSync(to);
      copyFileSync(from, to);
      chmodSync(to, stat.mode | 0o444);
    }
  }
}

/** The package directory of `name` as seen from `from` (a package directory or the checkout), Node's lookup. */
function packageDir(name: string, from: string, checkout: string): string | undefined {
  for (let dir = from; dir.startsWith(checkout); dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dir === checkout) break;
  }
  return undefined;
}

/**
 * Copies what the built package needs to run into a directory `uid` can reach: dist/, package.json, each of
 * `packages` (as installed in the checkout's node_modules) with every dependency it declares, and Node's
 * binary when `uid` cannot run process.execPath where it is. Build first (`npm run build`).
 */
export function copyForUser(options: { uid?: number; gid?: number; packages?: readonly string[]; checkout?: string } = {}): UserCopy {
  const uid = options.uid ?? NOBODY;
  const gid = options.gid ?? uid;
  const checkout = resolve(options.checkout ?? ".");
  if (!existsSync(join(checkout, "dist/cli/main.js"))) throw new Error(`as-user: ${checkout}/dist is not built (npm run build)`);
  const root = mkdtempSync(join(reachableTemp(uid, gid), "ears-as-user-"));
  chmodSync(root, 0o755);
  mirror(join(checkout, "dist"), join(root, "dist"));
  mirror(join(checkout, "package.json"), join(root, "package.json"));
  mkdirSync(join(root, "node_modules"), { mode: 0o755 });
  const copied = new Set<string>();
  const wanted = [...(options.packages ?? [])].map((name) => ({ name, from: checkout }));
  while (wanted.length > 0) {
    const { name, from } = wanted.pop()!;
    const dir = packageDir(name, from, checkout);
    if (dir === undefined) continue; // An optional dependency that is not installed.
    const relative = dir.slice(checkout.length + 1);
    if (copied.has(relative)) continue;
    copied.add(relative);
    const target = join(root, relative);
    if (!existsSync(target)) {
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      mirror(dir, target);
    }
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) {
      wanted.push({ name: dependency, from: dir });
    }
  }
  let node = process.execPath;
  if (!reachableBy(node, uid, gid, true)) {
    node = join(root, "node");
    mirror(process.execPath, node);
    if (!reachableBy(node, uid, gid, true)) {
      rmSync(node);
      copyFileSync(process.execPath, node);
      chmodSync(node, 0o755);
    }
  }
  let dirs = 0;
  return {
    root,
    node,
    ears: join(root, "dist/cli/main.js"),
    dir(name) {
      const dir = join(root, "work", `${++dirs}-${name}`);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      chmodSync(join(root, "work"), 0o755);
      chmodSync(dir, 0o755);
      // Owned by uid (as root): it may write there. A non-root host cannot give files away, and runs no test as another uid.
      if (process.getuid?.() === 0) chownSync(dir, uid, gid);
      return dir;
    },
    remove() {
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `node <args>` as `uid` with the copy's Node, collecting its output; `stdin` is written and closed
 * (closed at once when undefined). Only root may start a process as another uid.
 */
export function runAs(
  copy: UserCopy,
  args: readonly string[],
  options: { uid?: number; gid?: number; cwd?: string; stdin?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<UserRun> {
  const uid = options.uid ?? NOBODY;
  return new Promise((done, fail) => {
    const spawnOptions: SpawnOptions = {
      uid,
      gid: options.gid ?? uid,
      cwd: options.cwd ?? copy.root,
      stdio: ["pipe", "pipe", "pipe"],
      ...(options.env === undefined ? {} : { env: options.env }),
    };
    const child = spawn(copy.node, [...args], spawnOptions);
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.stdin!.on("error", () => {}); // A child that exits before reading: its exit is the answer.
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
    child.stdin!.end(options.stdin ?? "");
  });
}
