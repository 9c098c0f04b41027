/**
 * docs/deploy.md's environment table, row by row: the attack host (a deployment's install, runCode with its
 * defaults) in each environment simulated on this machine. Where the body runs, it is confined and every
 * attack fails inside it; where no mechanism can confine it, every run is refused and nothing is reached;
 * either way the host's own process lives and no connection reaches its listeners.
 *
 * Rows that change with other work: without user namespaces, runs are refused today (bubblewrap cannot start)
 * and the Landlock mechanism (branch `landlock`) confines them instead; as non-root, memory and processes are
 * "not enforced" today and rlimits with a watchdog (branch `limits`) enforce them. The assertions naming
 * those states are the ones those merges change.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { CHECKOUT, makeApp } from "./app.js";
import { ATTACKS, runAttackHost, startOrphanRun as runOrphan, type HostResult, type RunSummary } from "./environments.js";
import { goneWithin, killAllWith, liveWith, uniqueMarker } from "../helpers/processes.js";

const root = process.platform === "linux" && process.getuid?.() === 0;
const runnable = root && bwrapPath !== undefined;

/** The attacks that fail inside a confined body, and what each body saw. */
function expectConfined(runs: Record<string, RunSummary>, mechanism: string): void {
  const seen = (name: string) => {
    const ran = runs[name]!;
    if ("skipped" in ran) throw new Error(`${name} was skipped: ${ran.skipped}`);
    expect(ran.mechanism, name).toBe(mechanism);
    return ran;
  };
  // Nothing outside the policy is there: the secret's directory does not exist inside.
  expect(seen("readOutside").structured).toEqual({ error: "ENOENT" });
  // The host's /proc entry is not there (its own PID namespace).
  expect(seen("hostEnviron").structured).toEqual({ error: "ENOENT" });
  // No network: the socket families are refused by the seccomp program.
  expect(seen("tcp").structured).toEqual({ error: "EAFNOSUPPORT" });
  // The host's unix socket, at depth in a directory the body is not shown.
  expect(seen("unixSocket").structured).toEqual({ error: "ENOENT" });
  // The host's process is not there to signal.
  expect(seen("signal").structured).toEqual({ error: "ESRCH" });
  // A setuid or setgid bit is refused; the file keeps its plain mode.
  expect(seen("setuid").structured).toMatchObject({ error: "EPERM" });
  expect(((seen("setuid").structured as { mode: number }).mode & 0o6000) === 0).toBe(true);
}

