/**
 * The sandbox policy, independent of the mechanism that enforces it: the program to start, the host
 * paths the guest may read or write, what is masked inside them, its network and its environment.
 * Computed by {@link sandboxPolicy} from what the host asked and what the file system said (through a
 * {@link FileSystemView}), with no other input, so each rule is tested in-process
 * (test/host/sandbox/policy.test.ts). Each mechanism (bubblewrap.ts) turns a policy into a command line.
 *
 * The rules (docs/host.md "Threat model"):
 * - What the host names (`cwd`, `readable`, `writable`, the command) is shown as resolved.
 * - What the host finds by itself (the script's directory and package, Node's `node_modules` and
 *   `package.json` lookups, the packages linked from a `node_modules`) is shown only when no link on
 *   the way leads out of the directory it was found in: a link a guest planted never widens a later run.
 * - `/`, a home directory, the temporary directory's root (or an ancestor of one) is never shown unless
 *   the host passes `allowBroadPaths`.
 * - Inside every shown directory, files that usually hold secrets are masked ({@link secretNames}).
 */
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import type { FileSystemView } from "./file-system-view.js";
import type { SandboxOptions } from "./types.js";

/** HOME inside the sandbox: a directory in the private /tmp, so it starts empty and is writable. */
export const SANDBOX_HOME = "/tmp/home";
/** PATH inside the sandbox (the interpreter's directory is put first when it is elsewhere). */
export const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names masked inside every shown directory (a file appears empty, a directory empty), at every depth the
 * walk covers (outside node_modules). `*` stands for any run of characters; a pattern with `/` also names
 * the directories just above (`.config/gh`: a `gh` directory inside a `.config` one). The list is
 * docs/host.md's: the file-name signatures secret scanners keep (gitrob's, which shhgit and its successors
 * extend), the credential files of the common cloud, package and developer tools, and shell histories.
 * Masking by name is a safety net, not a boundary: a secret under another name is shown.
 * Built when asked (once per walk), not at load, as seccomp.ts's rules are.
 */
export function secretNames(): readonly string[] {
  return [
    // Environment files and local secret stores.
    ".env",
    ".env.*",
    ".env-*",
    ".envrc",
    ".dev.vars",
    ".vault-token",
    "secrets.toml",
    "secrets.json",
    "secrets.yaml",
    "secrets.yml",
    "credentials.json",
    "credentials.xml",
    "local.settings.json",
    "appsettings.*.json",
    "wp-config.php",
    "token.json",
    "client_secret_*.json",
    "*-firebase-adminsdk-*.json",
    // Infrastructure as code.
    "*.tfstate",
    "*.tfstate.backup",
    "*.tfvars",
    "*.tfvars.json",
    ".terraform.d",
    ".terraformrc",
    "terraform.rc",
    // Package registries and build tools.
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    "pip.conf",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".composer/auth.json",
    "composer/auth.json",
    ".dockercfg",
    ".dockerconfigjson",
    // Network and service logins.
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".htpasswd",
    ".s3cfg",
    ".boto",
    ".passwd-s3fs",
    "rclone.conf",
    ".databrickscfg",
    "sftp-config.json",
    "*.ovpn",
    "*.rdp",
    // Cloud and cluster credentials.
    ".aws",
    ".azure",
    ".kube",
    "kubeconfig",
    "kubeconfig.yaml",
    "kubeconfig.yml",
    "*.kubeconfig",
    ".config/gcloud",
    "application_default_credentials.json",
    "gha-creds-*.json",
    "service-account.json",
    "service-account*.json",
    "service_account.json",
    "service_account*.json",
    ".config/gh",
    ".config/hub",
    ".config/doctl/config.yaml",
    ".vercel/auth.json",
    // AI coding tools' logins.
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".config/github-copilot/hosts.json",
    // Version control, keys and key stores.
    ".git",
    ".ssh",
    ".gnupg",
    ".docker",
    "*.pem",
    "*.key",
    "*.p8",
    "*.p12",
    "*.pfx",
    "*.pkcs12",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "*.kdb",
    "*.kdbx",
    "*.psafe3",
    "*.agilekeychain",
    "*.keychain",
    "*.keychain-db",
    ".otr.private_key",
    "*_rsa",
    "*_dsa",
    "*_ecdsa",
    "*_ed25519",
    "id_*_sk",
    // Shell and client histories (commands typed with a token in them).
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".history",
    ".python_history",
    ".node_repl_history",
    ".mysql_history",
    ".psql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
  ];
}
/**
 * How many directory levels below a shown directory the mask walk checks names (1: its own entries): every
 * level the walk reads (it reads them all, outside node_modules, up to {@link WALK_BUDGET} entries), so a
 * secret moved deeper is masked as well.
 */
