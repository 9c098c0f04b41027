/**
 * bubblewrap's command line, built in-process from a policy and a system layout given as data: every
 * flag the threat model relies on, in the order that makes it hold.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bubblewrapArgs,
  findBwrap,
  standardBinDirs,
  probeArgs,
  networkEtc,
  readOnlyProc,
  systemDirs,
  systemEtc,
  spellApart,
  systemLayout,
  type SystemLayout,
} from "../../../src/host/sandbox/bubblewrap.js";
import type { SandboxPolicy } from "../../../src/host/sandbox/policy.js";
import { FakeFileSystem } from "./fake-file-system.js";

const layout: SystemLayout = {
  dirs: [
    { path: "/usr", kind: "directory" },
    { path: "/bin", kind: "link", target: "usr/bin" },
    { path: "/lib", kind: "link", target: "usr/lib" },
  ],
  etc: ["/etc/ld.so.cache", "/etc/ssl/certs", "/etc/resolv.conf", "/etc/hosts"],
  proc: ["/proc/sys", "/proc/sysrq-trigger"],
};
const policy = (more: Partial<SandboxPolicy> = {}): SandboxPolicy => ({
  executable: "/usr/bin/node",
  executableBinds: [{ source: "/usr/bin/node", target: "/usr/bin/node", writable: false }],
  args: ["guest.mjs", "--flag"],
  cwd: "/work/proj",
  binds: [
    { source: "/work/proj", target: "/work/proj", writable: false },
    { source: "/data/out", target: "/data/out", writable: true },
  ],
  masks: [
    { path: "/work/proj/.env", kind: "file" },
    { path: "/work/proj/.git", kind: "directory" },
  ],
  network: false,
  env: { PATH: "/usr/bin", HOME: "/tmp/home", LANG: "C.UTF-8", PWD: "/work/proj" },
  ...more,
});
/** The triples `flag a b` in order. */
const triples = (args: string[], flag: string) => args.flatMap((arg, i) => (arg === flag ? [`${args[i + 1]} ${args[i + 2]}`] : []));
const at = (args: string[], ...seq: string[]) => args.findIndex((_, i) => seq.every((part, j) => args[i + j] === part));

