/**
 * The escape suite (issue 9): a hostile guest (fixtures/hostile/escape.mjs) tries, with plain Node
 * APIs, to read secrets, list other users' folders, write outside its paths, read the host's
 * environment, reach a listener on 127.0.0.1 and see the host process. In the sandbox every attempt
 * fails while the wire (capabilities, logs, console capture, the result, the exit) works as before.
 * The same guest unconfined succeeds at every attempt, which proves the suite can fail.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Outcome } from "../../src/index.js";
import { runGuest, type RunReport } from "../../src/host/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";
import { canHideBubblewrap, withoutBubblewrap as hideBubblewrap } from "../helpers/no-bwrap.js";

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../", import.meta.url));
const escape = `${root}fixtures/hostile/escape.mjs`;
const tag = randomBytes(6).toString("hex");
const SECRET_ENV = `EARS_ESCAPE_SECRET_${tag}`;

interface Attempts {
  readSecret: string;
  readHomeSecret: string;
  readPasswd: string;
  listSslPrivate: string;
  listRoot: string;
  listHome: string;
  write: string[];
  env: string;
  envNames: string[];
  connect: string;
  seeHost: string;
  hostInProc: string;
  tmp: string;
  writable?: string;
}

describe.runIf(process.platform === "linux")("a hostile guest", () => {
  let outside: string;
  let writableDir: string;
  let homeSecret: string;
  let writeTargets: string[];
  let server: Server;
  let port: number;
  const received: string[] = [];

  beforeAll(async () => {
    outside = mkdtempSync(join(tmpdir(), "ears-escape-"));
    writableDir = mkdtempSync(join(tmpdir(), "ears-writable-"));
    writeFileSync(join(outside, "secret.txt"), "outside secret");
    homeSecret = join(homedir(), `.ears-escape-${tag}`);
    writeFileSync(homeSecret, "home secret", { mode: 0o600 });
    // Outside every sandbox path: the host's home, the (read-only) working directory, a host temp folder.
    writeTargets = [join(homedir(), `.ears-escape-write-${tag}`), join(root, `.ears-escape-write-${tag}`), join(outside, "written.txt")];
    process.env[SECRET_ENV] = "env secret";
    server = createServer((socket) => {
      socket.setEncoding("utf8").on("data", (data: string) => {
        received.push(data);
        socket.end("got it\n");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    delete process.env[SECRET_ENV];
    for (const path of [outside, writableDir, homeSecret, ...writeTargets]) rmSync(path, { recursive: true, force: true });
    await new Promise((resolve) => server.close(resolve));
  });

  function runEscape(sandbox: boolean | { writable: string[] }): Promise<RunReport> {
    return runGuest({
      command: process.execPath,
      args: [escape],
      cwd: root,
      sandbox,
      input: {
        secretFile: join(outside, "secret.txt"),
        homeSecret,
        writeTargets,
        writableDir,
        envName: SECRET_ENV,
        port,
        hostPid: process.pid,
      },
      capabilities: {
        list: () => Outcome.success("README.md", [{ name: "README.md", type: "file" }]),
        read: ({ path }: { path: string }) => readFileSync(join(root, path), "utf8"),
      } as never,
      killGraceMs: 500,
    });
  }

  function attemptsOf(report: RunReport): Attempts {
    expect(report.failure, report.stderr).toBeUndefined();
    return (report.outcome?.structured as unknown as { attempts: Attempts }).attempts;
  }

  it("fails at every escape in the sandbox, while the wire works as before", async () => {
    received.length = 0;
    const report = await runEscape({ writable: [writableDir] });
    const attempts = attemptsOf(report);
    expect(attempts.readSecret).toMatch(/^blocked: /);
    expect(attempts.readHomeSecret).toMatch(/^blocked: /);
    expect(attempts.readPasswd).toMatch(/^blocked: /);
    expect(attempts.listSslPrivate).toMatch(/^blocked: /);
    // /root and /home are not there, unless the host's Node lives under one (~/.cache/ears-node, ~/.nvm): then
    // they hold the way to that one binary and nothing else (test/host/sandbox/node-under-home.test.ts).
    const wayToNode = (home: string) =>
      process.execPath.startsWith(`${home}/`) ? `ok: ${process.execPath.slice(home.length + 1).split("/")[0]}` : /^blocked: /;
    expect(attempts.listRoot).toMatch(wayToNode("/root"));
    expect(attempts.listHome).toMatch(wayToNode("/home"));
    expect(attempts.write).toEqual(writeTargets.map(() => expect.stringMatching(/^blocked: (EROFS|ENOENT|EACCES)$/)));
    for (const path of writeTargets) expect(existsSync(path), path).toBe(false);
    expect(attempts.env).toBe("blocked: unset");
    // PWD: bubblewrap sets it to the working directory it changes to.
    expect(
      attempts.envNames.every((name) => ["HOME", "LANG", "PATH", "TZ", "PWD"].includes(name)),
      attempts.envNames.join(),
    ).toBe(true);
    expect(attempts.connect).toMatch(/^blocked: /);
    expect(received).toEqual([]);
    expect(attempts.seeHost).toBe("blocked: ESRCH");
    expect(attempts.hostInProc).toMatch(/^blocked: /);
    // What it may do: its private /tmp and its writable path (which the host sees).
    expect(attempts.tmp).toBe("ok: x");
    expect(attempts.writable).toBe("ok: written");
    expect(readFileSync(join(writableDir, "allowed.txt"), "utf8")).toBe("allowed");
    // The wire: capabilities, logs, console capture, the result and the exit.
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toMatchObject({
      listed: "success",
      readLength: readFileSync(join(root, "README.md"), "utf8").length,
    });
    expect(report.calls.map((call) => call.name)).toEqual(["list", "read"]);
    expect(report.logs.map(({ level, content }) => [level, content])).toEqual([
      ["info", "console works"],
      ["warn", "attempts done"],
    ]);
    expect(report.exit).toEqual({ code: 0, signal: null });
    expect(report.sandbox).toMatchObject({ mechanism: "bubblewrap", network: false, writable: ["/tmp", writableDir] });
  });

  it("succeeds at every escape with sandbox: false (the suite can fail)", async () => {
    received.length = 0;
    const report = await runEscape(false);
    const attempts = attemptsOf(report);
    expect(attempts.readSecret).toBe("ok: outside secret");
    expect(attempts.readHomeSecret).toBe("ok: home secret");
    expect(attempts.readPasswd).toMatch(/^ok: root:/);
    if (process.getuid?.() === 0 && existsSync("/etc/ssl/private")) expect(attempts.listSslPrivate).toMatch(/^ok: /);
    // /root is the host's home here when the tests run as root; another user is refused by the OS itself.
    expect(attempts.listRoot).toMatch(process.getuid?.() === 0 ? /^ok: / : /^blocked: EACCES$/);
    expect(attempts.listHome).toMatch(/^ok: /);
    expect(attempts.write).toEqual(writeTargets.map((path) => `ok: ${path}`));
    for (const path of writeTargets) expect(existsSync(path), path).toBe(true);
    expect(attempts.env).toBe("ok: env secret");
    expect(attempts.connect).toBe("ok: got it");
    expect(received).toEqual(["stolen data\n"]);
    expect(attempts.seeHost).toBe("ok: visible");
    expect(attempts.hostInProc).toMatch(/^ok: /);
    expect(report.ok).toBe(true);
    expect(report.sandbox).toBeNull();
    for (const path of writeTargets) rmSync(path, { force: true });
  });
});

describe.runIf(process.platform === "linux")("runGuest's sandbox options", () => {
  const probe = `${root}fixtures/hostile/probe.mjs`;
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-sandbox-options-"));
    writeFileSync(join(dir, "data.txt"), "readable data");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const runProbe = (sandbox: unknown, input: object, env?: NodeJS.ProcessEnv) =>
    runGuest({
      command: process.execPath,
      args: [probe],
      cwd: root,
      sandbox: sandbox as never,
      input: input as never,
      env,
      killGraceMs: 500,
    });

  it("readable: the guest reads the path but cannot write it", async () => {
    const report = await runProbe({ readable: [dir] }, { read: [join(dir, "data.txt")], write: [join(dir, "new.txt")] });
    expect(report.outcome?.structured).toMatchObject({ read: ["ok: readable data"], write: ["blocked: EROFS"] });
    expect(existsSync(join(dir, "new.txt"))).toBe(false);
    expect(report.sandbox?.readable).toContain(dir);
  });

  it("env: NAME passes the value from options.env, NAME=value sets one, nothing else passes", async () => {
    const report = await runProbe(
      { env: ["GIVEN", "SET=chosen value", "UNSET_ONE"] },
      { env: ["GIVEN", "SET", "UNSET_ONE", "OTHER", "HOME"] },
      {
        GIVEN: "from the host",
        OTHER: "not asked for",
        PATH: process.env.PATH,
      },
    );
    expect(report.outcome?.structured).toMatchObject({
      env: { GIVEN: "from the host", SET: "chosen value", UNSET_ONE: null, OTHER: null, HOME: "/tmp/home" },
    });
    expect(report.sandbox?.env).toEqual(["PATH", "HOME", "LANG", "PWD", "GIVEN", "SET"]);
  });

  it("network: true shares the host's network and says so; the default has none", async () => {
    const server = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const shared = await runProbe({ network: true }, { connect: port });
      expect(shared.outcome?.structured).toMatchObject({ connect: "ok: connected" });
      expect(shared.sandbox?.network).toBe(true);
      const isolated = await runProbe(true, { connect: port });
      // No IP socket at all without the network (the seccomp filter's socket families, issue 28.3).
      expect(isolated.outcome?.structured).toMatchObject({ connect: "blocked: EAFNOSUPPORT" });
      expect(isolated.sandbox?.network).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("refuses a writable path that does not exist: SandboxUnavailable, nothing started", async () => {
    const missing = join(dir, "missing");
    const report = await runProbe({ writable: [missing] }, {});
    expect(report.failure?.code).toBe("SandboxUnavailable");
    expect(report.failure?.message).toContain(JSON.stringify(missing));
    expect(report.pid).toBeUndefined();
    expect(report.sandbox).toBeNull();
  });

  it("throws synchronously on sandbox options it does not know, before starting anything", () => {
    const run = (sandbox: unknown) => () => runGuest({ command: process.execPath, sandbox: sandbox as never });
    expect(run("yes")).toThrow(TypeError);
    expect(run({ readable: "dir" })).toThrow(/sandbox\.readable must be an array/);
    expect(run({ network: "yes" })).toThrow(/sandbox\.network must be a boolean/);
    expect(run({ env: ["BAD NAME"] })).toThrow(/is not NAME or NAME=value/);
    expect(run({ writeable: [] })).toThrow(/unknown option sandbox\.writeable/);
  });
});

/**
 * Runs a runGuest call in a child Node whose PATH has node but no bwrap, in a mount namespace where the standard
 * places hold none either (test/helpers/no-bwrap.ts), and returns its reports.
 */
