/**
 * The sandbox's attacks under Landlock, run for real by a host (fixtures/hostile/landlock-host.mjs) in each place a
 * host is deployed, simulated here: root with mechanism "landlock"; an unprivileged uid (setpriv, from a copy of the
 * package in a directory that uid can reach, made by the test: the checkout may be under a 0700 directory); and no
 * user namespaces (`bwrap --unshare-user --disable-userns`, as Docker's default seccomp profile does), as uid 0
 * without capabilities and as another uid, where "auto" must find bubblewrap unable to start and pick Landlock.
 * The same body unconfined gets through every attempt, which proves each can succeed. Then a SIGKILLed host.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { hasLandlock } from "../../helpers/landlock.js";
import { isAlive } from "../../helpers/processes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync("sh", ["-c", "command -v setpriv"]).status === 0;
const node = realpathSync(process.execPath);
const SECRET_ENV = { EARS_LL_SECRET: "host-env-secret" };

interface Line {
  uid: number;
  failure: { code: string; message: string } | null;
  mechanism: string | null;
  gaps: string[] | null;
  attempts: Record<string, string> | null;
  victimAlive: boolean;
  orphanAlive: boolean;
  plantedMode: string;
  stderr: string;
}

/** Runs the attack host with `prefix` before node; its one JSON line. */
function attack(prefix: string[], fixture: string, sandbox: unknown, cwd: string): Promise<Line> {
  return new Promise((resolve, reject) => {
    const [command, ...args] = [...prefix, node, fixture, JSON.stringify(sandbox)];
    const host = spawn(command!, args, {
      cwd,
      env: { PATH: process.env.PATH, TMPDIR: "/tmp", ...SECRET_ENV },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    host.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    host.stderr.setEncoding("utf8").on("data", (text: string) => (err += text));
    host.on("error", reject);
    host.on("close", (code) => {
      try {
        resolve(JSON.parse(out) as Line);
      } catch {
        reject(new Error(`the attack host exited ${code}: ${err}${out}`));
      }
    });
  });
}

/** What every confined run must show: each attempt refused but the ones on its own paths, nothing left behind. */
function expectConfined(line: Line): void {
  expect(line.failure, line.stderr).toBeNull();
  expect(line.mechanism).toBe("landlock");
  expect(line.gaps?.map((gap) => gap.slice(0, gap.indexOf(":")))).toEqual(["proc", "tmp", "masks", "network", "uid"]);
  expect(line.attempts).toEqual({
    shown: "ok: shown",
    outside: "blocked: EACCES",
    secret: "blocked: EACCES",
    passwd: "blocked: EACCES",
    hostEnv: "blocked: EACCES",
    hostRoot: "blocked: EACCES",
    tmp: "blocked: EACCES",
    writeOutside: "blocked: EACCES",
    writeOut: "ok: undefined",
    // seccomp refuses the socket before Landlock would refuse the TCP connect (landlock-helper.test.ts shows that layer).
    tcp: "blocked: EAFNOSUPPORT",
    deepSocket: "blocked: EAFNOSUPPORT",
    outsideSocket: "blocked: EAFNOSUPPORT",
    killVictim: "blocked: EPERM",
    signalHost: "blocked: EPERM",
    setuid: "blocked: EPERM",
    setuidShell: expect.stringMatching(/Operation not permitted\n644$/),
    capabilities: "ok: 0000000000000000",
  });
  expect(line.victimAlive).toBe(true);
  expect(line.orphanAlive).toBe(false);
  expect(line.plantedMode).toBe("644");
}

describe.runIf(process.platform === "linux" && hasLandlock)("attacks under Landlock", () => {
  /** A copy of the package (package.json, dist, the fixture) that another uid can read, made by this test. */
  let copy: string;
  let copiedFixture: string;
  const fixture = join(root, "fixtures/hostile/landlock-host.mjs");
  beforeAll(() => {
    copy = realpathSync(mkdtempSync(join(tmpdir(), "ears-ll-pkg-")));
    chmodSync(copy, 0o755);
    cpSync(join(root, "package.json"), join(copy, "package.json"));
    cpSync(join(root, "dist"), join(copy, "dist"), { recursive: true });
    // runCode strips TypeScript with amaro, an optional peer.
    cpSync(join(root, "node_modules/amaro"), join(copy, "node_modules/amaro"), { recursive: true });
    mkdirSync(join(copy, "fixtures/hostile"), { recursive: true });
    copiedFixture = join(copy, "fixtures/hostile/landlock-host.mjs");
    cpSync(fixture, copiedFixture);
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it("unconfined (sandbox: false), every attempt gets through: the suite can fail", async () => {
    const line = await attack([], fixture, false, root);
    expect(line.mechanism).toBeNull();
    expect(line.attempts).toMatchObject({
      outside: "ok: outside secret",
      secret: "ok: API_KEY=project-secret",
      hostEnv: "ok: true",
      tcp: "ok: tcp-secret",
      deepSocket: "ok: unix-secret",
      outsideSocket: "ok: unix-secret",
      killVictim: "ok: true",
      signalHost: "ok: true",
    });
    expect(line.victimAlive).toBe(false);
  }, 120_000);

  it.runIf(isRoot)(
    "as root, mechanism landlock",
    async () => {
      const line = await attack([], fixture, { mechanism: "landlock" }, root);
      expect(line.uid).toBe(0);
      expectConfined(line);
    },
    120_000,
  );

  it.runIf(isRoot && hasSetpriv)(
    "as an unprivileged uid (setpriv 65534), mechanism landlock",
    async () => {
      const line = await attack(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"],
        copiedFixture,
        { mechanism: "landlock" },
        copy,
      );
      expect(line.uid).toBe(65534);
      expectConfined(line);
    },
    120_000,
  );

  const noUserns = (uid: number) => [
    bwrapPath!,
    "--unshare-user",
    "--disable-userns",
    "--uid",
    String(uid),
    "--gid",
    String(uid),
    "--bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--",
  ];
  it.runIf(bwrapPath !== undefined)(
    "without user namespaces, as uid 0 without capabilities: auto finds bubblewrap unable to start and picks Landlock",
    async () => {
      const line = await attack(noUserns(0), fixture, {}, root);
      expect(line.uid).toBe(0);
      expectConfined(line);
    },
    120_000,
  );

  it.runIf(bwrapPath !== undefined && isRoot)(
    "without user namespaces, as another uid: auto picks Landlock",
    async () => {
      const line = await attack(noUserns(65534), copiedFixture, {}, copy);
      expect(line.uid).toBe(65534);
      expectConfined(line);
    },
    120_000,
  );

  it("a SIGKILLed host leaves no descendant: the helper sees its parent go and ends the run's whole tree", async () => {
    const host = spawn(node, [fixture, JSON.stringify({ mechanism: "landlock" }), "orphan"], {
      cwd: root,
      env: { PATH: process.env.PATH, TMPDIR: "/tmp" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    host.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    try {
      const pidFile = await until(() => (out.includes("\n") ? (JSON.parse(out) as { pidFile: string }).pidFile : undefined));
      const orphan = Number(await until(() => (existsSync(pidFile!) ? readFileSync(pidFile!, "utf8").trim() || undefined : undefined)));
      expect(isAlive(orphan)).toBe(true);
      host.kill("SIGKILL");
      expect(await until(() => (isAlive(orphan) ? undefined : true))).toBe(true);
      rmSync(join(pidFile!, "../.."), { recursive: true, force: true });
    } finally {
      // A failed look above must not leave the host (and so the run it waits on) running.
      host.kill("SIGKILL");
    }
  }, 120_000);
});

/** `check`'s first defined answer, looking every 20 ms for at most 60 s (a bound, not a timing assertion). */
async function until<T>(check: () => T | undefined): Promise<T | undefined> {
  for (const end = Date.now() + 60_000; Date.now() < end;) {
    const value = check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}
