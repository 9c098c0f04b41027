/**
 * Linux without user namespaces (Docker's default seccomp profile, a non-root host that may not create
 * them): confine the guest with Landlock through this package's static helper, `ears-confine`
 * (native/ears-confine.c, built into dist/native/). The helper applies the Landlock rules built here, TCP
 * bind/connect refused unless the network is shared, signal and abstract-socket scoping, the seccomp program
 * (seccomp.ts, on a descriptor, as bubblewrap gets it), no_new_privs and no capabilities, then runs the
 * guest as its child and, as its subreaper, kills whatever the guest left when it ends.
 *
 * Landlock grants are allow-lists on the host's own file system, with no mount to hide anything: a secret
 * inside a shown directory is masked by granting that directory's other entries one by one (a directory
 * holding a secret is granted only its listing, see {@link landlockGrants}). What Landlock cannot do that
 * bubblewrap does is {@link landlockGaps}, in the report and docs/host.md.
 *
 * {@link landlockArgs} is a pure function of the policy, the system layout and the file system's view, so
 * every flag is tested in-process.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FileSystemView } from "./file-system-view.js";
import { networkEtc, type SystemLayout } from "./bubblewrap.js";
import { SandboxPathError, within, type Mask, type SandboxPolicy } from "./policy.js";
import type { SandboxReport } from "./types.js";

/**
 * The lowest Landlock ABI the helper runs at (Linux 6.12): 6 is the first that scopes signals and abstract unix
 * sockets to the run, without which a guest could signal the host's processes; TCP came with 4. The helper
 * refuses an older kernel itself; this is what the host asks for.
 */
export const LANDLOCK_ABI_MIN = 6;

/** The helper's exit codes for its own failures (the guest never ran); its stderr line starts with {@link CONFINE_MARK}. */
export const CONFINE_EXIT = { usage: 120, abi: 121, rule: 122, setup: 123 } as const;
/** Every line the helper writes on stderr starts with this. */
export const CONFINE_MARK = "ears-confine:";

/** The most rules one run may give the helper: a directory split entry by entry around its secrets can hold many. */
export const MAX_LANDLOCK_RULES = 20_000;

/** The helper's file name for a Node architecture, or undefined where none is built. */
export function confineHelperName(arch: string = process.arch): string | undefined {
  return arch === "x64" || arch === "arm64" ? `ears-confine-linux-${arch}` : undefined;
}

/**
 * The helper for this machine in this package's dist/native/ (this module may be bundled into dist/host or
 * dist/chunks, or run from src/ by the tests): its path, or why there is none.
 */
export function findConfineHelper(fs: FileSystemView, arch: string = process.arch): { path: string } | { missing: string } {
  const name = confineHelperName(arch);
  if (name === undefined) return { missing: `no Landlock helper is built for ${arch} (only x64 and arm64)` };
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "../native", name), join(here, "../../../dist/native", name)];
  const found = candidates.find((path) => fs.executable(path));
  if (found !== undefined) return { path: found };
  return {
    missing:
      `the Landlock helper (dist/native/${name}) is missing from this installation of @posoco/ears ` +
      "(a build made with EARS_SKIP_NATIVE=1?); reinstall the package, or build it with musl-tools and gcc-aarch64-linux-gnu installed",
  };
}

/** One Landlock rule: `read` (read and execute), `write` (everything), `list` (list directories only, read no file). */
export interface LandlockGrant {
  path: string;
  access: "read" | "write" | "list";
}

/**
 * The rules that show `shown` (real paths) without the `masks` inside them. A shown directory with a mask beneath
 * is granted its listing only, and each of its entries on its own (recursively towards the mask); the mask, a link
 * (what it leads to is shown only when shown by its own rule) and a socket or FIFO are left out. A mask beneath a
 * writable path cannot be hidden that way (a file created or renamed there takes the directory's rights): refused,
 * naming the option, rather than shown. Throws {@link SandboxPathError}.
 */