function withoutBubblewrap(landlock: boolean): Promise<{ required: RunReport; auto: RunReport; off: RunReport }> {
  const bin = mkdtempSync(join(tmpdir(), "ears-no-bwrap-"));
  // Paths as JavaScript string literals for the script.
  const echoGuest = JSON.stringify(`${root}fixtures/guests/echo.mjs`);
  const cwd = JSON.stringify(root);
  const script = `
    import { runGuest } from ${JSON.stringify(`${root}dist/host/index.js`)};
    const run = (sandbox) => runGuest({ command: "node", args: [${echoGuest}], cwd: ${cwd}, sandbox, capabilities: { read: () => "x" } });
    const [required, auto, off] = [await run(true), await run("auto"), await run(false)];
    process.stdout.write(JSON.stringify({ required, auto, off }));
  `;
  // Only node on PATH: the guest's "node" resolves, bwrap does not.
  symlinkSync(process.execPath, join(bin, "node"));
  const [command, ...prefix] = [...hideBubblewrap(mkdtempSync(join(bin, "hide-")), { landlock }), process.execPath];
  return new Promise((resolve, reject) => {
    execFile(command!, [...prefix, "--input-type=module", "-e", script], { env: { PATH: bin } }, (error, stdout) => {
      rmSync(bin, { recursive: true, force: true });
      if (error) reject(error);
      else resolve(JSON.parse(stdout));
    });
  });
}

