/**
 * The deployment environments of docs/deploy.md, simulated on this machine: the attack host
 * (fixtures/attack-host.mjs) run as root, as an unprivileged uid (`setpriv`), and inside a bubblewrap without
 * user namespaces (`--disable-userns`: what Docker's default seccomp profile does to a container), as uid 0
 * without capabilities and as the unprivileged uid.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { expect } from "vitest";
import { processTable } from "../helpers/processes.js";

/** The attack bodies, in the order the host runs them (the bombs last: the host skips each where its limit is not enforced). */
export const ATTACKS = ["readOutside", "hostEnviron", "tcp", "unixSocket", "signal", "setuid", "forkBomb", "memoryBomb"] as const;

/** One run as the attack host summarises it. */
export type RunSummary =
  | {
      ok: boolean;
      failure: string | null;
      message: string | null;
      structured: Record<string, unknown> | null;
      thrown: string | null;
      mechanism: string | null;
      fallback: string | null;
      limits: Record<string, string | null>;
    }
  | { skipped: string };

/** What the attack host printed. */
export interface HostResult {
  uid: number;
  runs: Record<string, RunSummary>;
  session:
    | { created: true; mechanism: string | null; run: RunSummary; list: string[]; kept: string | null }
    | { created: false; error: string }
    | null;
  /** The "sessionBound" scenario (attack-host.mjs): a session's bounds and promises over three runs. */
  sessionBound: SessionBound | { created: false; error: string } | null;
  host: { victimAlive: boolean; accepted: { tcp: number; unix: number } };
}

/** What the attack host's "sessionBound" scenario saw. */
export interface SessionBound {
  created: true;
  mechanism: string | null;
  first: Extract<RunSummary, { ok: boolean }>;
  gaps: string[];
  afterFirst: string[];
  suidMode: number | null;
  second: Extract<RunSummary, { ok: boolean }>;
  flood: Extract<RunSummary, { ok: boolean }>;
  afterFlood: string[];
  keptAfterFlood: string;
}

/**
 * A session under Landlock (a "copy" one: no namespace, no mount), as docs/deploy.md promises it: a file kept from one
 * run to the next; a file past workspaceBytes refused inside the body with EFBIG (RLIMIT_FSIZE) and at most the bound
 * written; the session's own directory unwritable by the body (it works in a scratch copy); no link, FIFO or setuid
 * bit kept; a flood of small files past the total ended by the watchdog as WorkspaceNotKept naming workspaceBytes,
 * with the workspace as it was before that run.
 */
export function expectLandlockSession(seen: HostResult["sessionBound"]): void {
  expect(seen).toMatchObject({ created: true, mechanism: "copy" });
  const bound = seen as SessionBound;
  expect(bound.first).toMatchObject({ ok: true, mechanism: "landlock" });
  expect(bound.first.structured).toMatchObject({ big: "EFBIG", bigSize: 4 * 1024 * 1024, direct: "EACCES", inPlace: false });
  expect(bound.gaps).toHaveLength(1);
  expect(bound.afterFirst).toEqual(["kept.txt:file", "planted-suid:file"]);
  expect(bound.suidMode! & 0o7000).toBe(0);
  expect(bound.second).toMatchObject({ ok: true, structured: "first run" });
  expect(bound.flood).toMatchObject({ ok: false, failure: "WorkspaceNotKept", mechanism: "landlock" });
  expect(bound.flood.message).toMatch(
    /more than workspaceBytes \(4194304 bytes.*the host's watchdog ended it; nothing of the run was kept/,
  );
  expect(bound.afterFlood).toEqual(["kept.txt", "planted-suid"]);
  expect(bound.keptAfterFlood).toBe("first run");
}

/** An unprivileged uid and gid that exist on every Debian-like system (nobody, nogroup). */
export const NOBODY = 65534;

/** How the host is started in each environment (the command before `node attack-host.mjs`). */
export const ENVIRONMENTS = {
  root: [],
  "non-root": ["setpriv", "--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups"],
  // docs/deploy/ears-host.service's process: a system user of its own, NoNewPrivileges=yes.
  "systemd service (non-root, no_new_privs)": [
    "setpriv",
    "--reuid",
    String(NOBODY),
    "--regid",
    String(NOBODY),
    "--clear-groups",
    "--no-new-privs",
  ],
  "no user namespaces (uid 0, no capabilities)": [
    ...["bwrap", "--unshare-user", "--disable-userns", "--uid", "0", "--gid", "0"],
    ...["--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"],
  ],
  "no user namespaces (non-root)": [
    ...["setpriv", "--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups"],
    ...["bwrap", "--unshare-user", "--disable-userns", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--"],
  ],
} as const satisfies Record<string, readonly string[]>;

export type EnvironmentName = keyof typeof ENVIRONMENTS;

/** Runs the attack host of the install `app` in an environment; resolves with what it printed, rejects with its stderr. */
export function runAttackHost(app: string, environment: EnvironmentName, attacks: readonly string[]): Promise<HostResult> {
  const prefix: readonly string[] = ENVIRONMENTS[environment];
  const argv = [...prefix, process.execPath, join(app, "attack-host.mjs"), attacks.join(",")];
  return new Promise((done, fail) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: app,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, LANG: "C.UTF-8" },
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("error", fail);
    child.on("close", (code) => {
      if (code !== 0) return fail(new Error(`the attack host (${environment}) exited ${code}: ${err}`));
      try {
        done(JSON.parse(out.trim()) as HostResult);
      } catch {
        fail(new Error(`the attack host (${environment}) printed no result: ${out}${err}`));
      }
    });
  });
}

