/**
 * Linux: confine the guest with bubblewrap (`bwrap`, the OS package `bubblewrap`), called directly.
 * The sandbox gets its own mount, PID, network (unless `network`), IPC, UTS and user namespaces, a new
 * session, no capabilities, a seccomp filter (seccomp.ts), and dies with the host (`--die-with-parent`).
 * Its file system is built from nothing: the system directories needed to start a program (read-only),
 * /proc with the kernel's settings read-only, a minimal /dev, a private /tmp, the policy's binds, then
 * its masks. {@link bubblewrapArgs} is a pure function of the policy and of what the host's system
 * directories are ({@link systemLayout}, read once per run), so every flag is tested in-process.
 */
import { delimiter, isAbsolute, join } from "node:path";
import type { FileSystemView } from "./file-system-view.js";
import { SANDBOX_HOME, SANDBOX_PATH, type SandboxPolicy } from "./policy.js";
import type { SandboxReport } from "./types.js";
import { GATE_SHELL, gateScript } from "../workspace/copy-workspace.js";

// The lists below are built when asked (once per run), not at load: a module-level table would make each
// of its values a mutant that every test must run for (npm run mutate).

/** Read-only system directories (or the links merged-/usr systems have in their place). */
export function systemDirs(): string[] {
  return ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
}
/**
 * The pieces of /etc a program needs to start and behave: the loader's cache, time zone, public TLS
 * certificates (Debian and Red Hat layouts; never /etc/ssl/private), Debian's alternatives links.
 * Not /etc/passwd, /etc/hostname or anything else.
 */
export function systemEtc(): string[] {
  return [
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
    "/etc/alternatives",
  ];
}
/** Name resolution, only with `network: true`. */
export function networkEtc(): string[] {
  return ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf"];
}
/**
 * What of /proc is re-bound read-only over the sandbox's own /proc (the list container runtimes keep):
 * a guest that is uid 0 on the host (a root host) could otherwise change kernel settings
 * (`/proc/sys/kernel/core_pattern` runs a program as root on the next crash) or trigger SysRq.
 * `/proc/pressure` too: writing one of its files sets a pressure (PSI) trigger, kernel work host-wide.
 */
export function readOnlyProc(): string[] {
  return ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/pressure"];
}

/** What the host's system directories are: links (merged /usr) or directories; absent ones are left out. */
export interface SystemLayout {
  dirs: ({ path: string; kind: "directory" } | { path: string; kind: "link"; target: string })[];
  /** The /etc files and directories of {@link systemEtc} and {@link networkEtc} that exist. */
  etc: string[];
  /** The paths of {@link readOnlyProc} that exist on the host (bwrap binds the host's own). */
  proc: string[];
}

/** Reads the host's {@link SystemLayout}. */
export function systemLayout(fs: FileSystemView): SystemLayout {
  const dirs: SystemLayout["dirs"] = [];
  for (const path of systemDirs()) {
    const kind = fs.kind(path);
    if (kind === "link") dirs.push({ path, kind, target: fs.readlink(path) });
    else if (kind === "directory") dirs.push({ path, kind });
  }
  return {
    dirs,
    etc: [...systemEtc(), ...networkEtc()].filter((path) => fs.kind(path) !== undefined),
    proc: readOnlyProc().filter((path) => fs.kind(path) !== undefined),
  };
}

/** How the launch is wired: the descriptor bwrap reads the seccomp filter from, and the host's own program. */
export interface BubblewrapWiring {
  /** bwrap's `--seccomp FD`, or undefined to run without a filter (an architecture the filter does not know). */
  seccompFd?: number;
  /**
   * bwrap's `--info-fd FD`, on which it tells the pid of the sandbox's init (process/process-group.ts waits for
   * that init's end: bwrap's own process exits as soon as the guest does, before the init has ended the rest).
   */
  infoFd?: number;
  /** Size of the private /tmp in bytes (`--size`), or undefined for the tmpfs default. */
  tmpBytes?: number;
  /**
   * A tmpfs of `bytes` (mode 0700) mounted on `path` inside the sandbox, in place of whatever the policy binds
   * there: runCode's private working directory of a cold run (code-launch.ts), which dies with the sandbox.
   */
  privateDir?: { path: string; bytes: number };
  /**
   * The host's own executable (process.execPath). Deno's child_process inserts its own flags after
   * every argument equal to its executable's path, so such a path is spelt differently here (`/./`).
   */
  hostExecutable?: string;
  /**
   * The guest starts behind the workspace gate (a "copy" session's run: workspace/copy-workspace.ts): a shell
   * that waits for the host to fill `privateDir` before it executes the guest.
   */
  gate?: boolean;
}