export const MASK_DEPTH = Infinity;
/** The walk checks at most this many entries by name per root; a larger tree is refused rather than shown unmasked. */
export const MASK_BUDGET = 20_000;
/**
 * The walk reads at most this many entries per root in all (sockets and FIFOs are looked for at every depth, in
 * node_modules too); a larger tree is refused rather than shown with a socket in it.
 */
export const WALK_BUDGET = 200_000;
/** The directory whose insides are not checked by name: installed packages, not the user's secrets, and by far the largest part. */
const UNWALKED = "node_modules";

/** A path that cannot be shown as asked: the run must not start. */
export class SandboxPathError extends Error {
  override name = "SandboxPathError";
}

/** The command is not on PATH (or not executable): the same failure an unconfined spawn reports. */
export class CommandNotFoundError extends Error {
  override name = "Error";
  readonly code = "ENOENT";
}

/** One host path made visible in the sandbox. */
export interface Bind {
  /** The real path on the host (links resolved). */
  source: string;
  /** Where the guest sees it: `source`, or the path as given when that went through a link. */
  target: string;
  writable: boolean;
}

/** Something inside a shown directory that the guest sees empty. */
export interface Mask {
  path: string;
  kind: "file" | "directory";
}

/** Everything a mechanism needs to confine one run. */
export interface SandboxPolicy {
  /** The program, absolute and resolved on the host (the sandbox cannot search the host's PATH). */
  executable: string;
  /** The program's file, at its real path and where it was found. */
  executableBinds: Bind[];
  args: string[];
  cwd: string;
  /** The working files, parents before anything inside them. */
  binds: Bind[];
  /** Secrets inside the binds, masked after every bind. */
  masks: Mask[];
  network: boolean;
  env: Record<string, string>;
}

/** What the host asked to run. */
export interface Launch {
  command: string;
  args: readonly string[];
  cwd: string;
  /** The host environment the guest's variables (and the command's PATH search) are taken from. */
  env: NodeJS.ProcessEnv;
  /**
   * Whether to find the script's directory, its package and Node's lookups (default true). runCode turns
   * it off: it names every path its runner needs.
   */
  discover?: boolean;
  /**
   * A session's workspace (the working directory): the run's own files, bounded and sanitized by the host
   * (src/host/workspace/), so it is not walked for secrets: a body's `.env` is its own, and a full
   * workspace must not exceed the walk's budget.
   */
  workspace?: string;
}

/** Facts about the host the rules need: the directories too broad to show. */
export interface HostPlaces {
  /** Home directories (the host's HOME and the user database's). */
  homes: readonly string[];
  /** Temporary directory roots (os.tmpdir() and /tmp). */
  temporaryRoots: readonly string[];
}

/**
 * Checks the options object synchronously (runGuest throws before anything starts). `caller` names the
 * function in messages.
 */
export function checkSandboxOptions(options: SandboxOptions, caller: string): void {
  const known = ["readable", "writable", "network", "env", "showSecrets", "allowBroadPaths", "mechanism"];
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(`${caller}: unknown option sandbox.${key} (known: ${known.join(", ")})`);
  }
  for (const key of ["readable", "writable", "env"] as const) {
    const list = options[key];
    if (
      list !== undefined &&
      (!Array.isArray(list) || !list.every((item) => typeof item === "string" && item !== "" && !item.includes("\0")))
    ) {
      throw new TypeError(`${caller}: options.sandbox.${key} must be an array of non-empty strings`);
    }
  }
  for (const key of ["network", "showSecrets", "allowBroadPaths"] as const) {
    if (options[key] !== undefined && typeof options[key] !== "boolean") {
      throw new TypeError(`${caller}: options.sandbox.${key} must be a boolean`);
    }
  }
  const { mechanism } = options;
  if (mechanism !== undefined && mechanism !== "auto" && mechanism !== "bubblewrap" && mechanism !== "landlock") {
    throw new TypeError(
      `${caller}: options.sandbox.mechanism must be "auto", "bubblewrap" or "landlock", not ${JSON.stringify(mechanism)}`,
    );
  }
  for (const entry of options.env ?? []) {
    const problem = envEntryProblem(entry);
    if (problem !== undefined) throw new TypeError(`${caller}: options.sandbox.env entry ${problem}`);
  }
}