describe.runIf(process.platform === "linux" && canHideBubblewrap)("runGuest without bubblewrap", () => {
  it("with the Landlock helper: true and auto run confined under Landlock; false: unconfined, no reason", async () => {
    const { required, auto, off } = await withoutBubblewrap(true);
    for (const report of [required, auto]) {
      expect(report.ok).toBe(true);
      expect(report.sandbox?.mechanism).toBe("landlock");
      expect(report.sandbox?.gaps).toEqual(expect.arrayContaining([expect.stringMatching(/^proc: /)]));
      expect(report.sandboxFallback).toBeUndefined();
    }
    expect(off.ok).toBe(true);
    expect(off.sandbox).toBeNull();
    expect(off.sandboxFallback).toBeUndefined();
  });

  // Issue 42: "auto" used to run unconfined here ("bubblewrap not installed").
  it("with neither mechanism: true and auto are both SandboxUnavailable with the fix, the guest never starts; false runs", async () => {
    const { required, auto, off } = await withoutBubblewrap(false);
    for (const report of [required, auto]) {
      expect(report.failure?.code).toBe("SandboxUnavailable");
      expect(report.failure?.message).toMatch(
        /no sandbox can start here: bubblewrap \(bwrap\) is not installed.*Landlock helper.*--no-sandbox/,
      );
      expect(report.pid).toBeUndefined();
      expect(report.hello).toBeUndefined();
      expect(report.sandboxFallback).toBeUndefined();
    }
    expect(off.ok).toBe(true);
    expect(off.sandbox).toBeNull();
  });
});