export function landlockGrants(
  shown: readonly { path: string; writable: boolean }[],
  masks: readonly Mask[],
  fs: FileSystemView,
): LandlockGrant[] {
  const grants: LandlockGrant[] = [];
  const add = (grant: LandlockGrant) => {
    if (grants.length >= MAX_LANDLOCK_RULES) {
      throw new SandboxPathError(
        `the shown directories need more than ${MAX_LANDLOCK_RULES} Landlock rules to hide their secrets; ` +
          "name smaller directories, or pass sandbox.showSecrets: true",
      );
    }
    grants.push(grant);
  };
  const split = (dir: string, inside: readonly Mask[]) => {
    add({ path: dir, access: "list" });
    for (const { name, kind } of fs.list(dir)) {
      const path = join(dir, name);
      const below = inside.filter((mask) => within(path, mask.path));
      if (below.some((mask) => mask.path === path) || kind === "link" || kind === "other") continue;
      if (below.length === 0) add({ path, access: "read" });
      else if (kind === "directory") split(path, below);
    }
  };
  for (const { path, writable } of shown) {
    const inside = masks.filter((mask) => within(path, mask.path));
    if (inside.some((mask) => mask.path === path)) continue;
    if (inside.length === 0) add({ path, access: writable ? "write" : "read" });
    else if (writable) {
      throw new SandboxPathError(
        `the writable path ${JSON.stringify(path)} holds ${inside[0]!.path}${inside.length > 1 ? ` and ${inside.length - 1} more` : ""}, ` +
          "which Landlock cannot hide inside a writable directory (bubblewrap can); remove them, " +
          "pass sandbox.showSecrets: true, or run where bubblewrap starts",
      );
    } else split(path, inside);
  }
  return grants;
}

/** The devices a guest may use: the sinks and sources programs expect. */
export function landlockDevices(): { path: string; writable: boolean }[] {
  return [
    { path: "/dev/null", writable: true },
    { path: "/dev/zero", writable: false },
    { path: "/dev/full", writable: true },
    { path: "/dev/random", writable: false },
    { path: "/dev/urandom", writable: false },
  ];
}

/**
 * What Landlock cannot do that bubblewrap does, as the report's `gaps` says it (docs/host.md, "Landlock"). Each
 * entry starts with a short name and a colon.
 */
export function landlockGaps(network: boolean): string[] {
  return [
    "proc: other processes are listed in /proc with their command lines (their environment and memory are not readable)",
    "tmp: no private /tmp mount: /tmp is not reachable; TMPDIR and HOME are a private directory removed after the run",
    "masks: a masked secret is unreadable (EACCES) rather than empty, and its name is listed",
    network
      ? "network: the host's network itself, with no namespace of its own"
      : "network: no network namespace: IP sockets are refused (seccomp, and TCP by Landlock); the host's interfaces are listed",
    "uid: the guest runs as the host's user (with no capabilities), not as a user of its own",
  ];
}

/** How the launch is wired: the seccomp descriptor, the host's pid, where the private directory is made. */
export interface LandlockWiring {
  /** The helper's `--seccomp-fd`, or undefined to run without a filter (an architecture the filter does not know). */
  seccompFd?: number;
  /** The host's pid: the helper ends the run when its parent is no longer this process. */
  parentPid: number;
  /** Where the helper makes the run's private directory (TMPDIR and HOME), a real path. */
  tmpRoot: string;
  /** The lowest Landlock ABI to accept (default {@link LANDLOCK_ABI_MIN}). */
  abiMin?: number;
}