/** Why `entry` is not a `sandbox.env` entry (NAME or NAME=value), or undefined when it is one. */
export function envEntryProblem(entry: string): string | undefined {
  const name = entry.includes("=") ? entry.slice(0, entry.indexOf("=")) : entry;
  return ENV_NAME.test(name) ? undefined : `${JSON.stringify(entry)} is not NAME or NAME=value (NAME: letters, digits, _)`;
}

/** True when `path` is `root` or inside it. */
export function within(root: string, path: string): boolean {
  return path === root || path.startsWith(root === "/" ? "/" : `${root}/`);
}

/**
 * Whether `given` matches one of `patterns` ({@link secretNames}; `*` is any run of characters). A pattern's
 * leading parts (`.config/gh`) must name the directories just above, given in `parents` (nearest last).
 */
export function isSecretName(given: string, patterns: readonly string[], parents: readonly string[] = []): boolean {
  // Case does not matter: key files exported from Windows or macOS tools come as SERVER.PEM or .ENV.
  const name = given.toLowerCase();
  return compiled(patterns).some(({ last, parts }) => {
    if (!matchesName(name, last)) return false;
    const above = parents.slice(parents.length - parts.length).map((part) => part.toLowerCase());
    return above.length === parts.length && parts.every((part, i) => above[i] === part);
  });
}

/** Each pattern split once per list (a walk checks every name of a tree against the same list). */
const compiledPatterns = new WeakMap<readonly string[], { last: string; parts: string[] }[]>();
function compiled(patterns: readonly string[]): { last: string; parts: string[] }[] {
  let found = compiledPatterns.get(patterns);
  if (found === undefined) {
    found = patterns.map((pattern) => {
      const parts = pattern.split("/");
      return { last: parts.pop()!, parts };
    });
    compiledPatterns.set(patterns, found);
  }
  return found;
}

/** Whether `name` matches `pattern`, each `*` of which stands for a run of at least one character. */
function matchesName(name: string, pattern: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return name === pattern;
  const head = parts[0]!;
  const tail = parts[parts.length - 1]!;
  if (!name.startsWith(head) || name.length < head.length + tail.length + parts.length - 1) return false;
  // The middle parts in order, each after at least one character, leaving at least one before the tail.
  let at = head.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, at + 1);
    if (found < 0) return false;
    at = found + part.length;
  }
  return name.endsWith(tail) && name.length - tail.length >= at + 1;
}

/**
 * Builds the policy. Throws {@link SandboxPathError} saying what to fix when a named path cannot be
 * shown (missing, or too broad), and {@link CommandNotFoundError} when the command cannot be found.
 */
