/**
 * docs/deploy.md's environment table, row by row: the attack host (a deployment's install, runCode with its
 * defaults) in each environment simulated on this machine. Where the body runs, it is confined and every
 * attack fails inside it; where no mechanism can confine it, every run is refused and nothing is reached;
 * either way the host's own process lives and no connection reaches its listeners.
 *
 * Without user namespaces bubblewrap cannot start and Landlock confines the bodies (the ears-confine helper).
 * Where no cgroup can be written (non-root), memory and processes are enforced by the launcher's rlimits and
 * the host's watchdog: the memory bomb ends as MemoryLimit, the fork bomb as ProcessLimit. As root, cgroups.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { CHECKOUT, makeApp } from "./app.js";
import {
  ATTACKS,
  ENVIRONMENTS,
  expectBombsEnded,
  expectConfined,
  expectLandlockSession,
  runAttackHost,
  startOrphanRun as runOrphan,
  type EnvironmentName,
  type HostResult,
  type RunSummary,
} from "./environments.js";
import { goneWithin, killAllWith, liveWith, uniqueMarker } from "../helpers/processes.js";

const root = process.platform === "linux" && process.getuid?.() === 0;
const runnable = root && bwrapPath !== undefined;

describe.skipIf(!runnable)("the deployment environments, simulated (root host with bubblewrap)", () => {
  let app: string;
  beforeAll(() => {
    app = makeApp();
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  const hostUnharmed = (result: HostResult) => expect(result.host).toEqual({ victimAlive: true, accepted: { tcp: 0, unix: 0 } });
  /** The attack host's session, made by `mechanism`: a file kept from one run to the next, a flood ended by ENOSPC. */
  const sessionKept = (result: HostResult, mechanism: "mount" | "copy") =>
    expect(result.session).toMatchObject({
      created: true,
      mechanism,
      kept: "seed+run",
      run: { ok: true, structured: { flood: "ENOSPC" } },
    });
  /** The host SIGKILLed while its body's detached child (in a session's workspace for "orphanSession") lives: nothing of it is left. */
  const sigkillLeavesNoDescendant = async (environment: EnvironmentName, scenario?: "orphanSession") => {
    const marker = uniqueMarker();
    try {
      const { host, started } = await runOrphan(app, environment, marker, scenario);
      try {
        expect(liveWith(marker)).toHaveLength(1);
        process.kill(host, "SIGKILL");
        expect(await goneWithin(marker, 20_000)).toEqual([]);
      } finally {
        started.kill("SIGKILL");
      }
    } finally {
      killAllWith(marker);
    }
  };

  it("root: confined by bubblewrap, every attack fails, the memory bomb ends as MemoryLimit and the fork bomb is bounded", async () => {
    const result = await runAttackHost(app, "root", [...ATTACKS, "session"]);
    expectConfined(result.runs, "bubblewrap");
    const fork = result.runs.forkBomb as Extract<RunSummary, { ok: boolean }>;
    expect(fork.limits.processes).toBe("cgroup-v1");
    expect((fork.structured as { started: number; refused: string }).refused).toBe("EAGAIN");
    expect((fork.structured as { started: number }).started).toBeLessThan(256);
    expect(result.runs.memoryBomb).toMatchObject({ ok: false, failure: "MemoryLimit" });
    sessionKept(result, "mount");
    expect((result.session as { list: string[] }).list).toEqual(["kept.txt", "seed.txt"]);
    hostUnharmed(result);
  }, 240_000);

  it("non-root: bubblewrap, every attack fails; rlimits and the watchdog end the bombs as MemoryLimit and ProcessLimit", async () => {
    const result = await runAttackHost(app, "non-root", [...ATTACKS, "session"]);
    expect(result.uid).toBe(65534);
    expectConfined(result.runs, "bubblewrap");
    // No cgroup this uid can write: the launcher's rlimits and the host's watchdog; /tmp by bubblewrap's tmpfs.
    const first = result.runs.readOutside as Extract<RunSummary, { ok: boolean }>;
    expect(first.limits).toMatchObject({ memoryBytes: "rlimit+watchdog", processes: "rlimit+watchdog", tmpBytes: "bubblewrap" });
    expectBombsEnded(result.runs);
    // Sessions without root: the workspace is a tmpfs inside the sandbox, copied in and out.
    sessionKept(result, "copy");
    expect((result.session as { list: string[] }).list).toEqual(["kept.txt", "seed.txt"]);
    hostUnharmed(result);
  }, 240_000);

  it("systemd service (non-root, no_new_privs, as docs/deploy/ears-host.service runs it): bombs ended, sessions by copy", async () => {
    const result = await runAttackHost(app, "systemd service (non-root, no_new_privs)", [...ATTACKS, "session"]);
    expect(result.uid).toBe(65534);
    expectConfined(result.runs, "bubblewrap");
    expectBombsEnded(result.runs);
    sessionKept(result, "copy");
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

  for (const environment of Object.keys(ENVIRONMENTS) as EnvironmentName[]) {
    it(
      `${environment}: a SIGKILLed host leaves no descendant, not even a body's detached child in a session of its own`,
      () => sigkillLeavesNoDescendant(environment),
      120_000,
    );
  }

  it("no user namespaces (uid 0, no capabilities): cgroups end the memory bomb as MemoryLimit, refuse the fork bomb EAGAIN", async () => {
    const result = await runAttackHost(app, "no user namespaces (uid 0, no capabilities)", ["readOutside", "forkBomb", "memoryBomb"]);
    expect(result.uid).toBe(0);
    const first = result.runs.readOutside as Extract<RunSummary, { ok: boolean }>;
    // Without a private /tmp (Landlock), tmpBytes bounds each file by RLIMIT_FSIZE.
    expect(first).toMatchObject({
      mechanism: "landlock",
      limits: { memoryBytes: "cgroup-v1", processes: "cgroup-v1", tmpBytes: "rlimit" },
    });
    const fork = result.runs.forkBomb as Extract<RunSummary, { ok: boolean }>;
    expect(fork.structured).toMatchObject({ refused: "EAGAIN" });
    expect((fork.structured as { started: number }).started).toBeLessThan(256);
    expect(result.runs.memoryBomb).toMatchObject({ ok: false, failure: "MemoryLimit", mechanism: "landlock" });
    hostUnharmed(result);
  }, 240_000);

  it("no user namespaces (non-root): rlimits and the watchdog end the bombs as MemoryLimit and ProcessLimit", async () => {
    const result = await runAttackHost(app, "no user namespaces (non-root)", ["readOutside", "forkBomb", "memoryBomb"]);
    expect(result.uid).toBe(65534);
    expect(result.runs.readOutside).toMatchObject({ mechanism: "landlock", limits: { tmpBytes: "rlimit" } });
    expectBombsEnded(result.runs);
    expect(result.runs.memoryBomb).toMatchObject({ mechanism: "landlock" });
    hostUnharmed(result);
  }, 240_000);

  for (const environment of ["no user namespaces (uid 0, no capabilities)", "no user namespaces (non-root)"] as const) {
    it(`${environment}: bubblewrap cannot start, so the bodies are confined by Landlock and every attack fails`, async () => {
      const result = await runAttackHost(app, environment, [...ATTACKS.filter((name) => !name.endsWith("Bomb")), "sessionBound"]);
      expectConfined(result.runs, "landlock");
      // Sessions too: the runs work in a scratch copy bounded by RLIMIT_FSIZE and the watchdog (see expectLandlockSession).
      expectLandlockSession(result.sessionBound);
      hostUnharmed(result);
    }, 240_000);

    it(
      `${environment}: a SIGKILLed host leaves no descendant of a session's run under Landlock`,
      () => sigkillLeavesNoDescendant(environment, "orphanSession"),
      120_000,
    );
  }
});
