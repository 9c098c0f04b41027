/**
 * The Landlock mechanism in-process: the helper's command line built from a policy on a file system given as data
 * (every grant, the secrets left out of a shown directory, a secret in a writable one refused), its report and gaps,
 * the helper's own failure read back from a finished run, and the mechanism "auto" expects. The helper itself runs
 * in test/host/confine/landlock-helper.test.ts, the attacks in test/host/confine/landlock-attacks.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  CONFINE_EXIT,
  confineFailure,
  confineHelperName,
  findConfineHelper,
  LANDLOCK_ABI_MIN,
  landlockArgs,
  landlockDevices,
  landlockGaps,
  landlockGrants,
  MAX_LANDLOCK_RULES,
  selfTestAbi,
  selfTestArgs,
} from "../../../src/host/sandbox/landlock.js";
import { systemLayout } from "../../../src/host/sandbox/bubblewrap.js";
import { expectedMechanism } from "../../../src/host/sandbox/index.js";
import { SandboxPathError } from "../../../src/host/sandbox/policy.js";
import { FakeFileSystem } from "./fake-file-system.js";
import { base, launch, policy } from "./policy-fixture.js";

/** A machine with a merged /usr, a few /etc pieces (one a link), the devices and a project holding secrets. */
function machine(): FakeFileSystem {
  const fs = base();
  fs.add("/lib", "->usr/lib");
  fs.add("/usr/lib/", "");
  fs.add("/etc/ld.so.cache", "cache");
  fs.add("/etc/localtime", "->/usr/share/zoneinfo/UTC");
  fs.add("/usr/share/zoneinfo/UTC", "tz");
  fs.add("/etc/resolv.conf", "->/run/resolv.conf");
  fs.add("/run/resolv.conf", "nameserver 127.0.0.53");
  fs.add("/etc/hosts", "127.0.0.1 localhost");
  for (const { path } of landlockDevices()) fs.add(path, { kind: "other" });
  fs.add("/proc/", "");
  fs.add("/work/proj/main.mjs", "code");
  fs.add("/work/proj/.env", "SECRET=1");
  fs.add("/work/proj/src/app.mjs", "code");
  fs.add("/work/proj/src/keys/server.pem", "key");
  fs.add("/work/proj/src/keys/readme.txt", "shown");
  fs.add("/work/proj/link", "->/etc");
  fs.add("/work/proj/sock", { kind: "other" });
  fs.add("/work/out/", "");
  return fs;
}

const wiring = { seccompFd: 3, parentPid: 4242, tmpRoot: "/tmp" };

/** The helper's rules as "--ro /path" strings, in order. */
function rules(args: readonly string[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < args.length && args[i] !== "--"; i++) {
    if (["--ro", "--rw", "--list"].includes(args[i]!)) found.push(`${args[i]} ${args[++i]}`);
  }
  return found;
}

