/**
 * The least-privilege attacks (issue 17), each run for real under bubblewrap: a guest or body tries
 * what a model-written program could do on its own, and the sandbox refuses it, while the same attack
 * unconfined succeeds where that shows the test can fail. docs/host.md "Threat model" names each test.
 */
import { spawn } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCode, runGuest } from "../../../src/host/index.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { childWith, pidsGoneWithin, treeOf } from "../../helpers/processes.js";

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../../", import.meta.url));
const probe = `${root}fixtures/hostile/probe.mjs`;
const hasBwrap = bwrapPath !== undefined;
const isRoot = process.getuid?.() === 0;

describe.runIf(process.platform === "linux" && hasBwrap)("least privilege in the sandbox", () => {
  let base: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-confine-")));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  const body = (code: string, options: Parameters<typeof runCode>[0] extends infer O ? Partial<O> : never = {}) =>
    runCode({ code, sandbox: true, ...options });

  it("opens nothing under /proc/sys, nor /proc/sysrq-trigger, for writing (unconfined root can: the test can fail)", async () => {
    const code = `
      const fs = process.getBuiltinModule("node:fs");
      const path = process.getBuiltinModule("node:path");
      const writable = [];
      const walk = (dir, depth) => {
        let names = [];
        try { names = fs.readdirSync(dir); } catch { return; }
        for (const name of names) {
          const p = path.join(dir, name);
          let st; try { st = fs.lstatSync(p); } catch { continue; }
          if (st.isDirectory()) { if (depth < 4) walk(p, depth + 1); continue; }
          try { fs.closeSync(fs.openSync(p, "r+")); writable.push(p); } catch {}
        }
      };
      walk("/proc/sys", 0);
      for (const p of ["/proc/sysrq-trigger", "/proc/sys/kernel/core_pattern"]) {
        try { fs.closeSync(fs.openSync(p, "r+")); writable.push(p); } catch {}
      }
      return writable;`;
    const confined = await body(code);
    expect(confined.failure).toBeUndefined();
    expect(confined.outcome?.structured).toEqual([]);
    if (isRoot) {
      const open = await body(
        `const fs = process.getBuiltinModule("node:fs");
        try { fs.closeSync(fs.openSync("/proc/sys/kernel/core_pattern", "r+")); return "opened"; } catch (e) { return e.code; }`,
        { sandbox: false },
      );
      expect(open.outcome?.structured).toBe("opened");
    }
  });

  it("refuses setuid and setgid bits in a writable path: chmod, fchmod, chmod(1), a created file's mode, a setgid directory", async () => {
    const writable = mkdtempSync(join(base, "w-"));
    const code = `
      const fs = process.getBuiltinModule("node:fs");
      const cp = process.getBuiltinModule("node:child_process");
      const W = ${JSON.stringify(writable)};
      const tried = {};
      const attempt = (name, work) => { try { work(); tried[name] = "done"; } catch (e) { tried[name] = e.code ?? String(e.status); } };
      fs.copyFileSync("/usr/bin/id", W + "/id");
      attempt("chmod", () => fs.chmodSync(W + "/id", 0o4755));
      attempt("fchmod", () => { const fd = fs.openSync(W + "/id", "r"); try { fs.fchmodSync(fd, 0o2755); } finally { fs.closeSync(fd); } });
      fs.writeFileSync(W + "/tool", "x");
      attempt("chmod(1)", () => cp.execFileSync("chmod", ["u+s", W + "/tool"], { stdio: "ignore" }));
      attempt("open", () => fs.closeSync(fs.openSync(W + "/created", "w", 0o4755)));
      fs.mkdirSync(W + "/dir");
      attempt("setgid dir", () => fs.chmodSync(W + "/dir", 0o2775));
      attempt("plain chmod", () => fs.chmodSync(W + "/tool", 0o755));
      return tried;`;
    const confined = await body(code, { sandbox: { writable: [writable] } });
    expect(confined.failure).toBeUndefined();
    expect(confined.outcome?.structured).toEqual({
      chmod: "EPERM",
      fchmod: "EPERM",
      "chmod(1)": "1",
      open: expect.stringMatching(/EPERM|done/),
      "setgid dir": "EPERM",
      "plain chmod": "done",
    });
    for (const name of readdirSync(writable)) {
      expect(statSync(join(writable, name)).mode & 0o6000, `${name} on the host`).toBe(0);
    }
    const other = mkdtempSync(join(base, "w-"));
    const open = await body(code.replace(JSON.stringify(writable), JSON.stringify(other)), { sandbox: false });
    expect(open.outcome?.structured).toMatchObject({ chmod: "done", fchmod: "done" });
    expect(statSync(join(other, "id")).mode & 0o6000).not.toBe(0);
  });

  it("refuses a new user namespace and the kernel-facing calls (unshare -U, ptrace through strace-less means)", async () => {
    const confined = await body(`
      const cp = process.getBuiltinModule("node:child_process");
      const run = (cmd, args) => {
        try { cp.execFileSync(cmd, args, { stdio: "pipe" }); return "ran"; } catch (e) { return String(e.stderr ?? e.code).trim(); }
      };
      return { unshare: run("unshare", ["-U", "true"]) };`);
    expect(confined.outcome?.structured).toEqual({ unshare: expect.stringContaining("Operation not permitted") });
  });

  describe("links planted by one run never widen the next", () => {
    const plants: [string, (proj: string, outside: string) => string[]][] = [
      ["node_modules/x -> outside", (proj, outside) => [`${proj}/node_modules/x`, outside, `${proj}/node_modules/x/secret.txt`]],
      ["node_modules -> outside", (proj, outside) => [`${proj}/node_modules`, outside, `${proj}/node_modules/secret.txt`]],
      ["package.json -> a file outside", (proj, outside) => [`${proj}/package.json`, `${outside}/secret.txt`, `${proj}/package.json`]],
    ];
    it.each(plants)("%s: planted by a run that may write its working directory, unreadable by the next", async (_name, shape) => {
      const proj = mkdtempSync(join(base, "proj-"));
      const outside = mkdtempSync(join(base, "outside-"));
      writeFileSync(join(outside, "secret.txt"), "outside secret");
      const [link, target, readBack] = shape(proj, outside) as [string, string, string];
      mkdirSync(join(proj, "node_modules"), { recursive: true });
      // Run 1: the guest plants the link in the directory it may write.
      const plant = await runCode({
        code: `const fs = process.getBuiltinModule("node:fs");
          fs.rmSync(${JSON.stringify(link)}, { recursive: true, force: true });
          fs.symlinkSync(${JSON.stringify(target)}, ${JSON.stringify(link)}); return "planted";`,
        cwd: proj,
        sandbox: { writable: [proj] },
      });
      expect(plant.outcome?.structured).toBe("planted");
      expect(lstatSync(link!).isSymbolicLink()).toBe(true);
      // Run 2: a complete guest with that working directory, read-only; its host finds node_modules and package.json there.
      const report = await runGuest({ command: process.execPath, args: [probe], cwd: proj, input: { read: [readBack] }, sandbox: true });
      expect(report.failure).toBeUndefined();
      const [read] = (report.outcome?.structured as { read: string[] }).read;
      expect(read).toMatch(/^blocked: /);
      expect(JSON.stringify(report.sandbox)).not.toContain(outside);
      const open = await runGuest({ command: process.execPath, args: [probe], cwd: proj, input: { read: [readBack] }, sandbox: false });
      expect((open.outcome?.structured as { read: string[] }).read[0]).toBe("ok: outside secret");
    });
  });

  it("masks .env and the like in a complete guest's working directory and in exec's --cwd; the body's own directory is empty", async () => {
    const proj = mkdtempSync(join(base, "secrets-"));
    writeFileSync(join(proj, ".env"), "API_KEY=live");
    writeFileSync(join(proj, ".npmrc"), "//registry/:_authToken=t");
    mkdirSync(join(proj, ".git"));
    writeFileSync(join(proj, ".git", "config"), "[remote]");
    writeFileSync(join(proj, "notes.txt"), "visible");
    const paths = [".env", ".npmrc", ".git/config", "notes.txt"].map((name) => join(proj, name));
    const guest = await runGuest({ command: process.execPath, args: [probe], cwd: proj, input: { read: paths }, sandbox: true });
    // A masked file cannot be opened (EACCES: /dev/null bound where devices are off); a masked directory is empty.
    expect((guest.outcome?.structured as { read: string[] }).read).toEqual([
      "blocked: EACCES",
      "blocked: EACCES",
      "blocked: ENOENT",
      "ok: visible",
    ]);
    expect(guest.sandbox?.masked).toEqual(expect.arrayContaining([join(proj, ".env"), join(proj, ".npmrc"), join(proj, ".git")]));
    const listing = `const fs = process.getBuiltinModule("node:fs"); return { cwd: process.cwd(), files: fs.readdirSync("."),
      env: (() => { try { return fs.readFileSync(${JSON.stringify(join(proj, ".env"))}, "utf8"); } catch (e) { return e.code; } })() };`;
    const own = await body(listing);
    expect(own.outcome?.structured).toMatchObject({ files: [], env: "ENOENT" });
    const asked = await body(listing, { cwd: proj });
    expect(asked.outcome?.structured).toMatchObject({ cwd: proj, env: "EACCES" });
    const shown = await body(listing, { cwd: proj, sandbox: { showSecrets: true } });
    expect(shown.outcome?.structured).toMatchObject({ env: "API_KEY=live" });
  });

  it("refuses / as the working directory (and the report never claims a sandbox it did not build)", async () => {
    const report = await body("return 1;", { cwd: "/" });
    expect(report.failure?.code).toBe("SandboxUnavailable");
    expect(report.failure?.message).toMatch(/too broad/);
    expect(report.sandbox).toBeFalsy();
    const guest = await runGuest({ command: process.execPath, args: [probe], cwd: "/", sandbox: "auto" });
    expect(guest.failure?.code).toBe("SandboxUnavailable");
  });

  it("shows no file a command-line argument names unless it is the script (node --eval=… FILE)", async () => {
    const secretDir = mkdtempSync(join(base, "argv-"));
    const cwd = mkdtempSync(join(base, "argv-cwd-"));
    writeFileSync(join(secretDir, "token.txt"), "t0ken");
    const report = await runGuest({
      command: process.execPath,
      args: [
        `--input-type=module`,
        `--eval=import { readFileSync } from "node:fs"; try { readFileSync(process.argv[1]); process.exit(3); } catch { process.exit(4); }`,
        join(secretDir, "token.txt"),
      ],
      cwd,
      sandbox: true,
    });
    expect(report.exit?.code).toBe(4);
  });

  it("gives the launcher a clean environment: LD_DEBUG in sandbox.env reaches the guest, never bubblewrap", async () => {
    const report = await runGuest({
      command: process.execPath,
      args: [probe],
      cwd: base,
      input: { env: ["LD_DEBUG"] },
      sandbox: { env: ["LD_DEBUG=libs"] },
    });
    // The guest's own loader prints what it loads; bubblewrap's would name bubblewrap's libraries (libcap, libselinux).
    expect(report.stderr).toMatch(/find library=/);
    expect(report.stderr).not.toMatch(/libcap|libselinux/);
    expect((report.outcome?.structured as { env: Record<string, string> }).env).toEqual({ LD_DEBUG: "libs" });
  });

  it("ends a guest that closes stdout and lives on as NoResult, as unconfined", async () => {
    const dir = mkdtempSync(join(base, "closer-"));
    writeFileSync(
      join(dir, "closer.mjs"),
      'import { closeSync } from "node:fs"; process.stdout.write(JSON.stringify({ type: "hello", protocol: 1 }) + "\\n");\n' +
        "setTimeout(() => { closeSync(1); setInterval(() => {}, 1000); }, 50);",
    );
    for (const sandbox of [true, false]) {
      const report = await runGuest({ command: process.execPath, args: [join(dir, "closer.mjs")], cwd: dir, sandbox, killGraceMs: 300 });
      expect(report.failure?.code, `sandbox: ${sandbox}`).toBe("NoResult");
    }
  });
});