describe.skipIf(!runnable)("the deployment environments, simulated (root host with bubblewrap)", () => {
  let app: string;
  beforeAll(() => {
    app = makeApp();
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  const hostUnharmed = (result: HostResult) => expect(result.host).toEqual({ victimAlive: true, accepted: { tcp: 0, unix: 0 } });

  it("root: confined by bubblewrap, every attack fails, the memory bomb ends as MemoryLimit and the fork bomb is bounded", async () => {
    const result = await runAttackHost(app, "root", [...ATTACKS, "session"]);
    expectConfined(result.runs, "bubblewrap");
    const fork = result.runs.forkBomb as Extract<RunSummary, { ok: boolean }>;
    expect(fork.limits.processes).toBe("cgroup-v1");
    expect((fork.structured as { started: number; refused: string }).refused).toBe("EAGAIN");
    expect((fork.structured as { started: number }).started).toBeLessThan(256);
    expect(result.runs.memoryBomb).toMatchObject({ ok: false, failure: "MemoryLimit" });
    expect(result.session).toMatchObject({
      created: true,
      mechanism: "mount",
      kept: "seed+run",
      run: { ok: true, structured: { flood: "ENOSPC" } },
    });
    expect((result.session as { list: string[] }).list).toEqual(["kept.txt", "seed.txt"]);
    hostUnharmed(result);
  }, 240_000);

  it("non-root: confined by bubblewrap, every attack fails; memory and processes not enforced yet (no writable cgroup)", async () => {
    const result = await runAttackHost(app, "non-root", [...ATTACKS, "session"]);
    expect(result.uid).toBe(65534);
    expectConfined(result.runs, "bubblewrap");
    // What the limits branch changes: rlimits and a watchdog where no cgroup can be written.
    const first = result.runs.readOutside as Extract<RunSummary, { ok: boolean }>;
    expect(first.limits).toMatchObject({ memoryBytes: null, processes: null, tmpBytes: "bubblewrap" });
    expect(result.runs.memoryBomb).toEqual({ skipped: "memoryBytes not enforced here" });
    // Sessions without root: the workspace is a tmpfs inside the sandbox, copied in and out.
    expect(result.session).toMatchObject({
      created: true,
      mechanism: "copy",
      kept: "seed+run",
      run: { ok: true, structured: { flood: "ENOSPC" } },
    });
    expect((result.session as { list: string[] }).list).toEqual(["kept.txt", "seed.txt"]);
    hostUnharmed(result);
  }, 240_000);

  it("systemd service (non-root, no_new_privs, as docs/deploy/ears-host.service runs it): bubblewrap, sessions by copy", async () => {
    const result = await runAttackHost(app, "systemd service (non-root, no_new_privs)", [...ATTACKS, "session"]);
    expect(result.uid).toBe(65534);
    expectConfined(result.runs, "bubblewrap");
    expect(result.session).toMatchObject({
      created: true,
      mechanism: "copy",
      kept: "seed+run",
      run: { ok: true, structured: { flood: "ENOSPC" } },
    });
    hostUnharmed(result);
  }, 240_000);

  it.runIf(existsSync("/usr/bin/systemd-analyze"))(
    "docs/deploy/ears-host.service is a unit systemd accepts, with the settings docs/deploy.md promises",
    () => {
      const unit = join(CHECKOUT, "docs", "deploy", "ears-host.service");
      const verify = spawnSync("/usr/bin/systemd-analyze", ["verify", unit], { encoding: "utf8" });
      expect(verify.status, verify.stderr).toBe(0);
      const text = readFileSync(unit, "utf8");
      for (const line of ["NoNewPrivileges=yes", "Delegate=yes", "PrivateTmp=yes", "User=ears-host"]) expect(text).toContain(`\n${line}\n`);
      expect(text).not.toMatch(/^RestrictNamespaces=/m);
    },
  );

  for (const environment of ["root", "non-root", "systemd service (non-root, no_new_privs)"] as const) {
    it(`${environment}: a SIGKILLed host leaves no descendant, not even a body's detached child in a session of its own`, async () => {
      const marker = uniqueMarker();
      try {
        const host = await runOrphan(app, environment, marker);
        expect(liveWith(marker)).toHaveLength(1);
        host.kill("SIGKILL");
        expect(await goneWithin(marker, 20_000)).toEqual([]);
      } finally {
        killAllWith(marker);
      }
    }, 120_000);
  }

  for (const environment of ["no user namespaces (uid 0, no capabilities)", "no user namespaces (non-root)"] as const) {
    it(`${environment}: bubblewrap cannot start, so every body is refused, never run unconfined`, async () => {
      const result = await runAttackHost(app, environment, [...ATTACKS, "session"]);
      for (const name of ATTACKS) {
        const ran = result.runs[name]!;
        if ("skipped" in ran) continue; // the bombs: nothing enforced, nothing run
        // What the landlock branch changes: these runs are confined by Landlock instead.
        expect(ran, name).toMatchObject({ ok: false, failure: "SandboxUnavailable", mechanism: null });
        expect((ran as { message: string }).message).toMatch(/bubblewrap is installed but cannot create a sandbox here/);
      }
      expect(result.session).toMatchObject({ created: true, mechanism: "copy", run: { ok: false, failure: "SandboxUnavailable" } });
      hostUnharmed(result);
    }, 240_000);
  }
});
