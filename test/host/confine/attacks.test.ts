/**
 * A fresh attack of the least-privilege sandbox (issue 17), run for real under bubblewrap (as root in CI).
 * Each test names its attack. Attacks the sandbox stops are ordinary tests; attacks that get through are
 * `it.fails` with a `// BUG:` comment saying what leaks and where; those marked "Was a hole" got through
 * when this suite was written and were fixed after (each failed on the code before its fix).
 */
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { createServer } from "node:net";
import {
  closeSync,
  lstatSync,
  openSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCode, runGuest } from "../../../src/host/index.js";
import { MASK_BUDGET } from "../../../src/host/sandbox/policy.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

const hasBwrap = bwrapPath !== undefined;
const has = (path: string) => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** A guest body that reads each path and answers "ok: <text>" or "blocked: <code>" for each. */
const readAll = (paths: string[]) => `const fs = process.getBuiltinModule("node:fs");
  return ${JSON.stringify(paths)}.map((p) => {
    try { return "ok: " + fs.readFileSync(p, "utf8"); } catch (e) { return "blocked: " + e.code; }
  });`;

describe.runIf(process.platform === "linux" && hasBwrap)("attacks on the sandbox (issue 17)", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-attack-")));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  const dir = (prefix: string) => mkdtempSync(join(base, `${prefix}-`));
  const body = (code: string, options: Omit<Parameters<typeof runCode>[0], "code"> = {}) => runCode({ code, sandbox: true, ...options });

  describe("secrets masked by name", () => {
    // Issue 41: more credential names, and a name at any depth (a/b/c/d/.env), read by a real sandboxed body.
    it("the credential files of AI tools, clouds and frameworks read empty at any depth", async () => {
      const proj = dir("names");
      const names = [
        ".my.cnf",
        "client_secret_123.apps.googleusercontent.com.json",
        "token.json",
        "app-firebase-adminsdk-x1y2z-0123456789.json",
        ".claude/.credentials.json",
        ".codex/auth.json",
        ".config/github-copilot/hosts.json",
        "appsettings.Production.json",
        "wp-config.php",
        ".config/doctl/config.yaml",
        ".ssh-keys/id_ed25519_sk",
        ".vercel/auth.json",
        "a/b/c/d/.env",
        "a/b/c/d/e/f/g/.npmrc",
      ];
      for (const name of names) {
        mkdirSync(join(proj, name, ".."), { recursive: true });
        writeFileSync(join(proj, name), "SECRET");
      }
      writeFileSync(join(proj, "a/b/c/d/notes.txt"), "shown");
      const report = await body(readAll([...names, "a/b/c/d/notes.txt"]), { cwd: proj });
      const seen = report.outcome?.structured as string[];
      expect(seen.slice(0, -1).every((read) => read !== "ok: SECRET")).toBe(true);
      expect(seen.at(-1)).toBe("ok: shown");
    });

    // Was a hole (fixed): the mask is mounted at the real path only (policy.ts secretsIn walks real paths; bubblewrap.ts
    // binds the directory a second time where it was given, at `bind(cwd, resolve(launch.cwd))`,
    // policy.ts:258). The second bind is a separate mount that never gets the /dev/null over .env, and
    // the guest's own working directory IS the given path: `cat .env` prints the secret.
    it("a working directory given through a link: ./.env is masked at the link path too", async () => {
      const real = dir("real");
      writeFileSync(join(real, ".env"), "API_KEY=via-link");
      const link = join(base, `link-${Date.now()}`);
      symlinkSync(real, link);
      const report = await body(readAll([".env", join(link, ".env"), join(real, ".env")]), { cwd: link });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual(["blocked: EACCES", "blocked: EACCES", "blocked: EACCES"]);
    });

    // Was a hole (fixed): the same for a `readable` path given through a link (policy.ts addNamed: bind(real, given)).
    it("a readable path given through a link: its .env is masked at the given path too", async () => {
      const real = dir("real-r");
      writeFileSync(join(real, ".env"), "API_KEY=readable-link");
      const link = join(base, `rlink-${Date.now()}`);
      symlinkSync(real, link);
      const report = await body(readAll([join(link, ".env")]), { sandbox: { readable: [link] } });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual(["blocked: EACCES"]);
    });

    // Was a hole (fixed): packages linked from an ancestor's node_modules (workspaces) are bound with walk=false
    // (policy.ts:274, `addFound(linked, at, false)`), so their .env, .npmrc, .git are shown unmasked,
    // although the policy says "Inside every shown directory, files that usually hold secrets are masked".
    it("a monorepo workspace: a sibling package linked from the root node_modules has its .env masked", async () => {
      const repo = dir("repo");
      mkdirSync(join(repo, "packages", "web"), { recursive: true });
      mkdirSync(join(repo, "packages", "lib"), { recursive: true });
      mkdirSync(join(repo, "node_modules", "@me"), { recursive: true });
      writeFileSync(join(repo, "package.json"), '{"private":true}');
      writeFileSync(join(repo, "packages", "lib", ".env"), "DB_PASSWORD=sibling");
      symlinkSync("../../packages/lib", join(repo, "node_modules", "@me", "lib"));
      const guest = join(repo, "packages", "web", "guest.mjs");
      writeFileSync(
        guest,
        `import { readFileSync } from "node:fs";
        try { readFileSync(${JSON.stringify(join(repo, "packages", "lib", ".env"))}, "utf8"); process.exit(3); }
        catch { process.exit(4); }`,
      );
      const report = await runGuest({ command: process.execPath, args: [guest], cwd: join(repo, "packages", "web"), sandbox: true });
      expect(report.sandbox?.readable).toContain(join(repo, "packages", "lib")); // the link is followed (inside the repo)
      expect(report.exit?.code).toBe(4); // 3: the sibling's .env was read
    });

    // Was a hole (fixed): the mask walk is cached per host process (index.ts maskCache; policy.ts MaskCache.reuse) and
    // trusts directory mtimes, which a guest that may write the directory sets back with `touch -r`.
    // Run 1 moves the masked config/ away, puts a decoy config/.env in its place and restores both
    // mtimes; run 2 (read-only!) reuses the stale mask list, masks the decoy and reads moved/.env.
    it("mask-cache poisoning: a writable run moves config/.env and restores mtimes; the next run still cannot read it", async () => {
      const proj = dir("cache");
      mkdirSync(join(proj, "config"));
      writeFileSync(join(proj, "config", ".env"), "TOKEN=cached-away");
      const old = new Date(Date.now() - 3_600_000); // a project untouched for an hour (older than RACY_MS)
      utimesSync(join(proj, "config"), old, old);
      utimesSync(proj, old, old);
      const plant = await body(
        `const cp = process.getBuiltinModule("node:child_process");
        cp.execFileSync("sh", ["-c", 'touch -r . /tmp/ref-top && touch -r config /tmp/ref-config && mv config moved && ' +
          'mkdir config && : > config/.env && touch -r /tmp/ref-config config && touch -r /tmp/ref-top .']);
        return "planted";`,
        { cwd: proj, sandbox: { writable: [proj] } },
      );
      expect(plant.outcome?.structured).toBe("planted");
      expect(lstatSync(join(proj, "moved", ".env")).isFile()).toBe(true);
      const report = await body(readAll([join(proj, "moved", ".env")]), { cwd: proj });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual(["blocked: EACCES"]);
    });

    it("the same plant without restored mtimes: the next run walks again and masks moved/.env (the cache is the hole)", async () => {
      const proj = dir("cache-control");
      mkdirSync(join(proj, "config"));
      writeFileSync(join(proj, "config", ".env"), "TOKEN=cached-away");
      const old = new Date(Date.now() - 3_600_000);
      utimesSync(join(proj, "config"), old, old);
      utimesSync(proj, old, old);
      const plant = await body(
        `const cp = process.getBuiltinModule("node:child_process");
        cp.execFileSync("sh", ["-c", "mv config moved && mkdir config && : > config/.env"]); return "planted";`,
        { cwd: proj, sandbox: { writable: [proj] } },
      );
      expect(plant.outcome?.structured).toBe("planted");
      const report = await body(readAll([join(proj, "moved", ".env")]), { cwd: proj });
      expect(report.outcome?.structured).toEqual(["blocked: EACCES"]);
    });

    // Run 1 (writable) moves config/ (with the host's config/.env, masked in run 1) three levels down; run 2,
    // read-only, must not read it.
    // Was a hole (fixed: names are checked at every depth the walk reads): moving a masked secret deeper un-masked it.
    it("a writable run moves a masked nested secret deeper; the next run still cannot read it", async () => {
      const proj = dir("deeper");
      mkdirSync(join(proj, "config"));
      writeFileSync(join(proj, "config", ".env"), "TOKEN=moved-deep");
      const plant = await body(
        `const fs = process.getBuiltinModule("node:fs");
        let before; try { before = fs.readFileSync("config/.env", "utf8"); } catch (e) { before = e.code; }
        fs.mkdirSync("a/b/c", { recursive: true }); fs.renameSync("config", "a/b/c/config"); return before;`,
        { cwd: proj, sandbox: { writable: [proj] } },
      );
      expect(plant.outcome?.structured).toBe("EACCES"); // masked in run 1, yet movable
      const report = await body(readAll([join(proj, "a/b/c/config/.env")]), { cwd: proj });
      expect(report.outcome?.structured).toEqual(["blocked: EACCES"]);
    });

    // Was a hole (fixed): spawned proof of policy.attacks.test.ts "naming a parent directory readable un-masks…": the cwd's
    // a/b/.env is masked alone, and shown once the host also names the cwd's parent readable (policy.ts
    // secretsIn walks only the outermost root, MASK_DEPTH levels from it).
    it("naming the working directory's parent readable leaves a/b/.env in the working directory masked", async () => {
      const parent = dir("parent");
      const proj = join(parent, "proj");
      mkdirSync(join(proj, "a", "b"), { recursive: true });
      writeFileSync(join(proj, "a", "b", ".env"), "TOKEN=parent-named");
      const alone = await body(readAll(["a/b/.env"]), { cwd: proj });
      expect(alone.outcome?.structured).toEqual(["blocked: EACCES"]);
      const withParent = await body(readAll(["a/b/.env"]), { cwd: proj, sandbox: { readable: [parent] } });
      expect(withParent.outcome?.structured).toEqual(["blocked: EACCES"]);
    });

    it("a .env that is a link to a file outside every shown path is not readable (the link dangles inside)", async () => {
      const proj = dir("envlink");
      const outside = dir("outside");
      writeFileSync(join(outside, "prod.env"), "SECRET=outside");
      symlinkSync(join(outside, "prod.env"), join(proj, ".env"));
      const report = await body(readAll([".env"]), { cwd: proj });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.structured).toEqual(["blocked: ENOENT"]);
    });

    it("a FIFO and a unix socket named .env, a FIFO package.json: the host's walk and lookups do not block on them", async () => {
      const proj = dir("fifo");
      execFileSync("mkfifo", [join(proj, ".env")]);
      execFileSync("mkfifo", [join(proj, "package.json")]);
      mkdirSync(join(proj, "node_modules"));
      execFileSync("mkfifo", [join(proj, "node_modules", "x")]);
      const server = createServer().listen(join(proj, ".env.local"));
      await new Promise((resolve) => server.once("listening", resolve));
      try {
        const report = await runGuest({ command: process.execPath, args: ["--eval", "process.exit(5)"], cwd: proj, sandbox: true });
        expect(report.exit?.code).toBe(5);
        // Not shown as a package.json of its own (only a file or a directory is, issue 28.7); masked where the working directory shows it.
        expect(report.sandbox?.readable).not.toContain(join(proj, "package.json"));
        expect(report.sandbox?.masked).toEqual(expect.arrayContaining([join(proj, "package.json"), join(proj, "node_modules", "x")]));
      } finally {
        server.close();
      }
    });

    it(`a tree over the mask budget (${MASK_BUDGET} entries) is refused with a clear error; a 300-deep tree starts`, async () => {
      const big = dir("budget");
      for (let i = 0; i <= MASK_BUDGET; i++) writeFileSync(join(big, `f${i}`), "");
      const refused = await body("return 1;", { cwd: big });
      expect(refused.failure?.code).toBe("SandboxUnavailable");
      expect(refused.failure?.message).toMatch(/too many to check for secrets/);
      const deep = dir("deep");
      let at = deep;
      for (let i = 0; i < 300; i++) at = join(at, "d");
      mkdirSync(at, { recursive: true });
      const ok = await body("return 2;", { cwd: deep });
      expect(ok.failure).toBeUndefined();
    });
  });

  describe("links that loop or chain", () => {
    it("a cwd that is a link loop, a readable path 45 links deep: SandboxUnavailable naming the path", async () => {
      const loops = dir("loop");
      symlinkSync(join(loops, "b"), join(loops, "a"));
      symlinkSync(join(loops, "a"), join(loops, "b"));
      const loop = await body("return 1;", { cwd: join(loops, "a") });
      expect(loop.failure?.code).toBe("SandboxUnavailable");
      expect(loop.failure?.message).toMatch(/ELOOP/);
      const chain = dir("chain");
      mkdirSync(join(chain, "target"));
      let previous = "target";
      for (let i = 0; i < 45; i++) {
        symlinkSync(previous, join(chain, `l${i}`));
        previous = `l${i}`;
      }
      const long = await body("return 1;", { sandbox: { readable: [join(chain, previous)] } });
      expect(long.failure?.code).toBe("SandboxUnavailable");
      expect(long.failure?.message).toContain(join(chain, previous));
    });

    it("node_modules, node_modules/x and package.json that loop do not hang or crash a complete guest's start", async () => {
      const proj = dir("nmloop");
      symlinkSync("node_modules", join(proj, "node_modules"));
      symlinkSync("package.json", join(proj, "package.json"));
      const inner = dir("nmloop-inner");
      mkdirSync(join(inner, "node_modules", "@s"), { recursive: true });
      symlinkSync("x", join(inner, "node_modules", "x"));
      symlinkSync("../@s", join(inner, "node_modules", "@s", "self"));
      for (const cwd of [proj, inner]) {
        const script = join(cwd, "guest.mjs");
        writeFileSync(script, "process.exit(5);");
        const report = await runGuest({ command: process.execPath, args: [script], cwd, sandbox: true });
        expect(report.exit?.code, cwd).toBe(5);
      }
    });

    it("a script argument that is a chain of links leading out of its directory: the target stays hidden", async () => {
      const outside = dir("script-out");
      writeFileSync(join(outside, "secret.mjs"), "process.exit(3);");
      writeFileSync(join(outside, "token.txt"), "t0ken");
      const proj = dir("script-in");
      symlinkSync(join(outside, "secret.mjs"), join(proj, "c"));
      symlinkSync("c", join(proj, "b"));
      symlinkSync("b", join(proj, "a"));
      const report = await runGuest({ command: process.execPath, args: [join(proj, "a")], cwd: proj, sandbox: true });
      expect(report.exit?.code).not.toBe(3);
      expect(JSON.stringify(report.sandbox)).not.toContain(outside);
    });
  });

  describe("paths that look like bubblewrap options", () => {
    it("a working directory named --bind and a readable path with a newline, spaces and `--` are data, not bwrap options", async () => {
      const holder = dir("argv");
      const cwd = join(holder, "--bind");
      mkdirSync(cwd);
      writeFileSync(join(cwd, "in-cwd.txt"), "cwd-ok");
      const odd = join(holder, "-- \n--ro-bind x ");
      mkdirSync(odd);
      writeFileSync(join(odd, "x.txt"), "odd-ok");
      const report = await body(readAll(["in-cwd.txt", join(odd, "x.txt"), "/etc/hostname", "/root"]), {
        cwd,
        sandbox: { readable: [odd] },
      });
      expect(report.failure).toBeUndefined();
      // /root is not there, unless the host's Node lives under it (~/.cache/ears-node, ~/.nvm): then it is the
      // way to that one binary and nothing else (node-under-home.test.ts).
      const root = process.execPath.startsWith("/root/") ? "blocked: EISDIR" : "blocked: ENOENT";
      expect(report.outcome?.structured).toEqual(["ok: cwd-ok", "ok: odd-ok", "blocked: ENOENT", root]);
      expect(report.sandbox?.readable).toContain(odd);
    });
  });

  describe("seccomp and setuid plants", () => {
    it("no setuid/setgid file lands in a writable path: chmod(1), install -m 4755, cp -p, cp -a, ln, perl, python3", async () => {
      const w = dir("suid");
      const code = `
        const fs = process.getBuiltinModule("node:fs");
        const cp = process.getBuiltinModule("node:child_process");
        const W = ${JSON.stringify(w)};
        const out = {};
        const sh = (k, cmd, args) => {
          try { cp.execFileSync(cmd, args, { stdio: "pipe" }); out[k] = "ran"; }
          catch (e) { out[k] = "refused: " + String(e.stderr).trim().split("\\n").pop(); }
        };
        fs.writeFileSync(W + "/plain", "x");
        sh("chmod", "/bin/chmod", ["6755", W + "/plain"]);
        sh("install", "install", ["-m", "4755", "/usr/bin/id", W + "/inst"]);
        sh("cp-p", "cp", ["--preserve=mode", "/usr/bin/passwd", W + "/cp-p"]);
        sh("cp-a", "cp", ["-a", "/usr/bin/passwd", W + "/cp-a"]);
        try { fs.linkSync("/usr/bin/passwd", W + "/hard"); out.link = "ran"; } catch (e) { out.link = e.code; }
        if (fs.existsSync("/usr/bin/perl")) sh("perl", "/usr/bin/perl", ["-e", "chmod(04755, '" + W + "/plain') or die"]);
        if (fs.existsSync("/usr/bin/python3")) {
          sh("py-chmod", "/usr/bin/python3", ["-c", "import os; os.chmod('" + W + "/plain', 0o4755)"]);
          sh("py-open", "/usr/bin/python3", ["-c", "import os; os.close(os.open('" + W + "/py-open', os.O_CREAT | os.O_WRONLY, 0o4755))"]);
          sh("py-mknod", "/usr/bin/python3", ["-c", "import os, stat; os.mknod('" + W + "/py-mknod', stat.S_IFREG | 0o4755)"]);
          sh("py-fchmod", "/usr/bin/python3", ["-c", "import os; fd = os.open('" + W + "/plain', os.O_RDONLY); os.fchmod(fd, 0o2755)"]);
          const caps = "b'\\\\x01\\\\x00\\\\x00\\\\x02' + b'\\\\xff' * 16";
          sh("py-xattr", "/usr/bin/python3", ["-c", "import os; os.setxattr('" + W + "/plain', 'security.capability', " + caps + ")"]);
        }
        return out;`;
      const report = await body(code, { sandbox: { writable: [w] } });
      expect(report.failure).toBeUndefined();
      const out = report.outcome?.structured as Record<string, string>;
      expect(out.chmod).toMatch(/^refused: .*Operation not permitted/);
      expect(out.link).toBe("EXDEV");
      for (const name of readdirSync(w)) expect(statSync(join(w, name)).mode & 0o6000, `${name} on the host`).toBe(0);
      if (has("/usr/bin/python3")) {
        for (const key of ["py-chmod", "py-open", "py-mknod", "py-fchmod", "py-xattr"])
          expect(out[key], key).toMatch(/PermissionError|not permitted/);
      }
    });

    it("no kernel setting opens for writing via /proc/self/root, /proc/1/root, sysctl -w; the sandbox's init is filtered too", async () => {
      const code = `
        const fs = process.getBuiltinModule("node:fs");
        const cp = process.getBuiltinModule("node:child_process");
        const out = {};
        for (const p of ["/proc/self/root/proc/sys/kernel/core_pattern", "/proc/1/root/proc/sys/kernel/core_pattern",
                         "/proc/1/task/1/root/proc/sys/vm/overcommit_memory", "/proc/self/cwd/../../../../proc/sys/fs/suid_dumpable"]) {
          try { fs.closeSync(fs.openSync(p, "r+")); out[p] = "opened"; } catch (e) { out[p] = e.code; }
        }
        try { cp.execFileSync("/usr/sbin/sysctl", ["-w", "kernel.core_pattern=|/tmp/pwn"], { stdio: "pipe" }); out.sysctl = "ran"; }
        catch (e) { out.sysctl = "refused"; }
        const init = fs.readFileSync("/proc/1/status", "utf8");
        out.initSeccomp = /^Seccomp:\\s*2/m.test(init); out.initNoNewPrivs = /^NoNewPrivs:\\s*1/m.test(init);
        out.initCaps = /^CapEff:\\s*0+$/m.test(init);
        return out;`;
      const report = await body(code);
      expect(report.failure).toBeUndefined();
      const out = report.outcome?.structured as Record<string, unknown>;
      for (const [key, value] of Object.entries(out)) {
        if (key.startsWith("/")) expect(value, key).not.toBe("opened");
      }
      if (has("/usr/sbin/sysctl")) expect(out.sysctl).toBe("refused");
      expect(out).toMatchObject({ initSeccomp: true, initNoNewPrivs: true, initCaps: true });
    });
  });

  describe("descriptors the host inherited", () => {
    /** Starts a host holding a directory on / as fd 40 and a secret file as fd 41; its guest reports what it sees through them. */
    const inheritedRun = (sandbox: boolean) => {
      const d = dir("fds-inherited");
      writeFileSync(join(d, "secret.txt"), "inherited-secret");
      const dist = new URL("../../../dist/host/index.js", import.meta.url).href;
      writeFileSync(
        join(d, "host.mjs"),
        `import { runGuest } from ${JSON.stringify(dist)};
        const code = 'const fs = require("node:fs"); const out = { fds: fs.readdirSync("/proc/self/fd").map(Number) };' +
          'try { out.root = fs.readdirSync("/proc/self/fd/40").length; } catch (e) { out.root = e.code; }' +
          'try { out.file = fs.readFileSync("/proc/self/fd/41", "utf8"); } catch (e) { out.file = e.code; }' +
          'process.stderr.write(JSON.stringify(out));';
        const cwd = ${JSON.stringify(d)};
        const r = await runGuest({ command: process.execPath, args: ["-e", code], cwd, sandbox: ${sandbox}, killGraceMs: 200 });
        const seen = JSON.parse(r.stderr.trim().split("\\n").pop());
        process.stdout.write(JSON.stringify({ ...seen, mechanism: r.sandbox?.mechanism ?? "none" }));`,
      );
      const rootFd = openSync("/", "r");
      const fileFd = openSync(join(d, "secret.txt"), "r");
      try {
        const stdio = ["ignore", "pipe", "inherit", ...Array<"ignore">(37).fill("ignore"), rootFd, fileFd];
        const out = execFileSync(process.execPath, [join(d, "host.mjs")], { stdio: stdio as never, encoding: "utf8", timeout: 30_000 });
        return JSON.parse(out) as { fds: number[]; root: unknown; file: unknown; mechanism: string };
      } finally {
        closeSync(rootFd);
        closeSync(fileFd);
      }
    };

    // Was a hole (fixed): nothing closes the host's inherited descriptors (issue 17 "Only 0, 1, 2" is not implemented:
    // src/host/sandbox/index.ts spawnConfined passes only stdio, and Node/libuv leave every other
    // descriptor the host inherited without close-on-exec open; bwrap does not close them in the guest).
    // A sandboxed guest lists 26 entries of the HOST's / through /proc/self/fd/40 and reads fd 41's file.
    it("a host holding / as fd 40 and a secret file as fd 41: a sandboxed guest reads neither", () => {
      const seen = inheritedRun(true);
      expect(seen.mechanism).toBe("bubblewrap");
      expect(seen.fds.filter((fd) => fd === 40 || fd === 41)).toEqual([]);
      expect(seen.root).not.toEqual(expect.any(Number));
      expect(seen.file).not.toBe("inherited-secret");
    });

    // Was a hole (fixed): the same unconfined (run-guest.ts spawns with Node's defaults), which the issue asks for
    // "where the platform allows" (Linux: close_range or a /proc/self/fd sweep in a small launcher).
    it("the same host: an unconfined guest does not get fds 40 and 41 either", () => {
      const seen = inheritedRun(false);
      expect(seen.fds.filter((fd) => fd === 40 || fd === 41)).toEqual([]);
      expect(seen.file).not.toBe("inherited-secret");
    });
  });

  describe("network", () => {
    // Was a hole (fixed): a unix socket is reached by its path, not through the network namespace: with
    // `network: false` (report.sandbox.network false) the guest talks to any host service whose socket
    // lies in a shown directory (an ssh-agent, a docker or database socket in the project). bubblewrap.ts
    // binds directories whole; policy.ts walkForSecrets ignores entries of kind "other".
    it("a network-less guest cannot connect to a host server's unix socket in its working directory", async () => {
      const proj = dir("sock");
      const server = createServer((socket) => socket.end("HOST-SERVICE\n")).listen(join(proj, "service.sock"));
      await new Promise((resolve) => server.once("listening", resolve));
      try {
        const report = await body(
          `const net = process.getBuiltinModule("node:net");
          return await new Promise((resolve) => { const s = net.connect(${JSON.stringify(join(proj, "service.sock"))}); let d = "";
            s.on("data", (b) => (d += b)); s.on("end", () => resolve("connected: " + d.trim()));
            s.on("error", (e) => resolve(e.code)); });`,
          { cwd: proj },
        );
        expect(report.sandbox?.network).toBe(false);
        expect(report.outcome?.structured).not.toBe("connected: HOST-SERVICE");
      } finally {
        server.close();
      }
    });
  });

  it("a network-less guest cannot reach a host server on an abstract unix socket (its own network namespace)", async () => {
    const name = `\0ears-attack-${process.pid}-${Date.now()}`;
    const server = createServer((socket) => socket.end("HOST-ABSTRACT\n")).listen(name);
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      const reach = `const net = process.getBuiltinModule("node:net");
        return await new Promise((resolve) => { const s = net.connect(${JSON.stringify(name)}); let d = "";
          s.on("data", (b) => (d += b)); s.on("end", () => resolve("connected: " + d.trim()));
          s.on("error", (e) => resolve(e.code)); });`;
      const confined = await body(reach);
      expect(confined.outcome?.structured).toBe("ECONNREFUSED");
      const open = await body(reach, { sandbox: false });
      expect(open.outcome?.structured).toBe("connected: HOST-ABSTRACT"); // the test can fail
    } finally {
      server.close();
    }
  });

  describe("the closed-stdout watch", () => {
    const rawGuest = (path: string, fd: number, before: string, after: string) =>
      writeFileSync(
        path,
        `import { writeSync, closeSync } from "node:fs"; import { createInterface } from "node:readline";
        const w = (f) => writeSync(${fd}, JSON.stringify(f) + "\\n");
        ${before}
        w({ type: "hello", protocol: 1 });
        for await (const line of createInterface({ input: process.stdin })) {
          if (JSON.parse(line).type !== "invoke") continue;
          ${after}
          setInterval(() => {}, 1000);
        }`,
      );

    it("a guest that dups stdout to fd 7, closes fd 1 and writes its frames on fd 7 a second later is not cut off", async () => {
      const d = dir("dup7");
      rawGuest(
        join(d, "g.mjs"),
        7,
        "await new Promise((r) => setTimeout(r, 1200));",
        `w({ type: "result", outcome: { status: "success", content: "via fd 7" } });`,
      );
      const report = await runGuest({
        command: "/bin/sh",
        args: ["-c", `exec 7>&1; exec 1>&-; exec ${process.execPath} ${join(d, "g.mjs")}`],
        cwd: d,
        // The command is sh: Node is only its argument, shown by name wherever it lives (/usr, or a user's ~/.cache).
        sandbox: { readable: [d, process.execPath] },
        killGraceMs: 300,
      });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.content).toBe("via fd 7");
    });

    it("a guest that fills the pipe behind a slow reader, then closes stdout and lives on: no frame is lost", async () => {
      const d = dir("fill");
      rawGuest(
        join(d, "g.mjs"),
        1,
        "",
        `for (let i = 0; i < 8; i++) w({ type: "log", level: "info", content: String(i).padEnd(32 * 1024, ".") });
        w({ type: "result", outcome: { status: "success", content: "all sent" } });
        closeSync(1);`,
      );
      const seen: number[] = [];
      const report = await runGuest({
        command: process.execPath,
        args: [join(d, "g.mjs")],
        cwd: d,
        sandbox: true,
        killGraceMs: 300,
        // A slow consumer (350 ms a line): after the guest closes fd 1, two frames still wait in the pipe
        // for over 500 ms (two watch ticks).
        onFrame: (direction) => (direction === "guest" ? new Promise((resolve) => setTimeout(resolve, 350)) : undefined),
        onLog: ({ content }) => seen.push(Number.parseInt(content, 10)),
      });
      expect(report.failure).toBeUndefined();
      expect(report.outcome?.content).toBe("all sent");
      expect(seen).toEqual(Array.from({ length: 8 }, (_, i) => i));
    });
  });

  describe("the closed-stdout watch's cost", () => {
    // Was a hole (fixed): output-watch.ts guestHoldsOutput reads every fd of every sandboxed process (readdirSync of
    // /proc/PID/fd, then one readlinkSync per fd), synchronously on the host's event loop, every 250 ms
    // (run-guest.ts watchOutput). A guest whose stdout is held only by its last child, behind 16 processes
    // holding ~20,000 descriptors each, freezes the whole host for seconds at every tick (measured 1.5 s
    // with 10 such processes, 7 s with 40): every other run's timers, deadlines and callbacks stall with it.
    // Unconfined, the same guest costs the host nothing (event-loop lag ~20 ms).
    const nofile = (() => {
      try {
        return Number(execFileSync("bash", ["-c", "ulimit -n"], { encoding: "utf8" }).trim());
      } catch {
        return 0;
      }
    })();
    (nofile >= 20_000 ? it : it.skip)(
      "a guest holding 300,000 descriptors does not stall the host's event loop at every watch tick",
      async () => {
        const d = dir("fds");
        writeFileSync(
          join(d, "guest.sh"),
          `exec 19999>&1 1>&-
        for k in $(seq 1 16); do
          ( exec 19999>&-; for i in $(seq 3 19900); do eval "exec $i</dev/null"; done; exec sleep 600 ) &
        done
        sleep 3
        "$NODE" -e '
        const fs = require("node:fs");
        const w = (f) => fs.writeSync(19999, JSON.stringify(f) + "\\n");
        w({ type: "hello", protocol: 1 });
        require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
          const result = { type: "result", outcome: { status: "success", content: "done" } };
          if (JSON.parse(line).type === "invoke") setTimeout(() => w(result), 1500);
        });' 0<&0 &
        exec 19999>&- 0<&-
        wait
        `,
        );
        let last = performance.now();
        let maxLag = 0;
        const ticker = setInterval(() => {
          const now = performance.now();
          maxLag = Math.max(maxLag, now - last - 50);
          last = now;
        }, 50);
        try {
          const report = await runGuest({
            command: "/bin/bash",
            args: [join(d, "guest.sh")],
            cwd: d,
            // bash is the command: Node, its argument, is shown by name wherever it lives.
            sandbox: { env: [`NODE=${process.execPath}`], readable: [process.execPath] },
            killGraceMs: 300,
            limits: { runTimeoutMs: 25_000 },
          });
          expect(report.outcome?.content).toBe("done");
        } finally {
          clearInterval(ticker);
        }
        expect(maxLag, "the host's longest event-loop stall, ms").toBeLessThan(1000);
      },
      120_000,
    );
  });

  describe("type checks", () => {
    it("reference types/path/lib and import type of a host file resolve nothing, and the CompileError quotes no host file", async () => {
      const d = dir("tc");
      writeFileSync(join(d, "secret.ts"), 'export const token = "sk-live-TS" as const;\nexport type T = "sk-live-TYPE";\n');
      writeFileSync(join(d, "secret.d.ts"), 'declare const token: "sk-live-DTS";\n');
      const bodies = [
        `/// <reference types=${JSON.stringify(join(d, "secret"))} />\nconst x: 1 = token;\nreturn x;`,
        `/// <reference path=${JSON.stringify(join(d, "secret.d.ts"))} />\nconst x: 1 = token;\nreturn x;`,
        `/// <reference lib=${JSON.stringify(join(d, "secret"))} />\nconst x: 1 = token;\nreturn x;`,
        `/// <reference types="node" />\nconst x: 1 = process.env;\nreturn x;`,
        `type M = import(${JSON.stringify(join(d, "secret"))}).T;\nconst x: 1 = null as unknown as M;\nreturn x;`,
        `}\nimport type { T } from ${JSON.stringify(join(d, "secret.ts"))};\nasync function again() {\nconst x: 1 = null as unknown as T;`,
        `const m = await import(${JSON.stringify(join(d, "secret.ts"))});\nconst x: 1 = m.token;\nreturn x;`,
      ];
      const reports = await Promise.all(bodies.map((code) => runCode({ code, typecheck: true, sandbox: false })));
      for (const [i, report] of reports.entries()) {
        expect(report.failure?.code, bodies[i]).toBe("CompileError");
        expect(report.failure?.message, bodies[i]).not.toMatch(/sk-live/);
      }
    });
  });
});