describe.runIf(process.platform === "linux")("type checks see what the body sees", () => {
  it("resolves no host file a body names in a type-level import or a reference (one error for a file there or not)", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-tc-secret-")));
    try {
      writeFileSync(join(dir, "secret.ts"), 'export const token = "sk-live-TYPE-SECRET" as const;\n');
      const exists = join(dir, "secret.ts");
      const missing = join(dir, "missing.ts");
      const check = (path: string) =>
        runCode({
          code: `const t: 1 = (null as unknown as typeof import(${JSON.stringify(path)})).token;\nreturn t;`,
          typecheck: true,
          sandbox: false,
        });
      const [a, b] = await Promise.all([check(exists), check(missing)]);
      expect(a.failure?.code).toBe("CompileError");
      expect(a.failure?.message).not.toContain("sk-live");
      expect(a.failure?.message.replace(exists, "PATH")).toBe(b.failure?.message.replace(missing, "PATH"));
      const ref = await runCode({
        code: `/// <reference path=${JSON.stringify(exists)} />\nconst x: 1 = token;\nreturn x;`,
        typecheck: true,
        sandbox: false,
      });
      expect(ref.failure?.message).not.toContain("sk-live");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("writes no body to disk to check it, and the checker dies with a host SIGKILLed during the check", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "ears-killed-tc-"));
    let checker: number[] = [];
    try {
      const host = spawn(process.execPath, [`${root}fixtures/hostile/typecheck-host.mjs`], {
        cwd: root,
        env: { ...process.env, TMPDIR: scratch },
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise((resolve) => host.on("exit", resolve));
      // The warm checker (issue 20) holds the body in memory: no ears-typecheck-* directory is ever made.
      let server: number | undefined;
      for (let waited = 0; waited < 20000 && server === undefined; waited += 5) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        server = childWith(host.pid!, "typecheck-server.js");
      }
      expect(server, "the host's checker process").toBeDefined();
      checker = treeOf(server!);
      expect(readdirSync(scratch), "files the check made").toEqual([]);
      host.kill("SIGKILL");
      await exited;
      expect(await pidsGoneWithin(checker, 5000), "the checker's processes 5 s after the host was killed").toEqual([]);
      expect(readdirSync(scratch), "files left after the host was killed").toEqual([]);
    } finally {
      for (const pid of checker) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone, as it should be.
        }
      }
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