export function sandboxPolicy(
  launch: Launch,
  options: SandboxOptions,
  fs: FileSystemView,
  places: HostPlaces,
  cache?: MaskCache,
): SandboxPolicy {
  const executable = findExecutable(launch.command, launch.cwd, launch.env.PATH, fs);
  const broad = broadPaths(places, fs);
  const allowBroad = options.allowBroadPaths === true;
  const binds = new Map<string, Bind>();
  /** Directories whose insides are walked for secrets by name (every shown directory but node_modules). */
  const walked = new Set<string>();
  /** The other shown directories (node_modules): walked for sockets, FIFOs and devices only. */
  const walkedForSpecials = new Set<string>();
  /** Paths the host named itself: never masked, even when their name looks like a secret. */
  const named = new Set<string>();

  const bind = (source: string, target: string, writable: boolean) => {
    for (const at of new Set([source, target])) {
      const known = binds.get(at);
      binds.set(at, { source, target: at, writable: writable || (known?.writable ?? false) });
    }
  };
  const resolveNamed = (path: string, what: string, given = path): string => {
    try {
      return fs.realpath(path);
    } catch (error) {
      throw new SandboxPathError(`${what} ${JSON.stringify(given)} cannot be made visible in the sandbox: ${(error as Error).message}`);
    }
  };
  const refuseBroad = (real: string, given: string, what: string) => {
    if (!allowBroad && broad.has(real)) {
      throw new SandboxPathError(
        `${what} ${JSON.stringify(given)} would show ${real === given ? real : `${real} (its real path)`}, which is too broad ` +
          "(the root, a home directory, the temporary directory or an ancestor of one); name a directory of its own, " +
          "or pass sandbox.allowBroadPaths: true",
      );
    }
  };
  /** A path the host named: shown as resolved, where it resolves and where it was given. */
  const addNamed = (path: string, writable: boolean, what: string) => {
    const given = resolve(launch.cwd, path);
    const real = resolveNamed(given, what, path);
    refuseBroad(real, path, what);
    bind(real, given, writable);
    named.add(real).add(given);
    if (fs.targetKind(real) === "directory" && real !== launch.workspace) walked.add(real);
  };
  /**
   * A path the host found (not named): shown only when it resolves inside `root` (the directory it was
   * found in), never when broad. Returns its real path when shown.
   */
  const addFound = (path: string, root: string, walk: boolean): string | undefined => {
    const kind = fs.kind(path);
    if (kind === undefined) return undefined;
    let real = path;
    if (kind === "link") {
      // Found at a broad root (`/node_modules/x`), everything is "inside": no link there is followed.
      if (broad.has(root)) return undefined;
      try {
        real = fs.realpath(path);
      } catch {
        return undefined; // a dangling link shows nothing
      }
    }
    if (!within(root, real) || broad.has(real)) return undefined;
    // Only a file or a directory: a socket or FIFO named package.json is a way to a host process, not a manifest.
    const target = fs.targetKind(real);
    if (target !== "file" && target !== "directory") return undefined;
    bind(real, path, false);
    if (target === "directory") (walk ? walked : walkedForSpecials).add(real);
    return real;
  };

  const cwd = resolveNamed(resolve(launch.cwd), "the working directory", launch.cwd);
  refuseBroad(cwd, launch.cwd, "the working directory");
  bind(cwd, resolve(launch.cwd), false);
  if (cwd !== launch.workspace) walked.add(cwd);
  const discover = launch.discover !== false;
  const script = discover ? scriptOf(launch.args, launch.cwd, fs) : undefined;
  let scriptDir: string | undefined;
  if (script !== undefined) {
    scriptDir = resolveNamed(dirname(script), "the script's directory");
    refusePlanted(
      dirname(script),
      scriptDir,
      [resolve(launch.cwd), ...(options.writable ?? []).map((path) => resolve(launch.cwd, path))],
      fs,
    );
    refuseBroad(scriptDir, dirname(script), "the script's directory");
    bind(scriptDir, dirname(script), false);
    walked.add(scriptDir);
  }
  if (discover) {
    for (const dir of new Set([cwd, ...(scriptDir === undefined ? [] : [scriptDir])])) {
      for (let at = dir; ; at = dirname(at)) {
        addFound(join(at, "package.json"), at, false);
        const modules = addFound(join(at, "node_modules"), at, false);
        // A linked package (a workspace) is a directory of the user's, not an installed one: walked for secrets.
        if (modules !== undefined) for (const linked of linkedPackages(join(at, "node_modules"), fs)) addFound(linked, at, true);
        if (dirname(at) === at) break;
      }
    }
    if (scriptDir !== undefined) {
      const own = selfReferencingPackage(scriptDir, fs);
      if (own !== undefined) addFound(own, own, true);
    }
  }
  for (const path of options.readable ?? []) addNamed(path, false, "sandbox.readable path");
  for (const path of options.writable ?? []) addNamed(path, true, "sandbox.writable path");

  // A path given through a link is also bound where it was given, unless a bound parent already holds
  // the link (bwrap cannot mount over a link; inside the sandbox the link leads to the real path).
  const shadowed = (b: Bind) => b.target !== b.source && [...binds.keys()].some((other) => b.target.startsWith(`${other}/`));
  const shown = [...binds.values()]
    .filter((b) => !shadowed(b))
    .sort((a, b) => depth(a.target) - depth(b.target) || a.target.localeCompare(b.target));
  const patterns = options.showSecrets === true ? undefined : secretNames();
  const roots = [
    ...[...walked].map((root) => ({ root, patterns })),
    ...[...walkedForSpecials].map((root) => ({ root, patterns: undefined })),
  ];
  const found = secretsIn(roots, named, fs, cache);
  // A directory bound where it was given (through a link) as well as at its real path shows its secrets
  // at both places: each mask goes wherever a bind shows it.
  const masks = new Map(found.map((mask) => [mask.path, mask]));
  for (const b of shown) {
    if (b.target === b.source) continue;
    for (const mask of found) {
      if (!within(b.source, mask.path) || mask.path === b.source) continue;
      const path = b.target + mask.path.slice(b.source.length);
      masks.set(path, { ...mask, path });
    }
  }
  const realExecutable = fs.realpath(executable);
  return {
    executable,
    executableBinds: [...new Set([executable, realExecutable])].map((target) => ({ source: realExecutable, target, writable: false })),
    args: [...launch.args],
    cwd: resolve(launch.cwd),
    binds: shown,
    masks: [...masks.values()].sort((a, b) => a.path.localeCompare(b.path)),
    network: options.network ?? false,
    env: sandboxEnv(executable, resolve(launch.cwd), launch.env, options.env ?? []),
  };
}

