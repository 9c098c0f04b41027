/**
 * `ears doctor`'s findings, in-process on a machine given as data: what confinement a run gets, and
 * the one-line fix for each missing piece. The CLI's exit status and --json follow the verdict.
 */
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { doctorCommand, doctorText } from "../../../src/cli/doctor-command.js";
import { diagnoseSandbox, type MachineView } from "../../../src/host/sandbox/doctor.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const realBwrap = bwrapPath;

const machine = (more: Partial<MachineView> = {}, proc: Record<string, string> = {}): MachineView => ({
  platform: "linux",
  arch: "x64",
  root: false,
  bwrap: "/usr/bin/bwrap",
  bwrapVersion: () => "bubblewrap 0.8.0",
  startProblem: () => Promise.resolve(undefined),
  proc: (path) => ({ "/proc/self/status": "Name:\tnode\nSeccomp:\t0\n", "/proc/sys/user/max_user_namespaces": "1000", ...proc })[path],
  ...more,
});
const failing = (reason: string) => () => Promise.resolve(reason);

describe("ears doctor's findings", () => {
  it("says runs are confined when bubblewrap starts, with its version, namespaces and the seccomp filter", async () => {
    const { confined, checks } = await diagnoseSandbox(machine());
    expect(confined).toBe(true);
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ["platform", true],
      ["bubblewrap", true],
      ["user namespaces", true],
      ["sandbox starts", true],
      ["seccomp", true],
      ["host user", true],
    ]);
    expect(checks[1]!.detail).toContain("bubblewrap 0.8.0");
    // The whole text a person reads, pinned: each line is part of the answer.
    expect(doctorText(confined, checks)).toBe(
      [
        "ok  platform         linux x64",
        "ok  bubblewrap       /usr/bin/bwrap (bubblewrap 0.8.0)",
        "ok  user namespaces  allowed (max 1000)",
        "ok  sandbox starts   a throw-away sandbox with every namespace started",
        "ok  seccomp          filter for x64: setuid/setgid bits, user namespaces, socket families and kernel-facing calls refused",
        "ok  host user        not root: the guest has this user's rights on what it is shown, no more",
        "",
        'Runs here are confined (sandbox: "auto" and true start guests under bubblewrap).',
        "",
      ].join("\n"),
    );
  });

  it("pins each missing piece's finding and fix, word for word", async () => {
    const find = async (view: MachineView, name: string) => (await diagnoseSandbox(view)).checks.find((c) => c.name === name);
    expect(await find(machine({ bwrap: undefined }), "bubblewrap")).toEqual({
      name: "bubblewrap",
      ok: false,
      detail: "not installed (no bwrap on PATH, nor in /usr/local/bin, /usr/bin, /bin)",
      fix: "apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora, RHEL)",
    });
    const unusable = "bubblewrap is installed at /usr/bin/bwrap but is not an executable file; reinstall the OS package bubblewrap";
    expect(await find(machine({ bwrap: undefined, bwrapUnusable: unusable }), "bubblewrap")).toEqual({
      name: "bubblewrap",
      ok: false,
      detail: `${unusable} (every run is refused until it is fixed)`,
      fix: "apt-get install --reinstall bubblewrap (Debian, Ubuntu) or dnf reinstall bubblewrap (Fedora, RHEL)",
    });
    expect(await find(machine({ bwrapVersion: () => undefined }), "bubblewrap")).toMatchObject({
      detail: "/usr/bin/bwrap (version unknown)",
    });
    expect(await find(machine({}, { "/proc/sys/user/max_user_namespaces": "0" }), "user namespaces")).toEqual({
      name: "user namespaces",
      ok: false,
      detail: "user.max_user_namespaces is 0",
      fix: "sysctl -w user.max_user_namespaces=15000",
    });
    expect(await find(machine({ startProblem: failing("bwrap: oops") }), "sandbox starts")).toEqual({
      name: "sandbox starts",
      ok: false,
      detail: "bwrap: oops",
      // Never "see the error above": what to do (ears doctor replaces it with the fix for the environment it detects).
      fix:
        "bubblewrap could not make its namespaces here (the detail says which call failed): let this user create " +
        "user namespaces, or confine with Landlock, which needs none (the deployment matrix gives the fix for this environment)",
    });
    expect(await find(machine({}, { "/proc/self/status": "Name:\tnode\n" }), "seccomp")).toEqual({
      name: "seccomp",
      ok: false,
      detail: "the kernel has no seccomp",
      fix: "use a kernel built with CONFIG_SECCOMP_FILTER",
    });
    // An unreadable /proc/self/status is no evidence of seccomp (it once counted as "ok").
    expect(await find(machine({ proc: () => undefined }), "seccomp")).toMatchObject({ ok: false, detail: "the kernel has no seccomp" });
    expect(await find(machine({ arch: "s390x" }), "seccomp")).toMatchObject({ detail: "no filter for s390x (only x64 and arm64)" });
    const darwin = await diagnoseSandbox(machine({ platform: "darwin" }));
    expect(darwin.checks).toEqual([
      {
        name: "platform",
        ok: false,
        detail: "darwin: no OS sandbox is supported here yet (only Linux, with bubblewrap)",
        fix: "run guests on Linux, or accept unconfined runs (sandbox: false / --no-sandbox)",
      },
    ]);
    expect(await find(machine({}, { "/proc/sys/user/max_user_namespaces": "" }), "user namespaces")).toMatchObject({
      ok: true,
      detail: "allowed (max )",
    });
    expect(await find(machine({ proc: (path) => (path === "/proc/self/status" ? "Seccomp:\t2" : undefined) }), "user namespaces")).toEqual({
      name: "user namespaces",
      ok: true,
      detail: "allowed (max unknown)",
    });
    expect(await find(machine({}, { "/proc/sys/kernel/unprivileged_userns_clone": "0" }), "user namespaces")).toEqual({
      name: "user namespaces",
      ok: false,
      detail: "kernel.unprivileged_userns_clone is 0",
      fix: "sysctl -w kernel.unprivileged_userns_clone=1",
    });
    expect(await find(machine({}, { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1" }), "user namespaces")).toEqual({
      name: "user namespaces",
      ok: false,
      detail: "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later)",
      fix:
        "give bwrap an AppArmor profile that allows userns (e.g. /etc/apparmor.d/bwrap), " +
        "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
    });
    // A Seccomp field without a number is no evidence either.
    expect(await find(machine({}, { "/proc/self/status": "Name:\tnode\nSeccomp:\t\n" }), "seccomp")).toMatchObject({ ok: false });
  });

  const broken: [string, MachineView, RegExp][] = [
    ["bubblewrap missing", machine({ bwrap: undefined }), /apt-get install bubblewrap/],
    [
      "no user namespaces at all",
      machine({ startProblem: failing("No permission") }, { "/proc/sys/user/max_user_namespaces": "0" }),
      /sysctl -w user\.max_user_namespaces=/,
    ],
    [
      "Debian's unprivileged_userns_clone off",
      machine({ startProblem: failing("No permission") }, { "/proc/sys/kernel/unprivileged_userns_clone": "0" }),
      /kernel\.unprivileged_userns_clone=1/,
    ],
    [
      "Ubuntu 24.04's AppArmor restriction",
      machine(
        { startProblem: failing("setting up uid map: Permission denied") },
        { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1" },
      ),
      /AppArmor profile/,
    ],
    ["another platform", machine({ platform: "darwin" }), /run guests on Linux/],
  ];
  it.each(broken)("%s: not confined, and the fix is printed (exit 1)", async (_name, view, fix) => {
    const { confined, checks } = await diagnoseSandbox(view);
    expect(confined).toBe(false);
    const text = doctorText(confined, checks);
    expect(text).toMatch(fix);
    expect(text).toMatch(/^no /m);
    expect(text).toContain("NOT confined");
    const stdout = new PassThrough();
    let out = "";
    stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const status = await doctorCommand(view)(["--json"], { stdout, stderr: new PassThrough(), cwd: root });
    expect(status).toBe(1);
    expect(JSON.parse(out)).toMatchObject({ confined: false, checks: expect.arrayContaining([expect.objectContaining({ ok: false })]) });
  });

  it("a root host needs no user namespace of its own; an unknown architecture has no seccomp filter but is still confined", async () => {
    const rootHost = await diagnoseSandbox(machine({ root: true }, { "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1" }));
    expect(rootHost.checks.find((c) => c.name === "user namespaces")).toEqual({
      name: "user namespaces",
      ok: true,
      detail: "root: bubblewrap needs none of its own",
    });
    // Who the host runs as is said, never a failing check: a root host's guest is uid 0 without capabilities.
    expect(rootHost.checks.find((c) => c.name === "host user")).toEqual({
      name: "host user",
      ok: true,
      detail: "root: the guest is uid 0 without capabilities (docs/host.md: what a root host implies)",
    });
    expect(rootHost.confined).toBe(true);
    const riscv = await diagnoseSandbox(machine({ arch: "riscv64" }));
    expect(riscv.confined).toBe(true);
    expect(riscv.checks.find((c) => c.name === "seccomp")).toMatchObject({ ok: false, fix: expect.stringContaining("x64") });
  });

  it.runIf(process.platform === "linux" && realBwrap !== undefined)("on this machine: confined, exit 0", async () => {
    const stdout = new PassThrough();
    let out = "";
    stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    expect(await doctorCommand()([], { stdout, stderr: new PassThrough(), cwd: root })).toBe(0);
    expect(out).toContain("Runs here are confined");
    expect(await doctorCommand()(["extra"], { stdout, stderr: new PassThrough(), cwd: root }).catch((e: Error) => e.message)).toMatch(
      /takes no arguments/,
    );
  });
});
