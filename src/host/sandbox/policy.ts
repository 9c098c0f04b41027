/**
 * The sandbox policy, independent of the mechanism that enforces it: the program to start, the host
 * paths the guest may read or write, its network and its environment. Each mechanism (bubblewrap.ts,
 * later sandbox-exec on macOS) turns a {@link SandboxPolicy} into a command line.
 */
import { accessSync, constants, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import type { SandboxOptions } from "./types.js";

/** HOME inside the sandbox: a directory in the private /tmp, so it starts empty and is writable. */
export const SANDBOX_HOME = "/tmp/home";
/** PATH inside the sandbox (the interpreter's directory is put first when it is elsewhere). */
const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A `readable`/`writable` path (or the working directory) that cannot be bound: the run must not start. */
export class SandboxPathError extends Error {
  override name = "SandboxPathError";
}

/** The command is not on PATH (or not executable): the same failure an unconfined spawn reports. */
export class CommandNotFoundError extends Error {
  override name = "Error";
  readonly code = "ENOENT";
}

/** One host path made visible in the sandbox at the same place. */
export interface Bind {
  /** The real path on the host (symbolic links resolved). */
  source: string;
  /** Where the guest sees it: `source`, or the path as given when that went through a link. */
  target: string;
  writable: boolean;
}

/** Everything a mechanism needs to confine one run. */
export interface SandboxPolicy {
  /** The program, absolute and resolved on the host (the sandbox cannot search the host's PATH). */
  executable: string;
  /** The program's file, when it lies outside the system directories the mechanism binds anyway. */
  executableBinds: Bind[];
  args: string[];
  cwd: string;
  /** The working files: cwd, the script's directory, Node's module lookup paths, readable and writable. Shallow first. */
  binds: Bind[];
  network: boolean;
  env: Record<string, string>;
  /** The size of the private /tmp in bytes (limits.tmpBytes); unbounded when absent. */
  tmpBytes?: number | undefined;
}

/** What the host asked to run. */
export interface Launch {
  command: string;
  args: readonly string[];
  cwd: string;
  /** The host environment the guest's variables are taken from. */
  env: NodeJS.ProcessEnv;
}

/**
 * Checks the options object synchronously (runGuest throws before anything starts). `caller` names the
 * function in messages.
 */
export function checkSandboxOptions(options: SandboxOptions, caller: string): void {
  for (const key of Object.keys(options)) {
    if (!["readable", "writable", "network", "env"].includes(key)) {
      throw new TypeError(`${caller}: unknown option sandbox.${key} (known: readable, writable, network, env)`);
    }
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
  if (options.network !== undefined && typeof options.network !== "boolean")
    throw new TypeError(`${caller}: options.sandbox.network must be a boolean`);
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

/**
 * Builds the policy. Throws an Error whose message says what to fix when the command cannot be found
 * or a `readable`/`writable` path does not exist (a missing path is refused, never silently skipped).
 */
export function sandboxPolicy(launch: Launch, options: SandboxOptions): SandboxPolicy {
  const executable = findExecutable(launch.command, launch.cwd, launch.env.PATH);
  const binds = new Map<string, Bind>();
  const add = (path: string, writable: boolean, what: string) => {
    const given = resolve(launch.cwd, path);
    let source: string;
    try {
      source = realpathSync(given);
    } catch (error) {
      throw new SandboxPathError(`${what} ${JSON.stringify(path)} cannot be made visible in the sandbox: ${(error as Error).message}`);
    }
    for (const target of new Set([source, given])) {
      const known = binds.get(target);
      binds.set(target, { source, target, writable: writable || (known?.writable ?? false) });
    }
  };
  // A path given through a symbolic link is also bound where it was given, unless a bound parent
  // already holds the link (bwrap cannot mount over a link; the link then leads to the real path).
  const shadowed = (bind: Bind) => bind.target !== bind.source && [...binds.keys()].some((other) => bind.target.startsWith(`${other}/`));
  add(launch.cwd, false, "the working directory");
  const script = scriptOf(launch.args, launch.cwd);
  if (script !== undefined) add(dirname(script), false, "the script's directory");
  for (const dir of new Set([launch.cwd, ...(script === undefined ? [] : [dirname(script)])])) {
    for (const path of nodeLookupPaths(dir)) add(path, false, "a module lookup path");
  }
  if (script !== undefined) {
    const own = selfReferencingPackage(dirname(script));
    if (own !== undefined) add(own, false, "the script's package");
  }
  for (const path of options.readable ?? []) add(path, false, "sandbox.readable path");
  for (const path of options.writable ?? []) add(path, true, "sandbox.writable path");
  return {
    executable,
    executableBinds: [...new Set([executable, realpathSync(executable)])].map((target) => ({
      source: realpathSync(executable),
      target,
      writable: false,
    })),
    args: [...launch.args],
    cwd: launch.cwd,
    // A bind hides whatever was bound below it before, so parents go first.
    binds: [...binds.values()]
      .filter((bind) => !shadowed(bind))
      .sort((a, b) => depth(a.target) - depth(b.target) || a.target.localeCompare(b.target)),
    network: options.network ?? false,
    env: sandboxEnv(executable, launch.env, options.env ?? []),
  };
}

/** The guest's environment: PATH, HOME, LANG, TZ, then the names asked for. */
function sandboxEnv(executable: string, source: NodeJS.ProcessEnv, entries: readonly string[]): Record<string, string> {
  const bin = dirname(executable);
  const env: Record<string, string> = {
    PATH: SANDBOX_PATH.split(":").includes(bin) ? SANDBOX_PATH : `${bin}:${SANDBOX_PATH}`,
    HOME: SANDBOX_HOME,
    LANG: source.LANG ?? "C.UTF-8",
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
 * The script a command runs: its first argument that does not start with "-" and names an existing
 * regular file (`node guest.mjs`, `python3 tool.py`). Its directory is bound so its own modules resolve.
 */
function scriptOf(args: readonly string[], cwd: string): string | undefined {
  const first = args.find((arg) => !arg.startsWith("-"));
  if (first === undefined) return undefined;
  try {
    const path = realpathSync(resolve(cwd, first));
    return statSync(path).isFile() ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What Node's resolver reads above a directory: every `node_modules` directory and `package.json`
 * file of its ancestors (bare imports, the package's "type" and self-references). The ancestors
 * themselves stay hidden.
 */
function nodeLookupPaths(dir: string): string[] {
  const found: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    for (const name of ["node_modules", "package.json"]) {
      const path = join(at, name);
      try {
        statSync(path);
        found.push(path);
        if (name === "node_modules") found.push(...linkedPackages(path));
      } catch {
        // Not there: nothing to bind.
      }
    }
    if (dirname(at) === at) return found;
  }
}

/**
 * The directory of the nearest package.json above `dir`, when that package can import itself by name
 * (it has both "name" and "exports": Node's self-reference), so a guest inside a package finds it.
 */
function selfReferencingPackage(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    let text: string | undefined;
    try {
      text = readFileSync(join(at, "package.json"), "utf8");
    } catch {
      // No package.json here: look further up.
    }
    if (text !== undefined) {
      try {
        const manifest = JSON.parse(text) as { name?: unknown; exports?: unknown };
        return typeof manifest.name === "string" && manifest.exports !== undefined ? at : undefined;
      } catch {
        return undefined;
      }
    }
    if (dirname(at) === at) return undefined;
  }
}

/**
 * What a bound node_modules directory links to elsewhere (workspaces, `npm link`): the targets of its
 * packages that are symbolic links, one level deep (and one more under an @scope).
 */
function linkedPackages(nodeModules: string): string[] {
  const found: string[] = [];
  const visit = (dir: string, scoped: boolean) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) found.push(path);
      else if (!scoped && entry.isDirectory() && entry.name.startsWith("@")) visit(path, true);
    }
  };
  visit(nodeModules, false);
  return found;
}

/** The command as an absolute path: taken from `cwd` when it has a slash, else searched on PATH. */
export function findExecutable(command: string, cwd: string, path: string | undefined): string {
  const candidates = command.includes("/")
    ? [resolve(cwd, command)]
    : (path ?? "")
        .split(delimiter)
        .filter((dir) => isAbsolute(dir))
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Try the next one.
    }
  }
  throw new CommandNotFoundError(`spawn ${command} ENOENT`);
}

function depth(path: string): number {
  return path.split("/").filter((part) => part !== "").length;
}
