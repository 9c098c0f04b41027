/**
 * The Landlock helper (native/ears-confine.c) run for real: its self-test and ABI detection, its argument grammar
 * against a model of it (fast-check, seeded), its refusal to run when a rule cannot be applied, what the kernel
 * enforces through it with no seccomp program (files, TCP, signals, capabilities), its process tree ended with
 * the command and with its host, and the arm64 build under qemu.
 */
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arm64Helper, hasLandlock, helperPath, landlockAbi } from "../../helpers/landlock.js";
import { isAlive, until } from "../../helpers/processes.js";

const helper = helperPath!;
const onPath = (name: string) => spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;

/** Runs the helper; its stdout and stderr as text. */
function confine(args: readonly string[], options: { input?: string; stdio?: ("pipe" | "ignore")[] } = {}): SpawnSyncReturns<string> {
  return spawnSync(helper, args, { encoding: "utf8", timeout: 60_000, ...options });
}

/** Runs the helper without blocking this process (whose servers must answer it); its stdout. */
function confineAsync(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(helper, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    child.on("error", reject);
    child.on("close", () => resolve(out));
  });
}

describe.runIf(hasLandlock)("the Landlock helper", () => {
  let dir: string;
  /** What node needs to start: the system, /proc, the loader's cache, /dev/null, and node itself. */
  let runtime: string[];
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-confine-test-")));
    const node = realpathSync(process.execPath);
    runtime = ["--ro", "/usr", "--ro", "/proc", "--ro", "/etc/ld.so.cache", "--rw", "/dev/null"];
    if (!node.startsWith("/usr/")) runtime.push("--ro", node);
    // Node reads OpenSSL's configuration at start.
    if (existsSync("/etc/ssl/openssl.cnf")) runtime.push("--ro", realpathSync("/etc/ssl/openssl.cnf"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe("self-test and ABI", () => {
    it("passes on this kernel and says its ABI", () => {
      const run = confine(["--self-test"]);
      expect(run.status).toBe(0);
      expect(run.stdout).toBe(`landlock-abi ${landlockAbi} ok\n`);
      expect(landlockAbi).toBeGreaterThanOrEqual(6);
    });

    it("refuses an ABI above the kernel's (exit 121), in the self-test and before a run; below the floor of 6 still asks for 6", () => {
      const above = String(landlockAbi + 1);
      const test = confine(["--self-test", "--abi-min", above]);
      expect(test.status).toBe(121);
      expect(test.stderr).toBe(`ears-confine: this kernel's Landlock ABI is ${landlockAbi}, below the ${above} required\n`);
      const marker = join(dir, "abi-ran");
      const run = confine(["--abi-min", above, ...runtime, "--rw", dir, "--", "/bin/sh", "-c", `: > ${marker}`]);
      expect(run.status).toBe(121);
      expect(existsSync(marker)).toBe(false);
      expect(confine(["--self-test", "--abi-min", "1"]).status).toBe(0);
    });
  });

  describe("rules that cannot be applied: refused, nothing runs, nothing left behind", () => {
    const marker = () => join(dir, `ran-${Math.random().toString(36).slice(2)}`);
    const attempt = (rules: string[]) => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const ran = marker();
      const run = confine(["--tmp", tmp, ...runtime, "--rw", dir, ...rules, "--", "/bin/sh", "-c", `: > ${ran}`]);
      return { run, ran: existsSync(ran), left: readdirSync(tmp) };
    };

    it.each([
      [["--ro", "/nonexistent-ears"], "ears-confine: cannot apply --ro /nonexistent-ears: No such file or directory"],
      [["--list", "/etc/hostname"], "ears-confine: cannot apply --list /etc/hostname: not a directory"],
    ])("%j", (rules, message) => {
      const { run, ran, left } = attempt(rules);
      expect(run.status).toBe(122);
      expect(run.stderr).toBe(`${message}\n`);
      expect(ran).toBe(false);
      expect(left).toEqual([]);
    });

    it("a path that is a link, or has one on its way, is refused (the host names real paths; a swapped link would widen)", () => {
      const real = mkdtempSync(join(dir, "real-"));
      mkdirSync(join(real, "inner"));
      symlinkSync(real, join(dir, "link"));
      for (const path of [join(dir, "link"), join(dir, "link", "inner")]) {
        const { run, ran } = attempt(["--ro", path]);
        expect(run.status).toBe(122);
        expect(run.stderr).toBe(`ears-confine: cannot apply --ro ${path}: a symbolic link is on its way (give real paths)\n`);
        expect(ran).toBe(false);
      }
    });

    it("a seccomp program that is not whole instructions, or a descriptor that is not open", () => {
      const ran = marker();
      const seven = spawnSync(
        "sh",
        ["-c", `printf 1234567 | ${helper} --seccomp-fd 3 ${runtime.join(" ")} --rw ${dir} -- /bin/sh -c ': > ${ran}' 3<&0`],
        { encoding: "utf8" },
      );
      expect(seven.status).toBe(122);
      expect(seven.stderr).toBe("ears-confine: the seccomp program on descriptor 3 is 7 bytes, not whole instructions\n");
      const closed = confine(["--seccomp-fd", "9", ...runtime, "--", "/bin/true"]);
      expect(closed.status).toBe(122);
      expect(closed.stderr).toMatch(/^ears-confine: cannot read the seccomp program on descriptor 9: Bad file descriptor\n$/);
      expect(existsSync(ran)).toBe(false);
    });

    it("a host already gone: --parent names another process, nothing runs (exit 123)", () => {
      const { status, stderr } = confine(["--parent", "1", ...runtime, "--", "/bin/true"]);
      expect(status).toBe(123);
      expect(stderr).toBe("ears-confine: the host (pid 1) is gone\n");
    });

    it("a command that cannot be found or run: 127 and 126, as a shell says", () => {
      expect(confine([...runtime, "--", "/nonexistent-ears/cmd"]).status).toBe(127);
      expect(confine([...runtime, "--", "/etc/hostname"]).status).toBe(126);
    });
  });

  describe("what the kernel enforces through it (no seccomp program: Landlock alone)", () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((socket) => socket.end("hello\n"));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    const node = (code: string, more: string[] = []) =>
      confine([...runtime, ...more, "--env", "PATH=/usr/bin:/bin", "--", realpathSync(process.execPath), "-e", code]);

    it("reads only what is granted; writes only what is granted read-write; lists a --list directory without reading it", () => {
      const shown = mkdtempSync(join(dir, "shown-"));
      writeFileSync(join(shown, "a.txt"), "shown");
      const listed = mkdtempSync(join(dir, "listed-"));
      writeFileSync(join(listed, "secret.txt"), "secret");
      const code = `const fs = require("node:fs"); const t = (f) => { try { return f(); } catch (e) { return e.code; } };
        console.log(JSON.stringify([
          t(() => fs.readFileSync(${JSON.stringify(join(shown, "a.txt"))}, "utf8")),
          t(() => fs.writeFileSync(${JSON.stringify(join(shown, "b.txt"))}, "x")),
          t(() => fs.readFileSync("/etc/hostname", "utf8")),
          t(() => fs.readdirSync(${JSON.stringify(listed)})),
          t(() => fs.readFileSync(${JSON.stringify(join(listed, "secret.txt"))}, "utf8")),
          t(() => fs.readFileSync("/proc/1/environ", "utf8")),
        ]));`;
      const run = node(code, ["--ro", shown, "--list", listed]);
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual(["shown", "EACCES", "EACCES", ["secret.txt"], "EACCES", "EACCES"]);
      const rw = node(`require("node:fs").writeFileSync(${JSON.stringify(join(shown, "b.txt"))}, "x")`, ["--rw", shown]);
      expect(rw.status).toBe(0);
      expect(readFileSync(join(shown, "b.txt"), "utf8")).toBe("x");
    });

    it("refuses TCP connect to 127.0.0.1 (EACCES) unless --net; refuses signalling a process outside the run", async () => {
      const code = `const s = require("node:net").connect(${port}, "127.0.0.1");
        s.on("data", (d) => { console.log("connected " + d.toString().trim()); s.destroy(); });
        s.on("error", (e) => console.log(e.code));
        try { process.kill(${process.pid}, 0); console.log("signalled"); } catch (e) { console.log("kill " + e.code); }`;
      const run = (more: string[]) =>
        confineAsync([...runtime, ...more, "--", realpathSync(process.execPath), "-e", code]).then((out) => out.trim().split("\n").sort());
      expect(await run([])).toEqual(["EACCES", "kill EPERM"]);
      expect(await run(["--net"])).toEqual(["connected hello", "kill EPERM"]);
    });

    it("leaves the command no capability, and no_new_privs set", () => {
      const run = confine([...runtime, "--", "/bin/sh", "-c", "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status"]);
      const lines = run.stdout.trim().split("\n");
      expect(lines.slice(0, 5).map((line) => line.replace(/\s+/g, " "))).toEqual([
        "CapInh: 0000000000000000",
        "CapPrm: 0000000000000000",
        "CapEff: 0000000000000000",
        "CapBnd: 0000000000000000",
        "CapAmb: 0000000000000000",
      ]);
      expect(lines[5]!.replace(/\s+/g, " ")).toBe("NoNewPrivs: 1");
    });

    it("gives the command a private TMPDIR and HOME, removed with the run; --env replaces the environment", () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const run = confine(["--tmp", tmp, ...runtime, "--env", "A=1", "--env", "HOME=/ignored", "--", "/usr/bin/env"]);
      const env = run.stdout.trim().split("\n").sort();
      expect(env).toEqual([
        "A=1",
        expect.stringMatching(new RegExp(`^HOME=${tmp}/ears-confine-\\w{6}/home$`)),
        expect.stringMatching(/^TMPDIR=/),
      ]);
      expect(readdirSync(tmp)).toEqual([]);
    });
  });

  describe("the run's tree", () => {
    it("exits with the command's status, a signal as 128+n", () => {
      expect(confine([...runtime, "--", "/bin/sh", "-c", "exit 7"]).status).toBe(7);
      expect(confine([...runtime, "--", "/bin/sh", "-c", "kill -TERM $$"]).status).toBe(143);
    });

    it("a detached child (setsid and a double fork) is gone when the command ends", async () => {
      const out = mkdtempSync(join(dir, "tree-"));
      const pidFile = join(out, "pid");
      const run = confine([
        ...runtime,
        "--rw",
        out,
        "--",
        "/bin/sh",
        "-c",
        `setsid /bin/sh -c '/bin/sleep 1000 & echo $! > ${pidFile}' </dev/null >/dev/null 2>&1 & wait`,
      ]);
      expect(run.status).toBe(0);
      const pid = Number(readFileSync(pidFile, "utf8"));
      expect(pid).toBeGreaterThan(1);
      // The helper returned only after killing and reaping its whole tree.
      expect(isAlive(pid)).toBe(false);
    });

    it("a SIGKILLed host (the helper's parent) leaves no descendant", async () => {
      const out = mkdtempSync(join(dir, "host-"));
      const pidFile = join(out, "pid");
      const command = [helper, "--parent", "$$", ...runtime, "--rw", out, "--", "/bin/sh", "-c"];
      const publish = `echo \\$! > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}`;
      const inner = `setsid /bin/sh -c '/bin/sleep 1000 & ${publish}' </dev/null >/dev/null 2>&1; /bin/sleep 1000`;
      const host = spawn("/bin/sh", ["-c", `${command.join(" ")} "${inner}" & wait`], { stdio: "ignore" });
      expect(await until(() => existsSync(pidFile))).toBe(true);
      const pid = Number(readFileSync(pidFile, "utf8"));
      expect(isAlive(pid)).toBe(true);
      host.kill("SIGKILL");
      expect(await until(() => !isAlive(pid))).toBe(true);
    }, 60_000);
  });

  describe("the argument grammar (fast-check against a model of it)", () => {
    const paths = ["/usr", "/nonexistent-ears", "relative/path", "", "/"];
    const numbers = ["3", "0", "03", "7", "-1", "x", "1023", "1024", "4194304", "99999999999", "255", "256"];
    const envs = ["A=1", "=1", "1A=x", "A", "_x=", "A B=1"];
    const values = [...paths, ...numbers, ...envs, "--", "--net"];
    const flag = fc.constantFrom(
      "--ro",
      "--rw",
      "--list",
      "--tmp",
      "--env",
      "--seccomp-fd",
      "--abi-min",
      "--parent",
      "--net",
      "--self-test",
      "--bogus",
    );
    const item = fc
      .tuple(flag, fc.constantFrom(...values))
      .map(([name, value]) => (["--net", "--self-test", "--bogus"].includes(name) ? [name] : [name, value]));
    const line = fc.record({
      items: fc.array(item, { maxLength: 6 }),
      dash: fc.boolean(),
      command: fc.constantFrom([], ["/bin/true"], ["true"], ["/nonexistent-ears/cmd", "a"], [""]),
      cut: fc.boolean(),
    });

    it("rejects exactly the malformed command lines (exit 120, one usage line), accepts the rest", () => {
      fc.assert(
        fc.property(line, ({ items, dash, command, cut }) => {
          let args = [...items.flat(), ...(dash ? ["--", ...command] : [])];
          // Sometimes cut off after an option, so that its value is missing.
          if (cut && args.length > 0 && !dash) args = args.slice(0, -1);
          const expected = usageProblem(args);
          const run = confine(args, { stdio: ["ignore", "pipe", "pipe"] });
          if (expected) {
            expect(run.status, args.join(" ")).toBe(120);
            expect(run.stderr, args.join(" ")).toMatch(/^ears-confine: usage: [^\n]+\n$/);
          } else expect(run.status, `${args.join(" ")}: ${run.stderr}`).not.toBe(120);
        }),
        { seed: 42, numRuns: 150 },
      );
    });

    it("--help prints the grammar", () => {
      const run = confine(["--help"]);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^usage: ears-confine \[--ro PATH\]/);
    });
  });
});