describe("the helper's command line", () => {
  it("grants the system, /etc at real paths, /proc, the devices, the program and the policy's paths; then the command", () => {
    const fs = machine();
    fs.remove("/work/proj/sock"); // a socket is masked even with showSecrets
    const p = policy(fs, launch("/work/out", ["/work/proj/main.mjs"]), { writable: ["/work/out"], showSecrets: true });
    const { args } = landlockArgs(p, systemLayout(fs), fs, wiring);
    expect(args.slice(0, 8)).toEqual(["--abi-min", String(LANDLOCK_ABI_MIN), "--parent", "4242", "--tmp", "/tmp", "--seccomp-fd", "3"]);
    expect(args).not.toContain("--net");
    const granted = rules(args);
    expect(granted).toEqual(
      expect.arrayContaining([
        "--ro /usr",
        "--ro /etc/ld.so.cache",
        "--ro /proc",
        "--rw /dev/null",
        "--ro /dev/urandom",
        "--rw /dev/full",
        "--ro /dev/zero",
        "--ro /dev/random",
        "--rw /work/out",
        "--ro /work/proj",
      ]),
    );
    // A link's target under a system directory needs no rule of its own; a merged-/usr link none at all.
    expect(granted.filter((rule) => rule.includes("zoneinfo") || rule.endsWith(" /lib"))).toEqual([]);
    // Name resolution only with the network; then at its real path.
    expect(granted.some((rule) => rule.includes("resolv") || rule.includes("hosts"))).toBe(false);
    expect(args.slice(args.indexOf("--"))).toEqual(["--", "/usr/bin/node", "/work/proj/main.mjs"]);
  });

  it("with the network: --net, and /etc's name resolution files at their real paths", () => {
    const fs = machine();
    const p = policy(fs, launch("/work/out"), { network: true });
    const { args, report } = landlockArgs(p, systemLayout(fs), fs, wiring);
    expect(args).toContain("--net");
    expect(rules(args)).toEqual(expect.arrayContaining(["--ro /run/resolv.conf", "--ro /etc/hosts"]));
    expect(report.readable).toEqual(expect.arrayContaining(["/etc/resolv.conf", "/etc/hosts"]));
    expect(report.network).toBe(true);
    expect(report.gaps).toEqual(landlockGaps(true));
  });

  it("passes the environment by --env, but HOME and TMPDIR, which the helper sets to the private directory", () => {
    const fs = machine();
    const p = policy(fs, launch("/work/out"), { env: ["A=1", "TMPDIR=/elsewhere", "B=x=y"] });
    const { args, report } = landlockArgs(p, systemLayout(fs), fs, { ...wiring, seccompFd: undefined, abiMin: 7 });
    const envs = args.flatMap((arg, i) => (args[i - 1] === "--env" ? [arg] : []));
    expect(envs).toEqual(["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PWD=/work/out", "A=1", "B=x=y"]);
    expect(args).not.toContain("--seccomp-fd");
    expect(args.slice(0, 2)).toEqual(["--abi-min", "7"]);
    expect(report.seccomp).toBe(false);
    expect(report.env).toEqual(expect.arrayContaining(["HOME", "TMPDIR", "A"]));
  });

  it("reports the mechanism, the paths as the guest names them, the masks and every gap", () => {
    const fs = machine();
    const p = policy(fs, launch("/work/out", ["/work/proj/main.mjs"]), { writable: ["/work/out"] });
    const { report } = landlockArgs(p, systemLayout(fs), fs, wiring);
    expect(report.mechanism).toBe("landlock");
    expect(report.writable).toEqual(["/tmp/ears-confine-*", "/work/out"]);
    expect(report.readable).toEqual(expect.arrayContaining(["/usr", "/proc", "/usr/bin/node", "/work/proj", "/etc/ld.so.cache"]));
    expect(report.masked).toEqual(expect.arrayContaining(["/work/proj/.env", "/work/proj/src/keys/server.pem", "/work/proj/sock"]));
    expect(report.gaps.map((gap) => gap.slice(0, gap.indexOf(":")))).toEqual(["proc", "tmp", "masks", "network", "uid"]);
  });
});

describe("the helper's command line, at its edges", () => {
  it("a program outside the system directories gets a rule of its own; a missing device none; /lib (a link) is not reported", () => {
    const fs = machine();
    fs.add("/opt/node/bin/node", { kind: "file", executable: true });
    fs.remove("/dev/full");
    const p = policy(fs, launch("/work/out", [], { command: "/opt/node/bin/node" }));
    const { args, report } = landlockArgs(p, systemLayout(fs), fs, wiring);
    const granted = rules(args);
    expect(granted).toContain("--ro /opt/node/bin/node");
    expect(granted.filter((rule) => rule.endsWith("/dev/full"))).toEqual([]);
    expect(granted.filter((rule) => rule.endsWith("/usr/bin/node"))).toEqual([]);
    expect(report.readable).not.toContain("/lib");
    expect(report.readable).toContain("/opt/node/bin/node");
    expect(report.seccomp).toBe(true);
    expect(report.env).toContain("TMPDIR");
    expect(landlockGaps(true)).toContain("network: the host's network itself, with no namespace of its own");
  });
});