/**
 * Refuses a script directory (`given`, resolving to `real`) inside the working directory or a writable path that
 * leads out of it through a link: a run that could write there may have planted the link (`src -> /victim/src`)
 * so that the next run shows, and runs, what it points at. Links that stay inside are followed.
 */
function refusePlanted(given: string, real: string, areas: readonly string[], fs: FileSystemView): void {
  for (const area of areas) {
    let areaReal: string;
    try {
      areaReal = fs.realpath(area);
    } catch {
      continue; // a writable path that does not exist is refused by its own check
    }
    if ((within(area, given) || within(areaReal, given)) && !within(areaReal, real)) {
      throw new SandboxPathError(
        `the script's directory ${JSON.stringify(given)} is inside ${JSON.stringify(area)} but leads out of it through a link ` +
          `(to ${real}); a link a run could have planted there is not followed: name the script by its real path`,
      );
    }
  }
}

/** `/`, every home and temporary root, and each of their ancestors, as real paths. */
function broadPaths(places: HostPlaces, fs: FileSystemView): Set<string> {
  const broad = new Set<string>(["/"]);
  for (const place of [...places.homes, ...places.temporaryRoots]) {
    if (!isAbsolute(place)) continue;
    let real = place;
    try {
      real = fs.realpath(place);
    } catch {
      // Not there: its name still counts.
    }
    for (const path of new Set([place, real])) {
      for (let at = path; ; at = dirname(at)) {
        broad.add(at);
        if (dirname(at) === at) break;
      }
    }
  }
  return broad;
}

/**
 * What to mask inside `roots`: sockets, FIFOs and devices at any depth (node_modules too), and, for a root with
 * `patterns`, files and directories with a secret's name at every depth ({@link MASK_DEPTH}), outside node_modules.
 * The walk follows no link and does not enter a masked directory. Past {@link MASK_BUDGET} entries checked by
 * name, or {@link WALK_BUDGET} entries in all, in one root it throws: a tree too large to check is refused, never
 * shown unmasked. A path the host named is not masked. With a {@link MaskCache}, a root whose directories did
 * not change is not walked again.
 */