describe("bubblewrap's command line", () => {
  // Was a hole (29.4): the program was bound before the private /tmp, which then hid one installed under /tmp (Bun's or
  // Deno's npm package in a project made there): "bwrap: execvp …/bun.exe: No such file or directory".
  it("binds a program installed under /tmp after the private /tmp, so the tmpfs does not hide it", () => {
    const bun = "/tmp/proj/node_modules/bun/bin/bun.exe";
    const { args, report } = bubblewrapArgs(
      policy({ executable: bun, executableBinds: [{ source: bun, target: bun, writable: false }] }),
      layout,
    );
    expect(at(args, "--ro-bind", bun, bun)).toBeGreaterThan(at(args, "--tmpfs", "/tmp"));
    expect(at(args, "--ro-bind", bun, bun)).toBeLessThan(at(args, "--ro-bind", "/work/proj", "/work/proj"));
    expect(report.readable).toContain(bun);
  });

  it("unshares every namespace, starts a new session, drops every capability, dies with the host", () => {
    const { args } = bubblewrapArgs(policy(), layout);
    expect(args.slice(0, 1)).toEqual(["--unshare-all"]);
    for (const flag of ["--die-with-parent", "--new-session", "--clearenv"]) expect(args).toContain(flag);
    expect(at(args, "--cap-drop", "ALL")).toBeGreaterThan(0);
    expect(args).not.toContain("--share-net");
    expect(args).not.toContain("--bind-try");
  });

  it("shares the network and name resolution only when asked", () => {
    const closed = bubblewrapArgs(policy(), layout).args;
    const open = bubblewrapArgs(policy({ network: true }), layout);
    expect(open.args).toContain("--share-net");
    expect(open.report.network).toBe(true);
    expect(triples(open.args, "--ro-bind")).toEqual(expect.arrayContaining(["/etc/resolv.conf /etc/resolv.conf", "/etc/hosts /etc/hosts"]));
    expect(closed.join(" ")).not.toMatch(/resolv\.conf|\/etc\/hosts/);
    expect(triples(closed, "--ro-bind")).toContain("/etc/ld.so.cache /etc/ld.so.cache");
  });

  it("gives the guest exactly the policy's environment through --clearenv and --setenv", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[A-Z_]{1,6}$/), fc.string({ maxLength: 6 })), (env) => {
        const { args, report } = bubblewrapArgs(policy({ env }), layout);
        expect(Object.fromEntries(args.flatMap((arg, i) => (arg === "--setenv" ? [[args[i + 1], args[i + 2]]] : [])))).toEqual(env);
        expect(at(args, "--clearenv")).toBeLessThan(Math.max(0, args.indexOf("--setenv")) || Infinity);
        expect(report.env).toEqual(Object.keys(env));
      }),
      { seed: 23, numRuns: 60 },
    );
  });

  it("makes the kernel's settings read-only: each /proc path re-bound read-only after --proc", () => {
    const { args } = bubblewrapArgs(policy(), layout);
    const proc = at(args, "--proc", "/proc");
    expect(proc).toBeGreaterThan(0);
    for (const path of layout.proc) {
      const bind = at(args, "--ro-bind", path, path);
      expect(bind, path).toBeGreaterThan(proc);
    }
    expect(readOnlyProc()).toEqual(["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/pressure"]);
  });

  it("loads the seccomp filter from the descriptor given, and says so; none without one", () => {
    const with3 = bubblewrapArgs(policy(), layout, { seccompFd: 3 });
    expect(at(with3.args, "--seccomp", "3")).toBeGreaterThan(0);
    expect(with3.report.seccomp).toBe(true);
    const without = bubblewrapArgs(policy(), layout);
    expect(without.args).not.toContain("--seccomp");
    expect(without.report.seccomp).toBe(false);
  });

  it("sizes the private /tmp when asked (--size right before --tmpfs /tmp), and makes HOME inside it", () => {
    const { args } = bubblewrapArgs(policy(), layout, { tmpBytes: 1048576 });
    expect(at(args, "--size", "1048576", "--tmpfs", "/tmp")).toBeGreaterThan(0);
    expect(at(args, "--dir", "/tmp/home")).toBeGreaterThan(at(args, "--tmpfs", "/tmp"));
    expect(bubblewrapArgs(policy(), layout).args).not.toContain("--size");
  });

  // Issue 33: a cold runCode's working directory is a tmpfs of bubblewrap's, not a mount the host forks for.
  it("mounts a private directory's sized tmpfs (mode 0700) in place of its bind, after every other bind", () => {
    const own = { path: "/tmp/ears-code-x/work", bytes: 8388608 };
    const base = policy({ binds: [...policy().binds, { source: own.path, target: own.path, writable: true }] });
    const { args, report } = bubblewrapArgs(base, layout, { tmpBytes: 1048576, privateDir: own });
    const mounted = at(args, "--perms", "0700", "--size", "8388608", "--tmpfs", own.path);
    expect(mounted).toBeGreaterThan(at(args, "--bind", "/data/out", "/data/out"));
    expect(mounted).toBeLessThan(at(args, "--ro-bind", "/dev/null", "/work/proj/.env"));
    // Nothing of the host's directory lies beneath the tmpfs, not even read-only.
    expect(args.filter((arg) => arg === own.path)).toEqual([own.path]);
    expect(report.writable.filter((path) => path === own.path)).toEqual([own.path]);
    expect(report.readable).not.toContain(own.path);
    expect(bubblewrapArgs(policy(), layout).args).not.toContain("--perms");
  });

  it("binds read-only what the policy says read-only and read-write only what it says writable, in its order", () => {
    const { args, report } = bubblewrapArgs(policy(), layout);
    expect(triples(args, "--bind")).toEqual(["/data/out /data/out"]);
    expect(triples(args, "--ro-bind")).toContain("/work/proj /work/proj");
    expect(at(args, "--ro-bind", "/work/proj", "/work/proj")).toBeLessThan(at(args, "--bind", "/data/out", "/data/out"));
    expect(report.writable).toEqual(["/tmp", "/data/out"]);
    expect(report.readable).toEqual(expect.arrayContaining(["/usr", "/work/proj"]));
    expect(report.readable).not.toContain("/data/out");
  });

  it("masks after every bind: a file with /dev/null, a directory with a read-only tmpfs", () => {
    const { args, report } = bubblewrapArgs(policy(), layout);
    const lastBind = Math.max(
      ...args.flatMap((arg, i) => (arg === "--bind" || arg === "--ro-bind" ? [i] : [])).filter((i) => args[i + 1] !== "/dev/null"),
    );
    const fileMask = at(args, "--ro-bind", "/dev/null", "/work/proj/.env");
    const dirMask = at(args, "--tmpfs", "/work/proj/.git", "--remount-ro", "/work/proj/.git");
    expect(fileMask).toBeGreaterThan(lastBind);
    expect(dirMask).toBeGreaterThan(lastBind);
    expect(report.masked).toEqual(["/work/proj/.env", "/work/proj/.git"]);
  });

  it("rebuilds the system directories from the layout: links as links, directories read-only; binds the program only outside them", () => {
    const { args } = bubblewrapArgs(
      policy({ executableBinds: [{ source: "/opt/deno/bin/deno", target: "/opt/deno/bin/deno", writable: false }] }),
      layout,
    );
    expect(at(args, "--symlink", "usr/bin", "/bin")).toBeGreaterThan(0);
    expect(at(args, "--ro-bind", "/usr", "/usr")).toBeGreaterThan(0);
    expect(at(args, "--ro-bind", "/opt/deno/bin/deno", "/opt/deno/bin/deno")).toBeGreaterThan(0);
    expect(triples(bubblewrapArgs(policy(), layout).args, "--ro-bind")).not.toContain("/usr/bin/node /usr/bin/node");
  });

  it("ends with --chdir, --, the program and its arguments", () => {
    const { args } = bubblewrapArgs(policy(), layout);
    expect(args.slice(-6)).toEqual(["--chdir", "/work/proj", "--", "/usr/bin/node", "guest.mjs", "--flag"]);
  });

  it("spells the host's own executable apart wherever it appears (Deno adds its flags after any argument equal to its path)", () => {
    const deno = "/opt/deno/bin/deno";
    const { args } = bubblewrapArgs(
      policy({ executable: deno, executableBinds: [{ source: deno, target: deno, writable: false }], binds: [] }),
      layout,
      { hostExecutable: deno },
    );
    expect(args).not.toContain(deno);
    expect(args).toContain("/opt/deno/bin/./deno");
    expect(spellApart("/a/b")).toBe("/a/./b");
    expect(bubblewrapArgs(policy({ executable: deno }), layout, { hostExecutable: "/usr/bin/node" }).args).toContain(deno);
  });

  it("reads the system layout: links with their text, directories, only the /etc and /proc paths that exist", () => {
    const fs = new FakeFileSystem({
      "/usr/": "",
      "/bin": "->usr/bin",
      "/etc/ld.so.cache": "",
      "/proc/sys/": "",
      "/usr/bin/bwrap": { kind: "file", executable: true },
    });
    const read = systemLayout(fs);
    expect(read.dirs).toEqual([
      { path: "/usr", kind: "directory" },
      { path: "/bin", kind: "link", target: "usr/bin" },
    ]);
    expect(read.etc).toEqual(["/etc/ld.so.cache"]);
    expect(read.proc).toEqual(["/proc/sys"]);
    expect(findBwrap(fs, "relative:/nowhere:/usr/bin")).toEqual({ path: "/usr/bin/bwrap", executable: true });
    expect(findBwrap(new FakeFileSystem({ "/usr/": "" }), "/nowhere")).toBeUndefined();
  });

  it("looks for bwrap on PATH, then in /usr/local/bin, /usr/bin and /bin; one there but not executable is unusable (28.5)", () => {
    const fs = new FakeFileSystem({
      "/usr/bin/bwrap": { kind: "file", executable: true },
      "/opt/bin/bwrap": { kind: "file", executable: true },
    });
    // A stripped PATH (env -i, PATH=/usr/local/bin) still finds the installed sandbox.
    expect(findBwrap(fs, "/usr/local/bin")).toEqual({ path: "/usr/bin/bwrap", executable: true });
    expect(findBwrap(fs, undefined)).toEqual({ path: "/usr/bin/bwrap", executable: true });
    expect(findBwrap(fs, "/opt/bin")).toEqual({ path: "/opt/bin/bwrap", executable: true }); // PATH first
    expect(standardBinDirs()).toEqual(["/usr/local/bin", "/usr/bin", "/bin"]);
    const broken = new FakeFileSystem({ "/usr/bin/bwrap": "not executable", "/bin/bwrap": "->nowhere" });
    expect(findBwrap(broken, "/opt/bin")).toEqual({ path: "/usr/bin/bwrap", executable: false });
    expect(findBwrap(new FakeFileSystem({ "/bin/bwrap": "->nowhere" }), "")).toEqual({ path: "/bin/bwrap", executable: false });
    const both = new FakeFileSystem({ "/usr/local/bin/bwrap": "", "/bin/bwrap": { kind: "file", executable: true } });
    expect(findBwrap(both, "")).toEqual({ path: "/bin/bwrap", executable: true }); // an executable one wins wherever it is
  });

  it("names exactly the system paths docs/host.md lists: never /etc/passwd, /etc/ssl/private or a home", () => {
    expect(systemDirs()).toEqual(["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]);
    expect(systemEtc()).toEqual([
      "/etc/ld.so.cache",
      "/etc/localtime",
      "/etc/ssl/certs",
      "/etc/ssl/openssl.cnf",
      "/etc/pki/tls/certs",
      "/etc/pki/ca-trust/extracted",
      "/etc/alternatives",
    ]);
    expect(networkEtc()).toEqual(["/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf"]);
  });

  it("probes with every namespace the real sandbox uses", () => {
    const args = probeArgs("/usr/bin/bwrap");
    expect(args).toEqual(expect.arrayContaining(["--unshare-all", "--die-with-parent", "--new-session", "ALL"]));
    expect(args.slice(-3)).toEqual(["--", "/usr/bin/bwrap", "--version"]);
  });
});