describe("secrets under Landlock: left out of the rules", () => {
  it("a shown directory holding secrets gets its listing only, each other entry a rule, down to the secret", () => {
    const fs = machine();
    const p = policy(fs, launch("/work/out", ["/work/proj/main.mjs"]), { writable: ["/work/out"] });
    const granted = rules(landlockArgs(p, systemLayout(fs), fs, wiring).args);
    expect(granted).toEqual(
      expect.arrayContaining([
        "--list /work/proj",
        "--ro /work/proj/main.mjs",
        "--list /work/proj/src",
        "--ro /work/proj/src/app.mjs",
        "--list /work/proj/src/keys",
        "--ro /work/proj/src/keys/readme.txt",
      ]),
    );
    // The secrets, the socket and the link (leading out) get nothing; nor the directory as a whole.
    for (const never of ["/work/proj/.env", "/work/proj/src/keys/server.pem", "/work/proj/sock", "/work/proj/link"]) {
      expect(granted.filter((rule) => rule.endsWith(` ${never}`))).toEqual([]);
    }
    expect(granted).not.toContain("--ro /work/proj");
    expect(granted).not.toContain("--ro /work/proj/src");
  });

  it("a secret inside a writable path is refused, naming the path and the ways out", () => {
    const fs = machine();
    fs.add("/work/out/.npmrc", "token");
    fs.add("/work/out/id_rsa", "key");
    const p = policy(fs, launch("/work/proj"), { writable: ["/work/out"] });
    expect(() => landlockArgs(p, systemLayout(fs), fs, wiring)).toThrow(
      new SandboxPathError(
        'the writable path "/work/out" holds /work/out/.npmrc and 1 more, which Landlock cannot hide inside a writable directory ' +
          "(bubblewrap can); remove them, pass sandbox.showSecrets: true, or run where bubblewrap starts",
      ),
    );
    fs.remove("/work/out/id_rsa");
    const again = policy(fs, launch("/work/proj"), { writable: ["/work/out"] });
    expect(() => landlockArgs(again, systemLayout(fs), fs, wiring)).toThrow(/holds \/work\/out\/\.npmrc, which Landlock cannot hide/);
  });

  it("landlockGrants: a masked path shown by itself gets no rule; a readable path inside a masked one keeps its own", () => {
    const fs = new FakeFileSystem({ "/a/b/.git/config": "x", "/a/b/ok": "y", "/a/c": "z" });
    const masks = [{ path: "/a/b/.git", kind: "directory" as const }];
    expect(landlockGrants([{ path: "/a/b/.git", writable: false }], masks, fs)).toEqual([]);
    expect(landlockGrants([{ path: "/a", writable: false }], masks, fs)).toEqual([
      { path: "/a", access: "list" },
      { path: "/a/b", access: "list" },
      { path: "/a/b/ok", access: "read" },
      { path: "/a/c", access: "read" },
    ]);
    expect(landlockGrants([{ path: "/a/c", writable: true }], masks, fs)).toEqual([{ path: "/a/c", access: "write" }]);
  });

  it(`refuses more than ${MAX_LANDLOCK_RULES} rules rather than show a secret`, () => {
    const fs = new FakeFileSystem({ "/big/.env": "x" });
    for (let i = 0; i < MAX_LANDLOCK_RULES; i++) fs.add(`/big/f${i}`, "");
    const masks = [{ path: "/big/.env", kind: "file" as const }];
    expect(() => landlockGrants([{ path: "/big", writable: false }], masks, fs)).toThrow(
      `the shown directories need more than ${MAX_LANDLOCK_RULES} Landlock rules to hide their secrets; ` +
        "name smaller directories, or pass sandbox.showSecrets: true",
    );
    fs.remove("/big/f0");
    expect(landlockGrants([{ path: "/big", writable: false }], masks, fs)).toHaveLength(MAX_LANDLOCK_RULES);
  });
});

