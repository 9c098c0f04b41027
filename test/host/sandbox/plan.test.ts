/**
 * The sandbox seam in-process: checking the `sandbox` option, deciding how a run starts (confined,
 * unconfined only where there is no sandbox to have, refused), starting bubblewrap with its filter on
 * fd 3, and the real file system view the policy reads. Real bwrap, where installed (CI has it).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeFileSystem } from "../../../src/host/sandbox/file-system-view.js";
import {
  forgetSandboxStart,
  hostPlaces,
  locateSandbox,
  planSandbox,
  sandboxMissing,
  sandboxRequest,
  sandboxStartProblem,
  SANDBOX_INFO_FD,
  SECCOMP_FD,
  spawnConfined,
  type ConfinedPlan,
} from "../../../src/host/sandbox/index.js";
import { FakeFileSystem } from "./fake-file-system.js";
import { guestHoldsOutput } from "../../../src/host/sandbox/output-watch.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { killAllWith, liveWith, uniqueMarker } from "../../helpers/processes.js";

const hasBwrap = bwrapPath !== undefined;
const NOT_INSTALLED =
  "bubblewrap (bwrap) is not installed (not on PATH, nor in /usr/local/bin, /usr/bin, /bin); install the OS package bubblewrap";

describe("the sandbox option", () => {
  it("maps auto, true, false and an options object to a mode; an object is required", () => {
    expect(sandboxRequest(undefined, "f")).toEqual({ mode: "auto", options: {} });
    expect(sandboxRequest("auto", "f")).toEqual({ mode: "auto", options: {} });
    expect(sandboxRequest(true, "f")).toEqual({ mode: "required", options: {} });
    expect(sandboxRequest(false, "f")).toEqual({ mode: "off", options: {} });
    expect(sandboxRequest({ network: true }, "f")).toEqual({ mode: "required", options: { network: true } });
  });

  it("throws a TypeError naming the caller and the option for anything else", () => {
    for (const bad of ["yes", 1, null, [], () => 1])
      expect(() => sandboxRequest(bad, "runCode")).toThrow(/^runCode: options\.sandbox must be/);
    expect(() => sandboxRequest({ nope: 1 }, "runGuest")).toThrow("runGuest: unknown option sandbox.nope");
    expect(() => sandboxRequest({ readable: "a" }, "runGuest")).toThrow("options.sandbox.readable must be an array of non-empty strings");
    expect(() => sandboxRequest({ writable: [""] }, "runGuest")).toThrow("options.sandbox.writable must be");
    expect(() => sandboxRequest({ env: ["a\0"] }, "runGuest")).toThrow("options.sandbox.env must be");
    expect(() => sandboxRequest({ env: ["1X"] }, "runGuest")).toThrow(/sandbox\.env entry "1X" is not NAME or NAME=value/);
    for (const key of ["network", "showSecrets", "allowBroadPaths"]) {
      expect(() => sandboxRequest({ [key]: "true" }, "runGuest")).toThrow(`options.sandbox.${key} must be a boolean`);
      expect(sandboxRequest({ [key]: false }, "runGuest").mode).toBe("required");
    }
  });

  it("knows where nothing can be had: no bubblewrap on PATH nor in the standard places", () => {
    const none = new FakeFileSystem({ "/usr/bin/": "" });
    expect(sandboxMissing("/nonexistent", none)).toBe(NOT_INSTALLED);
    const installed = new FakeFileSystem({ "/usr/bin/bwrap": { kind: "file", executable: true } });
    expect(sandboxMissing("/usr/local/bin", installed)).toBeUndefined();
  });

  // On Linux "auto" never runs a guest unconfined: with neither mechanism the run is refused with both reasons and the fix.
  it.runIf(process.platform === "linux")(
    "without bubblewrap nor the Landlock helper: auto and required are both refused, saying why and what to do",
    async () => {
      const launch = { command: "/bin/sh", args: [], cwd: tmpdir(), env: {} };
      const lookup = new FakeFileSystem({ "/usr/bin/": "" });
      for (const mode of ["auto", "required"] as const) {
        const plan = await planSandbox({ mode, options: {} }, launch, { lookup });
        expect(plan.kind).toBe("unavailable");
        const { reason } = plan as { reason: string };
        expect(reason).toContain(`no sandbox can start here: ${NOT_INSTALLED}; and the Landlock helper (dist/native/ears-confine-linux-`);
        expect(reason).toContain("or pass sandbox: false (--no-sandbox) to run the guest unconfined");
      }
      // Asked for by name, each mechanism's own reason.
      expect(await planSandbox({ mode: "required", options: { mechanism: "bubblewrap" } }, launch, { lookup })).toEqual({
        kind: "unavailable",
        reason: NOT_INSTALLED,
      });
      const landlock = await planSandbox({ mode: "required", options: { mechanism: "landlock" } }, launch, { lookup });
      expect(landlock).toMatchObject({
        kind: "unavailable",
        reason: expect.stringMatching(/is missing .*; sandbox.mechanism "landlock" was asked for$/),
      });
    },
  );

  // Was a hole (28.5): a bwrap that is there but cannot be run counted as "not installed", and "auto" ran unconfined.
  it.runIf(process.platform === "linux")("a bubblewrap installed but unusable is never a reason to run unconfined", async () => {
    const launch = { command: "/bin/sh", args: [], cwd: tmpdir(), env: {} };
    const lookup = new FakeFileSystem({ "/usr/bin/bwrap": "not executable" });
    const reason = "bubblewrap is installed at /usr/bin/bwrap but is not an executable file; reinstall the OS package bubblewrap";
    for (const mode of ["auto", "required"] as const) {
      expect(await planSandbox({ mode, options: {} }, launch, { lookup })).toMatchObject({
        kind: "unavailable",
        reason: expect.stringContaining(`no sandbox can start here: ${reason}; and `),
      });
    }
    expect(await planSandbox({ mode: "auto", options: { mechanism: "bubblewrap" } }, launch, { lookup })).toEqual({
      kind: "unavailable",
      reason,
    });
    expect(locateSandbox("", lookup)).toEqual({ unusable: reason });
    expect(sandboxMissing("", lookup)).toBeUndefined();
  });

  it("lists the homes and temporary roots as too broad to show", () => {
    const places = hostPlaces({ HOME: "/home/x" });
    expect(places.homes).toContain("/home/x");
    expect(places.temporaryRoots).toEqual(expect.arrayContaining([tmpdir(), "/tmp"]));
    expect(hostPlaces({}).homes.length).toBe(1);
  });
});

describe.runIf(hasBwrap)("planning a run with bubblewrap", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-plan-")));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const launch = (cwd: string, command = process.execPath) => ({ command, args: ["-e", "0"], cwd, env: { PATH: process.env.PATH } });

  it("off: unconfined, no reason; required and auto: confined, with the seccomp filter and an empty environment for bwrap", async () => {
    expect(await planSandbox({ mode: "off", options: {} }, launch(base))).toEqual({ kind: "unconfined" });
    for (const mode of ["auto", "required"] as const) {
      const plan = await planSandbox({ mode, options: {} }, launch(base), { tmpBytes: 4096 });
      expect(plan.kind).toBe("confined");
      const confined = plan as ConfinedPlan;
      expect(confined.command).toMatch(/bwrap$/);
      expect(confined.args).toEqual(expect.arrayContaining(["--seccomp", String(SECCOMP_FD), "--size", "4096", "--clearenv"]));
      expect(confined.seccomp?.length).toBeGreaterThan(100);
      expect(confined.report.seccomp).toBe(true);
      expect(Object.keys(confined.env)).toEqual(["PATH", "HOME", "LANG", "PWD"]);
    }
  });

  it("refuses a policy it cannot build (missing or broad path), and a command it cannot find is a spawn failure", async () => {
    const missing = await planSandbox({ mode: "required", options: { readable: ["nope"] } }, launch(base));
    expect(missing).toMatchObject({
      kind: "unavailable",
      reason: expect.stringMatching(/^sandbox\.readable path "nope" cannot be made visible/),
    });
    const broad = await planSandbox({ mode: "auto", options: {} }, launch("/"));
    expect(broad).toMatchObject({ kind: "unavailable", reason: expect.stringContaining("too broad") });
    const notFound = await planSandbox({ mode: "auto", options: {} }, launch(base, "no-such-command-here"));
    expect(notFound.kind).toBe("spawnFailed");
    expect((notFound as { error: Error }).error).toMatchObject({ code: "ENOENT", message: "spawn no-such-command-here ENOENT" });
  });

  it("remembers a successful start, not a failed one; a failing bwrap says it is installed but cannot start", async () => {
    forgetSandboxStart();
    const fake = join(base, "failing-bwrap");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n", { mode: 0o755 });
    expect(await sandboxStartProblem(fake)).toBe(
      "bubblewrap is installed but cannot create a sandbox here (bwrap: No permissions to create new namespace); " +
        "run `ears doctor` for the fix",
    );
    const slow = join(base, "slow-bwrap");
    writeFileSync(slow, "#!/bin/sh\nexec sleep 5\n", { mode: 0o755 });
    expect(await sandboxStartProblem(slow, 100)).toMatch(/did not start a sandbox within 100 ms .*the next run tries again/);
    const real = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" }).trim();
    expect(await sandboxStartProblem(real)).toBeUndefined();
    // Remembered: a second call answers without starting anything, even with a timeout no start could meet.
    expect(await sandboxStartProblem(real, 0)).toBeUndefined();
    expect(await sandboxStartProblem(fake)).toMatch(/cannot create a sandbox/);
    const silent = join(base, "silent-bwrap");
    writeFileSync(silent, "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    expect(await sandboxStartProblem(silent)).toBe(
      "bubblewrap is installed but cannot create a sandbox here (exit code 3); run `ears doctor` for the fix",
    );
    const killed = join(base, "killed-bwrap");
    writeFileSync(killed, "#!/bin/sh\nkill -TERM $$\n", { mode: 0o755 });
    expect(await sandboxStartProblem(killed)).toMatch(/\(signal SIGTERM\)/);
    const chatty = join(base, "chatty-bwrap");
    writeFileSync(chatty, `#!/bin/sh\nprintf '%05000d\\n' 0 >&2\necho second >&2\nexit 1\n`, { mode: 0o755 });
    const long = await sandboxStartProblem(chatty);
    expect(long).not.toContain("second");
    const gone = join(base, "not-there");
    expect(await sandboxStartProblem(gone)).toMatch(/^bubblewrap could not be started: spawn .*ENOENT/);
  });

  it.runIf(process.platform === "linux")("a probe past its deadline is answered only once it and what it started are gone", async () => {
    forgetSandboxStart();
    const marker = uniqueMarker();
    const hung = join(base, "hung-bwrap");
    // A grandchild in the probe's group, and a probe that ignores SIGTERM: the group is SIGKILLed after the grace.
    writeFileSync(hung, `#!/bin/sh\ntrap '' TERM\nsleep ${marker} &\nwait\nwait\n`, { mode: 0o755 });
    try {
      expect(await sandboxStartProblem(hung, 100)).toMatch(/did not start a sandbox within 100 ms/);
      expect(liveWith(marker)).toEqual([]);
    } finally {
      killAllWith(marker);
    }
  });

  it("starts a confined plan with its filter on fd 3, which bwrap closes: the guest sees only 0, 1, 2 of its own", async () => {
    const plan = (await planSandbox(
      { mode: "required", options: {} },
      {
        command: "/bin/sh",
        args: ["-c", "ls -l /proc/self/fd; touch /tmp/x; chmod 4755 /tmp/x 2>&1 || true"],
        cwd: base,
        env: { PATH: process.env.PATH },
      },
    )) as ConfinedPlan;
    const child = spawnConfined(plan, { cwd: base, detached: false });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
    // fd 3 inside is ls's own handle on /proc/self/fd: nothing is left of the filter's pipe there.
    const three = out.split("\n").find((line) => / 3 -> /.test(line));
    expect(three ?? " 3 -> /proc/").toMatch(/ 3 -> \/proc\//);
    expect(out).toMatch(/ 0 -> /);
    expect(out).toContain("Operation not permitted");
  });

  it("starts a plan without a filter (an architecture the filter does not know) with no filter's pipe", async () => {
    const plan = (await planSandbox(
      { mode: "required", options: {} },
      { command: "/bin/sh", args: ["-c", "echo ran"], cwd: base, env: { PATH: process.env.PATH } },
    )) as ConfinedPlan;
    const bare: ConfinedPlan = {
      ...plan,
      seccomp: undefined,
      args: plan.args.filter((arg, i, all) => arg !== "--seccomp" && all[i - 1] !== "--seccomp"),
    };
    const child = spawnConfined(bare, { cwd: base, detached: false });
    expect(child.stdio[SECCOMP_FD]).toBeNull();
    // bwrap's report of its sandbox's init still comes (the host waits for that init's end).
    expect((child.stdio as unknown[])[SANDBOX_INFO_FD]).not.toBeNull();
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
    expect(out).toBe("ran\n");
    expect(spawnConfined(plan, { cwd: base, detached: false }).stdio[SECCOMP_FD]).not.toBeNull();
  });

  it("cannot tell (undefined) once a check would read more descriptors than its budget", async () => {
    const plan = (await planSandbox(
      { mode: "required", options: {} },
      {
        command: "/bin/bash",
        args: ["-c", 'for i in $(seq 3 2300); do eval "exec $i</dev/null"; done; echo up; exec 1>&-; sleep 5'],
        cwd: base,
        env: { PATH: process.env.PATH },
      },
    )) as ConfinedPlan;
    const child = spawnConfined(plan, { cwd: base, detached: false });
    try {
      await new Promise((resolve) => child.stdout.once("data", resolve));
      // Until bash has closed fd 1 the answer may be true; then it can only be "cannot tell", never false.
      let answer: boolean | undefined = true;
      for (let i = 0; i < 40 && (answer = guestHoldsOutput(child.pid!)) !== undefined; i++) {
        expect(answer).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(answer).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("tells whether a process inside the sandbox still holds what bubblewrap was given as stdout", async () => {
    const plan = (await planSandbox(
      { mode: "required", options: {} },
      { command: "/bin/sh", args: ["-c", "echo up; exec 1>&-; sleep 5"], cwd: base, env: { PATH: process.env.PATH } },
    )) as ConfinedPlan;
    const holding = (await planSandbox(
      { mode: "required", options: {} },
      { command: "/bin/sh", args: ["-c", "echo up; sleep 5"], cwd: base, env: { PATH: process.env.PATH } },
    )) as ConfinedPlan;
    const start = async (p: ConfinedPlan) => {
      const child = spawnConfined(p, { cwd: base, detached: false });
      await new Promise((resolve) => child.stdout.once("data", resolve));
      return child;
    };
    const [closed, held] = await Promise.all([start(plan), start(holding)]);
    try {
      let answer: boolean | undefined;
      for (let i = 0; i < 40 && (answer = guestHoldsOutput(closed.pid!)) !== false; i++)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(answer).toBe(false);
      expect(guestHoldsOutput(held.pid!)).toBe(true);
      expect(guestHoldsOutput(2 ** 22 + 17)).toBeUndefined();
    } finally {
      closed.kill("SIGKILL");
      held.kill("SIGKILL");
    }
  });
});

describe.runIf(process.platform !== "win32")("the host's file system as the policy sees it", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-fsview-")));
    mkdirSync(join(base, "dir"));
    writeFileSync(join(base, "file"), "text");
    writeFileSync(join(base, "tool"), "#!/bin/sh\n", { mode: 0o755 });
    symlinkSync("file", join(base, "link"));
    symlinkSync("missing", join(base, "dangling"));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("says what each entry is, with and without following links", () => {
    expect(nodeFileSystem.kind(join(base, "dir"))).toBe("directory");
    expect(nodeFileSystem.kind(join(base, "file"))).toBe("file");
    expect(nodeFileSystem.kind(join(base, "link"))).toBe("link");
    expect(nodeFileSystem.targetKind(join(base, "link"))).toBe("file");
    expect(nodeFileSystem.targetKind(join(base, "dangling"))).toBeUndefined();
    expect(nodeFileSystem.kind(join(base, "none"))).toBeUndefined();
    expect(nodeFileSystem.kind("/dev/null")).toBe("other");
  });

  it("lists with kinds, reads, resolves, and knows executables and modification times", () => {
    expect(nodeFileSystem.list(base).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: "dangling", kind: "link" },
      { name: "dir", kind: "directory" },
      { name: "file", kind: "file" },
      { name: "link", kind: "link" },
      { name: "tool", kind: "file" },
    ]);
    expect(nodeFileSystem.list(join(base, "none"))).toEqual([]);
    expect(nodeFileSystem.read(join(base, "link"))).toBe("text");
    expect(nodeFileSystem.read(join(base, "none"))).toBeUndefined();
    expect(nodeFileSystem.realpath(join(base, "link"))).toBe(join(base, "file"));
    expect(() => nodeFileSystem.realpath(join(base, "dangling"))).toThrow(/ENOENT/);
    expect(nodeFileSystem.readlink(join(base, "link"))).toBe("file");
    expect(nodeFileSystem.executable(join(base, "tool"))).toBe(true);
    expect(nodeFileSystem.executable(join(base, "file"))).toBe(false);
    expect(nodeFileSystem.executable(join(base, "dir"))).toBe(false);
    expect(nodeFileSystem.changedMs(base)).toBeTypeOf("number");
    expect(nodeFileSystem.changedMs(join(base, "none"))).toBeUndefined();
  });
});