function secretsIn(
  roots: readonly { root: string; patterns: readonly string[] | undefined }[],
  named: ReadonlySet<string>,
  fs: FileSystemView,
  cache?: MaskCache,
): Mask[] {
  const every = roots.map((r) => r.root);
  // A root inside another is walked from itself when names are checked (its depth counts from where it is shown);
  // for special files alone the outer walk, which goes to the bottom, has found them already.
  const needed = roots.filter(
    ({ root, patterns }) => patterns !== undefined || !every.some((other) => other !== root && within(other, root)),
  );
  const masks = [
    ...new Map(
      needed
        .flatMap(({ root, patterns }) => {
          const key = `${patterns === undefined ? "special" : "named"}:${root}`;
          return cache?.reuse(key, fs) ?? walkForMasks(root, patterns, fs, (record) => cache?.remember(key, record));
        })
        .map((m) => [m.path, m]),
    ).values(),
  ];
  // A named path is shown: neither it nor a directory holding it is masked.
  const shown = [...named];
  return masks.filter((mask) => !shown.some((path) => within(mask.path, path))).sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * One root's walk. A directory's `level` is how deep it is for names: 1 for the root's own entries, 0 where names
 * are not checked (no patterns, below MASK_DEPTH, inside node_modules); special files are looked for everywhere.
 */
function walkForMasks(
  root: string,
  patterns: readonly string[] | undefined,
  fs: FileSystemView,
  remember: (record: { startedAt: number; dirs: Map<string, number | undefined>; masks: Mask[] }) => void,
): Mask[] {
  const masks: Mask[] = [];
  const dirs = new Map<string, number | undefined>();
  const startedAt = Date.now();
  let byName = 0;
  let read = 0;
  // Depth first with a stack of its own: a tree thousands of levels deep must not overflow the host's call stack.
  const pending: { dir: string; level: number; parents: string[] }[] = [{ dir: root, level: patterns === undefined ? 0 : 1, parents: [] }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { dir, level, parents } = next;
    dirs.set(dir, fs.changedMs(dir));
    for (const { name, kind } of fs.list(dir)) {
      if (++read > WALK_BUDGET) {
        throw new SandboxPathError(
          `${JSON.stringify(root)} has more than ${WALK_BUDGET} entries, too many to check for sockets and FIFOs (ways to host ` +
            "processes); name a smaller directory",
        );
      }
      if (level > 0 && ++byName > MASK_BUDGET) {
        throw new SandboxPathError(
          `${JSON.stringify(root)} has more than ${MASK_BUDGET} entries outside node_modules, too many to check for secrets; ` +
            "name a smaller directory, or pass sandbox.showSecrets: true",
        );
      }
      const path = join(dir, name);
      // A socket or FIFO is a way to a host process (a unix socket is a network the namespace does not cut):
      // masked as a file, whatever its name or depth.
      if (kind === "other") masks.push({ path, kind: "file" });
      else if (level > 0 && isSecretName(name, patterns!, parents) && (kind === "file" || kind === "directory")) masks.push({ path, kind });
      else if (kind === "directory") {
        const deeper = level > 0 && level < MASK_DEPTH && name !== UNWALKED;
        pending.push({ dir: path, level: deeper ? level + 1 : 0, parents: deeper ? [...parents, name] : [] });
      }
    }
  }
  remember({ startedAt, dirs, masks });
  return masks;
}

/**
 * Remembers what the mask walk found under each root, with the change time (ctime) of every directory it
 * read: adding, removing or renaming an entry changes its directory's ctime, so a record whose
 * directories all kept theirs is still true. Not the modification time: a guest that may write a
 * directory can set that back (`touch -r`); nobody but the kernel sets a ctime. As git does for its index, a directory changed less than
 * {@link RACY_MS} before the walk is never trusted (a change in the same clock tick would not show).
 */
export class MaskCache {
  private readonly records = new Map<string, { startedAt: number; dirs: Map<string, number | undefined>; masks: Mask[] }>();

  /** The masks found under `root` before, when nothing there changed since; else undefined. */
  reuse(root: string, fs: FileSystemView): Mask[] | undefined {
    const record = this.records.get(root);
    if (record === undefined) return undefined;
    for (const [dir, modified] of record.dirs) {
      if (modified === undefined || modified > record.startedAt - RACY_MS || fs.changedMs(dir) !== modified) {
        this.records.delete(root);
        return undefined;
      }
    }
    return record.masks;
  }

  remember(root: string, record: { startedAt: number; dirs: Map<string, number | undefined>; masks: Mask[] }): void {
    if (this.records.size >= MASK_CACHE_ROOTS) this.records.delete(this.records.keys().next().value!);
    this.records.set(root, record);
  }
}

/** A directory modified this close before a walk is walked again next time. */
export const RACY_MS = 2000;
/** At most this many roots are remembered (the oldest is forgotten first). */
const MASK_CACHE_ROOTS = 64;

/** The guest's environment: PATH, HOME, LANG, PWD, TZ (when the host has it), then the names asked for. */
function sandboxEnv(executable: string, cwd: string, source: NodeJS.ProcessEnv, entries: readonly string[]): Record<string, string> {
  const bin = dirname(executable);
  const env: Record<string, string> = {
    PATH: SANDBOX_PATH.split(":").includes(bin) ? SANDBOX_PATH : `${bin}:${SANDBOX_PATH}`,
    HOME: SANDBOX_HOME,
    LANG: source.LANG ?? "C.UTF-8",
    PWD: cwd,
  };
  if (source.TZ !== undefined) env.TZ = source.TZ;
  for (const entry of entries) {
    const equals = entry.indexOf("=");
    if (equals >= 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
    else if (source[entry] !== undefined) env[entry] = source[entry]!;
  }
  return env;
}

/**
 * The script a command runs: its first argument that does not start with "-", unless an option that
 * takes the program from the command line came first (`node --eval=… file` runs no file), naming a
 * regular file. A script that is a link leading out of its own directory is not followed (its target
 * stays hidden, and the program fails to load it): only its directory is shown.
 */
export function scriptOf(args: readonly string[], cwd: string, fs: FileSystemView): string | undefined {
  // Options on a node-style command line after which the first plain argument is data, not a script.
  const evalOptions = ["-e", "--eval", "-p", "--print", "-c", "--command"];
  for (const arg of args) {
    if (evalOptions.some((option) => arg === option || arg.startsWith(`${option}=`))) return undefined;
    if (arg.startsWith("-")) continue;
    const path = resolve(cwd, arg);
    const kind = fs.kind(path);
    if (kind === "file") return path;
    if (kind !== "link" || fs.targetKind(path) !== "file") return undefined;
    try {
      const real = fs.realpath(path);
      return within(fs.realpath(dirname(path)), real) ? path : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The directory of the nearest package.json above `dir`, when that package can import itself by name
 * (it has both "name" and "exports": Node's self-reference), so a guest inside a package finds it.
 */
function selfReferencingPackage(dir: string, fs: FileSystemView): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const path = join(at, "package.json");
    const kind = fs.kind(path);
    if (kind === "file") {
      try {
        const manifest = JSON.parse(fs.read(path) ?? "") as { name?: unknown; exports?: unknown };
        return typeof manifest.name === "string" && manifest.exports !== undefined ? at : undefined;
      } catch {
        return undefined;
      }
    }
    if (kind !== undefined || dirname(at) === at) return undefined; // a link or anything odd ends the search
  }
}

/**
 * The links in a node_modules directory (workspaces, `npm link`): its packages that are links, one
 * level deep (and one more under an @scope directory that is not itself a link).
 */
function linkedPackages(nodeModules: string, fs: FileSystemView): string[] {
  const found: string[] = [];
  const visit = (dir: string, scoped: boolean) => {
    for (const { name, kind } of fs.list(dir)) {
      const path = join(dir, name);
      if (kind === "link") found.push(path);
      else if (!scoped && kind === "directory" && name.startsWith("@")) visit(path, true);
    }
  };
  visit(nodeModules, false);
  return found;
}

/** The command as an absolute path: taken from `cwd` when it has a slash, else searched on PATH. */
export function findExecutable(command: string, cwd: string, path: string | undefined, fs: FileSystemView): string {
  const candidates = command.includes("/")
    ? [resolve(cwd, command)]
    : (path ?? "")
        .split(delimiter)
        .filter((dir) => isAbsolute(dir))
        .map((dir) => join(dir, command));
  const found = candidates.find((candidate) => fs.executable(candidate));
  if (found === undefined) throw new CommandNotFoundError(`spawn ${command} ENOENT`);
  return found;
}

function depth(path: string): number {
  return path.split("/").filter((part) => part !== "").length;
}