/** The grammar, as docs/host.md states it: whether the helper must refuse `args` as malformed. */
function usageProblem(args: readonly string[]): boolean {
  const once = new Set<string>();
  let selfTest = false;
  let others = false;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      i++;
      break;
    }
    const value = args[i + 1];
    if (arg === "--net" || arg === "--self-test") {
      if (once.has(arg)) return true;
      once.add(arg);
      if (arg === "--self-test") selfTest = true;
      else others = true;
      continue;
    }
    if (["--ro", "--rw", "--list", "--tmp"].includes(arg)) {
      if (value === undefined || !value.startsWith("/")) return true;
      if (arg === "--tmp") {
        if (once.has(arg)) return true;
        once.add(arg);
      }
      others = true;
      i++;
      continue;
    }
    if (arg === "--env") {
      if (value === undefined || !/^[A-Za-z_][A-Za-z0-9_]*=/.test(value)) return true;
      others = true;
      i++;
      continue;
    }
    if (["--seccomp-fd", "--abi-min", "--parent"].includes(arg)) {
      const max = arg === "--seccomp-fd" ? 1023 : arg === "--abi-min" ? 255 : 4194304;
      if (value === undefined || !/^(0|[1-9][0-9]{0,9})$/.test(value) || Number(value) > max) return true;
      if (once.has(arg)) return true;
      once.add(arg);
      const n = Number(value);
      if ((arg === "--seccomp-fd" && n < 3) || n < 1) return true;
      if (arg !== "--abi-min") others = true;
      i++;
      continue;
    }
    return true;
  }
  const dashed = args.slice(0, i).includes("--") && args[i - 1] === "--";
  if (selfTest) return dashed || others;
  if (!dashed) return true;
  return i >= args.length || !args[i]!.startsWith("/");
}