/**
 * Starts the attack host's "orphan" run (a body that leaves a detached `sleep MARKER` and waits; "orphanSession": the
 * same in a session's workspace) and resolves
 * once the body said it spawned it, with the pid of the host's own Node process (to SIGKILL: in the environments
 * started through bubblewrap, the process spawned here is bubblewrap) and the process spawned (to end after the
 * test); rejects with the host's output when it ends first.
 */
export function startOrphanRun(
  app: string,
  environment: EnvironmentName,
  marker: string,
  scenario: "orphan" | "orphanSession" = "orphan",
): Promise<{ host: number; started: ChildProcess }> {
  const prefix: readonly string[] = ENVIRONMENTS[environment];
  const argv = [...prefix, process.execPath, join(app, "attack-host.mjs"), scenario];
  const env = { PATH: process.env.PATH, LANG: "C.UTF-8", EARS_ORPHAN_MARKER: marker };
  const child = spawn(argv[0]!, argv.slice(1), { cwd: app, stdio: ["ignore", "pipe", "pipe"], env });
  return new Promise((done, fail) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (!out.includes("spawned\n")) return;
      const script = `${process.execPath} ${join(app, "attack-host.mjs")} ${scenario}`;
      const host = processTable().find((entry) => entry.command.trim() === script);
      if (host === undefined) fail(new Error(`the attack host (${environment}) said it spawned, but its process is not in /proc`));
      else done({ host: host.pid, started: child });
    });
    child.stderr!.resume();
    child.on("error", fail);
    child.on("close", () => fail(new Error(`the attack host (${environment}) ended before its body spawned: ${out}`)));
  });
}

/**
 * What each attack body saw inside a confined run, by mechanism: bubblewrap hides what is outside (its own
 * mount and PID namespaces), Landlock refuses it (EACCES on reads, EPERM on signals) and its seccomp program
 * refuses every socket but socketpair (EAFNOSUPPORT, host unix sockets included).
 */
const SEEN = {
  bubblewrap: {
    readOutside: { error: "ENOENT" },
    hostEnviron: { error: "ENOENT" },
    tcp: { error: "EAFNOSUPPORT" },
    unixSocket: { error: "ENOENT" },
    signal: { error: "ESRCH" },
  },
  landlock: {
    readOutside: { error: "EACCES" },
    hostEnviron: { error: "EACCES" },
    tcp: { error: "EAFNOSUPPORT" },
    unixSocket: { error: "EAFNOSUPPORT" },
    signal: { error: "EPERM" },
  },
} as const;

/** Every attack failed inside a body confined by `mechanism`. */
export function expectConfined(runs: Record<string, RunSummary>, mechanism: keyof typeof SEEN): void {
  const seen = (name: string) => {
    const ran = runs[name]!;
    if ("skipped" in ran) throw new Error(`${name} was skipped: ${ran.skipped}`);
    expect(ran.mechanism, name).toBe(mechanism);
    return ran;
  };
  for (const [name, structured] of Object.entries(SEEN[mechanism])) expect(seen(name).structured, name).toEqual(structured);
  // A setuid or setgid bit is refused (seccomp); the file keeps its plain mode.
  expect(seen("setuid").structured).toMatchObject({ error: "EPERM" });
  expect(((seen("setuid").structured as { mode: number }).mode & 0o6000) === 0).toBe(true);
}

/**
 * The bombs where no cgroup can be written (non-root, or a container's user): memory and processes are
 * enforced by the launcher's rlimits with the host's watchdog over the run's tree (`report.limits` says
 * "rlimit+watchdog"); the memory bomb ends as MemoryLimit (RLIMIT_DATA refuses its allocation), the fork bomb
 * as ProcessLimit (the watchdog counts the tree past 256 and kills it).
 */
export function expectBombsEnded(runs: Record<string, RunSummary>): void {
  for (const name of ["memoryBomb", "forkBomb"]) {
    const ran = runs[name]!;
    if ("skipped" in ran) throw new Error(`${name} was skipped: ${ran.skipped}`);
    expect(ran.limits, name).toMatchObject({ memoryBytes: "rlimit+watchdog", processes: "rlimit+watchdog" });
  }
  expect(runs.memoryBomb).toMatchObject({
    ok: false,
    failure: "MemoryLimit",
    // The watchdog's resident-memory sum, or the RLIMIT_DATA backstop refusing an allocation: either names the limit.
    message: expect.stringMatching(/memory limit of .*limits\.memoryBytes/),
  });
  expect(runs.forkBomb).toMatchObject({ ok: false, failure: "ProcessLimit" });
}