/** The helper's arguments that run `policy` (after the helper itself), and what the report says about it. */
export function landlockArgs(
  policy: SandboxPolicy,
  layout: SystemLayout,
  fs: FileSystemView,
  wiring: LandlockWiring,
): { args: string[]; report: SandboxReport } {
  const networkOnly = networkEtc();
  const readable: string[] = [];
  const system: { path: string; writable: boolean }[] = [];
  const seen = new Set<string>();
  const show = (path: string, writable: boolean) => {
    if (seen.has(path)) return;
    seen.add(path);
    system.push({ path, writable });
  };
  // The system directories (a merged-/usr link needs no rule: what it leads to has its own).
  for (const dir of layout.dirs) if (dir.kind === "directory") show(dir.path, false);
  const systemRoots = layout.dirs.filter((dir) => dir.kind === "directory").map((dir) => dir.path);
  // /etc's pieces at their real paths: Landlock rules are on files, and the helper follows no link.
  for (const path of layout.etc) {
    if (!policy.network && networkOnly.includes(path)) continue;
    let real: string;
    try {
      real = fs.realpath(path);
    } catch {
      continue; // a dangling link shows nothing
    }
    readable.push(path);
    if (!systemRoots.some((root) => within(root, real))) show(real, false);
  }
  show("/proc", false);
  readable.push("/proc");
  for (const device of landlockDevices()) if (fs.kind(device.path) !== undefined) show(device.path, device.writable);
  for (const bind of policy.executableBinds) {
    if (!systemRoots.some((root) => within(root, bind.source))) show(bind.source, false);
    readable.push(bind.target);
  }
  const writable: string[] = [];
  const working: { path: string; writable: boolean }[] = [];
  for (const bind of policy.binds) {
    working.push({ path: bind.source, writable: bind.writable });
    (bind.writable ? writable : readable).push(bind.target);
  }
  // Masks are on the real paths the rules name (a link's target is what the policy masked too).
  const grants = landlockGrants([...system, ...working], policy.masks, fs);
  const args = ["--abi-min", String(wiring.abiMin ?? LANDLOCK_ABI_MIN), "--parent", String(wiring.parentPid), "--tmp", wiring.tmpRoot];
  if (wiring.seccompFd !== undefined) args.push("--seccomp-fd", String(wiring.seccompFd));
  if (policy.network) args.push("--net");
  for (const [name, value] of Object.entries(policy.env)) {
    // HOME and TMPDIR are the private directory's (the helper sets them).
    if (name !== "HOME" && name !== "TMPDIR") args.push("--env", `${name}=${value}`);
  }
  for (const grant of grants) args.push(grant.access === "write" ? "--rw" : grant.access === "read" ? "--ro" : "--list", grant.path);
  args.push("--", policy.executable, ...policy.args);
  return {
    args,
    report: {
      mechanism: "landlock",
      readable: [...layout.dirs.filter((dir) => dir.kind === "directory").map((dir) => dir.path), ...readable],
      writable: [`${wiring.tmpRoot}/ears-confine-*`, ...writable],
      masked: policy.masks.map((mask) => mask.path),
      network: policy.network,
      env: [...new Set([...Object.keys(policy.env), "TMPDIR"])],
      seccomp: wiring.seccompFd !== undefined,
      gaps: landlockGaps(policy.network),
    },
  };
}

/** The helper's self-test command line: does this kernel offer and enforce Landlock at the ABI asked for. */
export function selfTestArgs(abiMin: number = LANDLOCK_ABI_MIN): string[] {
  return ["--self-test", "--abi-min", String(abiMin)];
}

/** The ABI a passing self-test printed ("landlock-abi N ok"), or undefined. */
export function selfTestAbi(stdout: string): number | undefined {
  const match = /^landlock-abi (\d+) ok$/m.exec(stdout);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The helper's own failure in a finished run (an exit code of its own, no hello from the guest, its marked line on
 * stderr): why the guest never ran, or undefined.
 */
export function confineFailure(run: { exit?: { code: number | null }; hello?: unknown; stderr?: string }): string | undefined {
  const code = run.exit?.code;
  if (run.hello !== undefined || code === null || code === undefined || !Object.values(CONFINE_EXIT).includes(code as 120)) {
    return undefined;
  }
  const line = (run.stderr ?? "").split("\n").find((text) => text.startsWith(CONFINE_MARK));
  return line === undefined ? undefined : `the Landlock helper refused to start it: ${line.slice(CONFINE_MARK.length).trim()}`;
}
