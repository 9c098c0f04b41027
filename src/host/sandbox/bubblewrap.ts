/**
 * Linux: confine the guest with bubblewrap (`bwrap`, the OS package `bubblewrap`), called directly.
 * The sandbox gets its own mount, PID, network (unless `network`), IPC, UTS and user namespaces, a new
 * session, no capabilities, and dies with the host (`--die-with-parent`). Its file system is built from
 * nothing: the system directories needed to start a program (read-only), /proc, a minimal /dev, a
 * private /tmp, and the policy's binds.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import { SANDBOX_HOME, type SandboxPolicy } from "./policy.js";
import type { SandboxMechanism, SandboxReport } from "./types.js";

/** Read-only system directories (or the links merged-/usr systems have in their place). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/**
 * The pieces of /etc a program needs to start and behave: the loader's cache, time zone, public TLS
 * certificates (Debian and Red Hat layouts; never /etc/ssl/private), Debian's alternatives links.
 * Not /etc/passwd, /etc/hostname or anything else.
 */
const SYSTEM_ETC = [
  "/etc/ld.so.cache",
  "/etc/localtime",
  "/etc/ssl/certs",
  "/etc/ssl/openssl.cnf",
  "/etc/pki/tls/certs",
  "/etc/pki/ca-trust/extracted",
  "/etc/alternatives",
];
/** Name resolution, only with `network: true`. */
const NETWORK_ETC = ["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf"];
/** How long the one-time probe may take before bubblewrap counts as unusable. */
const PROBE_TIMEOUT_MS = 5000;

/** The `bwrap` executable on this process's PATH, or undefined. */
export function findBwrap(path = process.env.PATH): string | undefined {
  for (const dir of (path ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, "bwrap");
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * Starts bwrap once with every namespace the real sandbox uses and runs `bwrap --version` inside it.
 * Resolves with undefined when that works, else with the reason (bwrap missing, or its error, e.g. no
 * user namespaces). Never rejects.
 */
export function probeBubblewrap(): Promise<string | undefined> {
  const bwrap = findBwrap();
  if (bwrap === undefined) return Promise.resolve("bubblewrap (bwrap) is not installed; install the OS package bubblewrap");
  return new Promise((resolve) => {
    let stderr = "";
    let settled = false;
    const done = (reason: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(reason);
    };
    const child = spawn(
      bwrap,
      [
        "--ro-bind",
        "/",
        "/",
        "--unshare-all",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--",
        bwrap,
        "--version",
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: {} },
    );
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      done(`bubblewrap did not start a sandbox within ${PROBE_TIMEOUT_MS} ms`);
    }, PROBE_TIMEOUT_MS);
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => done(`bubblewrap could not be started: ${error.message}`));
    child.on("close", (code, signal) => {
      if (code === 0) return done(undefined);
      const why = stderr.trim().split("\n")[0] || (signal !== null ? `signal ${signal}` : `exit code ${code}`);
      done(`bubblewrap cannot create a sandbox here (${why}); user namespaces may be disabled`);
    });
  });
}

/** The bwrap command line that runs `policy`, and what the report says about it. */
export function bubblewrapCommand(bwrap: string, policy: SandboxPolicy): { command: string; args: string[]; report: SandboxReport } {
  const args: string[] = ["--unshare-all"];
  if (policy.network) args.push("--share-net");
  args.push("--die-with-parent", "--new-session", "--cap-drop", "ALL");
  const readable: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    const kind = kindOf(dir);
    if (kind === "link") args.push("--symlink", readlinkSync(dir), dir);
    else if (kind === "directory") {
      args.push("--ro-bind", dir, dir);
      readable.push(dir);
    }
  }
  for (const path of policy.network ? [...SYSTEM_ETC, ...NETWORK_ETC] : SYSTEM_ETC) {
    if (kindOf(path) === undefined) continue;
    args.push("--ro-bind", path, path);
    readable.push(path);
  }
  for (const bind of policy.executableBinds) {
    if (SYSTEM_DIRS.some((dir) => bind.target.startsWith(`${dir}/`))) continue;
    args.push("--ro-bind", bind.source, bind.target);
    readable.push(bind.target);
  }
  args.push("--proc", "/proc", "--dev", "/dev");
  // --size applies to the --tmpfs right after it (bubblewrap >= 0.5): writes past it fail with ENOSPC.
  if (policy.tmpBytes !== undefined) args.push("--size", String(policy.tmpBytes));
  args.push("--tmpfs", "/tmp", "--dir", SANDBOX_HOME);
  const writable = ["/tmp"];
  for (const bind of policy.binds) {
    args.push(bind.writable ? "--bind" : "--ro-bind", bind.source, bind.target);
    (bind.writable ? writable : readable).push(bind.target);
  }
  args.push("--chdir", policy.cwd, "--", policy.executable, ...policy.args);
  return {
    command: bwrap,
    args,
    report: { mechanism: "bubblewrap", readable, writable, network: policy.network, env: Object.keys(policy.env) },
  };
}

function kindOf(path: string): "link" | "directory" | "file" | undefined {
  try {
    const stat = lstatSync(path);
    return stat.isSymbolicLink() ? "link" : stat.isDirectory() ? "directory" : "file";
  } catch {
    return undefined;
  }
}

/** Linux's mechanism. */
export const bubblewrap: SandboxMechanism = {
  probe: probeBubblewrap,
  command(policy) {
    const bwrap = findBwrap();
    if (bwrap === undefined) throw new Error("bubblewrap (bwrap) is no longer on PATH");
    return bubblewrapCommand(bwrap, policy);
  },
};