/** The bwrap arguments that run `policy` (after `bwrap` itself), and what the report says about it. */
export function bubblewrapArgs(
  policy: SandboxPolicy,
  layout: SystemLayout,
  wiring: BubblewrapWiring = {},
): { args: string[]; report: SandboxReport } {
  const spell = (path: string) => (path === wiring.hostExecutable ? spellApart(path) : path);
  const networkOnly = networkEtc();
  const args: string[] = ["--unshare-all"];
  if (policy.network) args.push("--share-net");
  args.push("--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv");
  for (const [name, value] of Object.entries(policy.env)) args.push("--setenv", name, value);
  if (wiring.seccompFd !== undefined) args.push("--seccomp", String(wiring.seccompFd));
  if (wiring.infoFd !== undefined) args.push("--info-fd", String(wiring.infoFd));
  const readable: string[] = [];
  for (const dir of layout.dirs) {
    if (dir.kind === "link") args.push("--symlink", dir.target, dir.path);
    else {
      args.push("--ro-bind", dir.path, dir.path);
      readable.push(dir.path);
    }
  }
  for (const path of layout.etc) {
    if (!policy.network && networkOnly.includes(path)) continue;
    args.push("--ro-bind", path, path);
    readable.push(path);
  }
  args.push("--proc", "/proc");
  for (const path of layout.proc) args.push("--ro-bind", path, path);
  args.push("--dev", "/dev");
  if (wiring.tmpBytes !== undefined) args.push("--size", String(wiring.tmpBytes));
  args.push("--tmpfs", "/tmp", "--dir", SANDBOX_HOME);
  // The program after the private /tmp: a runtime installed under /tmp (a project made in the temporary
  // directory, Bun's or Deno's npm package in it) would otherwise be hidden by it (issue 29.4).
  for (const bind of policy.executableBinds) {
    if (layout.dirs.some((dir) => bind.target.startsWith(`${dir.path}/`))) continue;
    args.push("--ro-bind", spell(bind.source), spell(bind.target));
    readable.push(bind.target);
  }
  const writable = ["/tmp"];
  const own = wiring.privateDir;
  for (const bind of policy.binds) {
    // The private directory's tmpfs takes the place of the host's directory: nothing of the host's lies beneath it.
    if (bind.target === own?.path) continue;
    args.push(bind.writable ? "--bind" : "--ro-bind", spell(bind.source), spell(bind.target));
    (bind.writable ? writable : readable).push(bind.target);
  }
  if (own !== undefined) {
    args.push("--perms", "0700", "--size", String(own.bytes), "--tmpfs", spell(own.path));
    writable.push(own.path);
  }
  // After every bind, so nothing bound later shows a masked path again.
  for (const mask of policy.masks) {
    if (mask.kind === "file") args.push("--ro-bind", "/dev/null", mask.path);
    else args.push("--tmpfs", mask.path, "--remount-ro", mask.path);
  }
  // bwrap's root is a tmpfs of its own, and the directories it makes there to hold the binds (/work above a
  // checkout's dist, /root/.cache above a Node under a home) would be writable, without a size bound: read-only,
  // so only /tmp and the writable binds take writes (test/host/sandbox/node-under-home.test.ts).
  args.push("--remount-ro", "/");
  args.push("--chdir", policy.cwd, "--");
  if (wiring.gate === true) args.push(GATE_SHELL, "-c", gateScript(), "ears-workspace-gate");
  args.push(spell(policy.executable), ...policy.args);
  return {
    args,
    report: {
      mechanism: "bubblewrap",
      readable,
      writable,
      masked: policy.masks.map((mask) => mask.path),
      network: policy.network,
      env: Object.keys(policy.env),
      seccomp: wiring.seccompFd !== undefined,
      gaps: [],
    },
  };
}

/** The same path in another spelling (`/a/b` → `/a/./b`): equal for the kernel, unequal as text. */
export function spellApart(path: string): string {
  const slash = path.lastIndexOf("/");
  return `${path.slice(0, slash)}/.${path.slice(slash)}`;
}

/**
 * Where bwrap is looked for after PATH: the sandbox's own PATH (`/usr/local/bin`, `/usr/bin`, `/bin`), so that a
 * stripped PATH (`env -i`, a service manager's, an MCP client's) never hides an installed sandbox.
 */
export function standardBinDirs(): string[] {
  return SANDBOX_PATH.split(":");
}

/** What the look for bwrap found: an executable, or a `bwrap` that is there but cannot be run. */
export interface BwrapFound {
  path: string;
  executable: boolean;
}

/**
 * The `bwrap` on PATH or in the {@link standardBinDirs}, the first executable one; else the first entry named
 * `bwrap` that is not (installed, but unusable); else undefined (not installed).
 */
export function findBwrap(fs: FileSystemView, path = process.env.PATH): BwrapFound | undefined {
  let unusable: string | undefined;
  for (const dir of new Set([...(path ?? "").split(delimiter), ...standardBinDirs()])) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, "bwrap");
    if (fs.executable(candidate)) return { path: candidate, executable: true };
    if (unusable === undefined && fs.kind(candidate) !== undefined) unusable = candidate;
  }
  return unusable === undefined ? undefined : { path: unusable, executable: false };
}

/**
 * The probe's command line: one throw-away sandbox with every namespace the real one uses, running
 * `bwrap --version` inside it.
 */
export function probeArgs(bwrap: string): string[] {
  const args = ["--ro-bind", "/", "/", "--unshare-all", "--proc", "/proc", "--dev", "/dev", "--die-with-parent", "--new-session"];
  return [...args, "--cap-drop", "ALL", "--", bwrap, "--version"];
}