const qemu = process.arch === "x64" && onPath("qemu-aarch64-static") && existsSync(arm64Helper);
describe.runIf(qemu)("the arm64 build, under qemu-aarch64-static", () => {
  const arm = (args: string[]) => spawnSync("qemu-aarch64-static", [arm64Helper, ...args], { encoding: "utf8", timeout: 60_000 });

  it("runs, parses its arguments as the x64 build does, and its self-test answers (qemu 7 passes no Landlock call through)", () => {
    expect(arm(["--help"])).toMatchObject({ status: 0, stdout: expect.stringMatching(/^usage: ears-confine /) });
    expect(arm(["--ro", "relative", "--", "/bin/true"])).toMatchObject({
      status: 120,
      stderr: 'ears-confine: usage: --ro needs an absolute path, not "relative"\n',
    });
    const test = arm(["--self-test"]);
    // A qemu that passes Landlock through gives the kernel's answer; qemu 7.2 (Debian 12) answers ENOSYS.
    if (test.status === 0) expect(test.stdout).toMatch(/^landlock-abi \d+ ok\n$/);
    else {
      expect(test.status).toBe(121);
      expect(test.stderr).toBe("ears-confine: this kernel offers no Landlock (Linux 6.12 or later with Landlock enabled is needed)\n");
    }
  });
});