describe("the helper, found and read back", () => {
  it("is named per architecture, x64 and arm64 only", () => {
    expect(confineHelperName("x64")).toBe("ears-confine-linux-x64");
    expect(confineHelperName("arm64")).toBe("ears-confine-linux-arm64");
    expect(confineHelperName("riscv64")).toBeUndefined();
    expect(findConfineHelper(new FakeFileSystem(), "riscv64")).toEqual({
      missing: "no Landlock helper is built for riscv64 (only x64 and arm64)",
    });
    expect(findConfineHelper(new FakeFileSystem(), "x64")).toMatchObject({
      missing: expect.stringMatching(/^the Landlock helper \(dist\/native\/ears-confine-linux-x64\) is missing from this installation/),
    });
  });

  it("finds the built helper in dist/native", () => {
    const fs = new FakeFileSystem();
    fs.executable = (path: string) => path.endsWith("/dist/native/ears-confine-linux-x64");
    const found = findConfineHelper(fs, "x64");
    expect(found).toMatchObject({ path: expect.stringMatching(/\/dist\/native\/ears-confine-linux-x64$/) });
  });

  it("reads the self-test's answer", () => {
    expect(selfTestArgs()).toEqual(["--self-test", "--abi-min", String(LANDLOCK_ABI_MIN)]);
    expect(selfTestArgs(9)).toEqual(["--self-test", "--abi-min", "9"]);
    expect(selfTestAbi("landlock-abi 7 ok\n")).toBe(7);
    expect(selfTestAbi("landlock-abi 7\n")).toBeUndefined();
    expect(selfTestAbi("")).toBeUndefined();
  });

  it("tells the helper's own refusal (its exit code, its marked line, no hello) from the guest's exit", () => {
    const line = "ears-confine: cannot apply --ro /gone: No such file or directory";
    for (const code of Object.values(CONFINE_EXIT)) {
      expect(confineFailure({ exit: { code }, stderr: `noise\n${line}\n` })).toBe(
        "the Landlock helper refused to start it: cannot apply --ro /gone: No such file or directory",
      );
    }
    expect(confineFailure({ exit: { code: 122 }, stderr: "a guest's own line\n" })).toBeUndefined();
    expect(confineFailure({ exit: { code: 122 }, stderr: line, hello: {} })).toBeUndefined();
    expect(confineFailure({ exit: { code: 1 }, stderr: line })).toBeUndefined();
    expect(confineFailure({ exit: { code: 127 }, stderr: line })).toBeUndefined();
    expect(confineFailure({ exit: { code: null }, stderr: line })).toBeUndefined();
    expect(confineFailure({ stderr: line })).toBeUndefined();
    expect(confineFailure({ exit: { code: 121 } })).toBeUndefined();
  });
});

describe.runIf(process.platform === "linux")("the mechanism auto expects", () => {
  it("none when off; the one asked for; else bubblewrap where it is installed, Landlock where it is not", () => {
    const none = new FakeFileSystem({ "/usr/bin/": "" });
    const installed = new FakeFileSystem({ "/usr/bin/bwrap": { kind: "file", executable: true } });
    expect(expectedMechanism({ mode: "off", options: {} }, installed)).toBeUndefined();
    expect(expectedMechanism({ mode: "required", options: { mechanism: "landlock" } }, installed)).toBe("landlock");
    expect(expectedMechanism({ mode: "required", options: { mechanism: "bubblewrap" } }, none)).toBe("bubblewrap");
    const saved = process.env.PATH;
    process.env.PATH = "/usr/bin";
    try {
      expect(expectedMechanism({ mode: "auto", options: {} }, installed)).toBe("bubblewrap");
      expect(expectedMechanism({ mode: "auto", options: { mechanism: "auto" } }, installed)).toBe("bubblewrap");
      expect(expectedMechanism({ mode: "auto", options: {} }, none)).toBe("landlock");
    } finally {
      process.env.PATH = saved;
    }
  });
});
