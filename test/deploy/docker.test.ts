/**
 * docs/deploy.md's Docker recipe, for real: a dockerd of the test's own (test/deploy/docker.ts), an image
 * of this machine's node, bubblewrap, sh, sleep and mkfifo with this checkout's package installed under /app, run as
 * `--user 1000:1000` with `--network none`, Docker's default seccomp profile (nothing passed to change it)
 * and no added capability. Inside, the recipe's host (docs/deploy/host.mjs) and the attack host
 * (fixtures/attack-host.mjs) run bodies with runCode's defaults.
 *
 * Docker's default profile refuses the namespaces bubblewrap needs, so `sandbox: "auto"` confines the bodies
 * with Landlock (the ears-confine helper in the package's dist/native/), and every attack fails inside. A
 * "copy" session's runs work in a scratch copy there (RLIMIT_FSIZE per file, the watchdog over the total).
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKOUT, makeApp } from "./app.js";
import { assembleRoot, DOCKER, dockerMissing, importImage, startDaemon, type Daemon } from "./docker.js";
import { ATTACKS, expectBombsEnded, expectConfined, expectLandlockSession, type HostResult } from "./environments.js";
import { countReaches, goneWithin, killAllWith, liveWith, processTable, uniqueMarker } from "../helpers/processes.js";

const missing = dockerMissing();
const IMAGE = `ears-deploy-test:${process.pid}`;

describe.skipIf(missing !== undefined)(`the Docker recipe in a real dockerd${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let daemon: Daemon | undefined;
  let app: string | undefined;
  let root: string | undefined;
  let unstartable: string | undefined;

  beforeAll(async () => {
    try {
      daemon = await startDaemon();
    } catch (error) {
      unstartable = (error as Error).message;
      return;
    }
    app = makeApp();
    root = assembleRoot(["/usr/bin/node", "/usr/bin/bwrap", "/usr/bin/dash", "/usr/bin/sleep", "/usr/bin/env", "/usr/bin/mkfifo"], {
      [app]: "/app",
    });
    spawnSync("ln", ["-s", "dash", `${root}/usr/bin/sh`]);
    importImage(daemon, root, IMAGE, ["USER 1000:1000", "WORKDIR /app", "ENV PATH=/usr/bin:/bin"]);
  }, 240_000);

  afterAll(async () => {
    await daemon?.stop();
    for (const dir of [app, root]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** `docker run` as the recipe says: non-root, no network, the default seccomp profile, no added capability. */
  const run = (args: string[], input?: string) => {
    if (daemon === undefined) throw new Error(`dockerd could not start here: ${unstartable}`);
    return daemon.docker(["run", "--rm", "-i", "--network", "none", "--user", "1000:1000", IMAGE, ...args], input);
  };

  it("the container is what the recipe promises: uid 1000, Docker's seccomp filter, no capabilities, no user namespaces", () => {
    const status = run(["node", "-e", 'process.stdout.write(require("fs").readFileSync("/proc/self/status","utf8"))']);
    expect(status).toMatch(/^Uid:\s+1000\s/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
    expect(status).toMatch(/^CapEff:\s+0+$/m);
    // Docker's default profile refuses unshare(CLONE_NEWUSER) to a process without CAP_SYS_ADMIN.
    expect(() => run(["bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"])).toThrow(
      /bwrap: .*(Operation not permitted|No permissions|namespace)/i,
    );
  });

  it("docs/deploy's Dockerfile and pod spec ask for what this test runs: non-root, the default seccomp profile, nothing added", () => {
    const dockerfile = readFileSync(join(CHECKOUT, "docs", "deploy", "Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/^USER 1000:1000$/m);
    expect(dockerfile).toMatch(/apt-get install .*bubblewrap/);
    const pod = readFileSync(join(CHECKOUT, "docs", "deploy", "pod.yaml"), "utf8");
    for (const line of [
      "runAsNonRoot: true",
      "type: RuntimeDefault",
      "allowPrivilegeEscalation: false",
      'drop: ["ALL"]',
      "readOnlyRootFilesystem: true",
    ]) {
      expect(pod).toContain(line);
    }
    // What either would need to turn confinement off or widen it (comments aside).
    const settings = (text: string) => text.replace(/^\s*#.*$/gm, "");
    for (const text of [dockerfile, pod]) expect(settings(text)).not.toMatch(/privileged|unconfined|SYS_ADMIN|add:|hostPID|hostNetwork/);
  });

  it("the pod spec's settings under Docker (no_new_privs, no capability, read-only root, tmpfs /tmp): attacks fail, bombs ended", () => {
    if (daemon === undefined) throw new Error(`dockerd could not start here: ${unstartable}`);
    const out = daemon.docker([
      ...["run", "--rm", "--network", "none", "--user", "1000:1000", "--security-opt", "no-new-privileges", "--cap-drop", "ALL"],
      ...["--read-only", "--tmpfs", "/tmp:rw,size=512m", IMAGE, "node", "/app/attack-host.mjs", [...ATTACKS, "sessionBound"].join(",")],
    ]);
    const result = JSON.parse(out.trim()) as HostResult;
    expectConfined(result.runs, "landlock");
    expectBombsEnded(result.runs);
    expect(result.host).toEqual({ victimAlive: true, accepted: { tcp: 0, unix: 0 } });
    expectLandlockSession(result.sessionBound);
  });

  it("the recipe's host: a body the image can run unconfined (sandbox: false) gives its result, so the image is sound", () => {
    const code =
      'import { runCode } from "@posoco/ears/host"; const r = await runCode({ code: "return 6 * 7;", sandbox: false }); ' +
      "process.stdout.write(JSON.stringify(r.outcome));";
    const out = run(["node", "--input-type=module", "-e", code]);
    expect(JSON.parse(out)).toMatchObject({ status: "success", structured: 42 });
  });

  it("the recipe's host with runCode's defaults: the body runs, confined by Landlock", () => {
    const out = run(["node", "/app/host.mjs"], `${JSON.stringify({ code: "return 6 * 7;" })}\n`);
    const report = JSON.parse(out.trim()) as { ok: boolean; outcome?: { structured: unknown }; sandbox?: { mechanism: string } };
    expect(report).toMatchObject({ ok: true, outcome: { structured: 42 }, sandbox: { mechanism: "landlock" } });
  });

  it("every attack body in the container fails under Landlock; the bombs end as MemoryLimit and ProcessLimit; the host unharmed", () => {
    const out = run(["node", "/app/attack-host.mjs", [...ATTACKS, "sessionBound"].join(",")]);
    const result = JSON.parse(out.trim()) as HostResult;
    expect(result.uid).toBe(1000);
    expectConfined(result.runs, "landlock");
    // No cgroup a uid 1000 container can write: the launcher's rlimits and the host's watchdog end the bombs,
    // and tmpBytes bounds each file by RLIMIT_FSIZE (no private /tmp under Landlock).
    expectBombsEnded(result.runs);
    expect(result.runs.readOutside).toMatchObject({ limits: { tmpBytes: "rlimit" } });
    expect(result.host).toEqual({ victimAlive: true, accepted: { tcp: 0, unix: 0 } });
    // A session needs no mount (copy): its runs work in a scratch copy, two runs, the bounds, nothing planted kept.
    expectLandlockSession(result.sessionBound);
  });

  it("a host SIGKILLed in the container leaves no descendant: not even a body's detached child in a session of its own", async () => {
    if (daemon === undefined) throw new Error(`dockerd could not start here: ${unstartable}`);
    const marker = uniqueMarker();
    const name = `ears-orphan-${process.pid}`;
    try {
      // sh stays the container's first process, so the host can die alone and the container live on.
      daemon.docker([
        ...["run", "-d", "--name", name, "--network", "none", "--user", "1000:1000", "-e", `EARS_ORPHAN_MARKER=${marker}`, IMAGE],
        ...["sh", "-c", "node /app/attack-host.mjs orphan & wait"],
      ]);
      // The container's processes are this machine's: the body's child is seen from here once it started.
      expect(await countReaches(() => liveWith(marker).length, 1, 60_000)).toBe(1);
      const host = processTable().find((entry) => entry.command.startsWith("node /app/attack-host.mjs orphan"));
      expect(host).toBeDefined();
      process.kill(host!.pid, "SIGKILL");
      expect(await goneWithin(marker, 20_000)).toEqual([]);
    } finally {
      killAllWith(marker);
      spawnSync(DOCKER, ["rm", "-f", name], { env: daemon.env });
    }
  }, 120_000);
});