describe.runIf(hasLandlock)("a path gone between the host's plan and the helper's rules", () => {
  it("the helper refuses the run (exit 122, nothing started) and the host reads that back as SandboxUnavailable", async () => {
    const { planSandbox, spawnConfined } = await import("../../../src/host/sandbox/index.js");
    const { confineFailure } = await import("../../../src/host/sandbox/landlock.js");
    const base = realpathSync(mkdtempSync(join(tmpdir(), "ears-ll-gone-")));
    try {
      const shown = join(base, "shown");
      mkdirSync(shown);
      const marker = join(base, "ran");
      const launch = { command: "/bin/sh", args: ["-c", `: > ${marker}`], cwd: base, env: { PATH: "/usr/bin:/bin" }, discover: false };
      const plan = await planSandbox({ mode: "required", options: { mechanism: "landlock", readable: [shown], writable: [base] } }, launch);
      if (plan.kind !== "confined") throw new Error(JSON.stringify(plan));
      rmSync(shown, { recursive: true });
      const child = spawnConfined(plan, { cwd: base, detached: true });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
      expect(code).toBe(122);
      expect(stderr).toBe(`ears-confine: cannot apply --ro ${shown}: No such file or directory\n`);
      expect(existsSync(marker)).toBe(false);
      expect(confineFailure({ exit: { code }, stderr })).toBe(
        `the Landlock helper refused to start it: cannot apply --ro ${shown}: No such file or directory`,
      );
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
