/**
 * Sessions without a host mount (`mechanism: "copy"`, what "auto" picks on a host that cannot mount): the
 * workspace copied into a tmpfs bubblewrap makes inside each run's sandbox and read back after the run.
 * Here as root, the mechanism forced; test/cli/exec-workspace.test.ts and test/deploy/ run it as an
 * unprivileged uid, and without user namespaces.
 */
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRunPool, createSession, openSession, runCode, runGuest } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { canMountSessions, sessionFixtures } from "../../helpers/sessions.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const { session, closeAfter, scratchDir } = sessionFixtures("ears-copy-session-test-", { mechanism: "copy" });
const mounted = (path: string) => readFileSync("/proc/self/mounts", "utf8").includes(` ${path} `);
const FS = 'const fs = process.getBuiltinModule("node:fs");\n';

describe("createSession's mechanism option", () => {
  it("is checked: anything but auto, mount or copy is a TypeError naming it", () => {
    expect(() => createSession({ mechanism: "tmpfs" as never })).toThrow(
      /options\.mechanism must be "auto", "mount" or "copy", got "tmpfs"/,
    );
  });
  it("openSession checks it too", async () => {
    await expect(openSession("/tmp", { mechanism: 1 as never })).rejects.toThrow(/options\.mechanism/);
  });
});

describe.runIf(canMountSessions)("a copy session", () => {
  it("needs no mount; a file the host put is there for the body's first instruction, and what it wrote is kept", async () => {
    const one = await session({ files: { "seed.txt": "seed" } });
    expect(one.mechanism).toBe("copy");
    expect(mounted(join(one.path, ".."))).toBe(false);
    const report = await runCode({
      code: `${FS}const seed = fs.readFileSync("seed.txt", "utf8");
fs.mkdirSync("notes"); fs.writeFileSync("notes/a.txt", seed + "+1");
return [seed, fs.statfsSync(".").type, process.cwd()];`,
      session: one,
    });
    expect(report.outcome?.structured).toEqual(["seed", 0x01021994, one.path]);
    expect(readFileSync(join(one.path, "notes/a.txt"), "utf8")).toBe("seed+1");
    expect((await runCode({ code: `${FS}return fs.readFileSync("notes/a.txt", "utf8");`, session: one })).outcome?.structured).toBe(
      "seed+1",
    );
  });

  it("runGuest with a copy session: the guest starts behind the gate, in its filled workspace", async () => {
    const one = await session({ files: { "in.txt": "hello" } });
    const report = await runGuest({
      command: process.execPath,
      args: ["-e", 'require("fs").writeFileSync("out.txt", require("fs").readFileSync("in.txt", "utf8") + " world")'],
      session: one,
    });
    // Not a protocol guest: it exits without a hello, and its file is kept all the same.
    expect(report.failure?.code).toBe("NoHello");
    expect((await one.readFile("out.txt")).toString()).toBe("hello world");
  });

  it("ENOSPC past workspaceBytes inside the body (the sandbox's tmpfs) and from writeFile (the host's count)", async () => {
    const one = await session({ workspaceBytes: 4 * MiB });
    const report = await runCode({
      code: `${FS}try { fs.writeFileSync("big", Buffer.alloc(8 * 1024 * 1024)); return "wrote"; } catch (e) { return e.code; }`,
      session: one,
    });
    expect(report.outcome?.structured).toBe("ENOSPC");
    expect(lstatSync(join(one.path, "big")).size).toBeLessThanOrEqual(4 * MiB);
    await expect(one.writeFile("more", new Uint8Array(8 * MiB))).rejects.toMatchObject({ code: "ENOSPC" });
    expect(existsSync(join(one.path, "more"))).toBe(false);
  });

  it("nothing planted is kept: links, a FIFO, a socket, setuid and setgid bits; what is kept is a plain file or directory", async () => {
    const one = await session();
    const outside = scratchDir();
    writeFileSync(join(outside, "secret"), "host secret");
    const report = await runCode({
      code: `${FS}fs.symlinkSync(${JSON.stringify(join(outside, "secret"))}, "link");
fs.symlinkSync("/", "root");
process.getBuiltinModule("node:child_process").execFileSync("mkfifo", ["fifo"]);
fs.writeFileSync("suid", "x"); try { fs.chmodSync("suid", 0o4755); } catch {}
fs.mkdirSync("d"); fs.chmodSync("d", 0o755); try { fs.chmodSync("d", 0o3777); } catch {}
fs.writeFileSync("d/x", "y"); fs.chmodSync("d/x", 0o640);
const net = process.getBuiltinModule("node:net");
await new Promise((resolve) => { const server = net.createServer().listen("sock", () => { server.unref(); resolve(); }); });
return fs.readdirSync(".").sort();`,
      session: one,
    });
    expect(report.outcome?.structured).toEqual(["d", "fifo", "link", "root", "sock", "suid"]);
    expect(readdirSync(one.path).sort()).toEqual(["d", "suid"]);
    expect(lstatSync(join(one.path, "suid")).mode & 0o7000).toBe(0);
    expect(lstatSync(join(one.path, "d", "x")).mode & 0o777).toBe(0o640);
    expect(lstatSync(join(one.path, "d")).mode & 0o7777).toBe(0o755);
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("host secret");
  });

  it("more files than workspaceFiles (bubblewrap's tmpfs has no inode bound): nothing of the run kept, the failure names it", async () => {
    const one = await session({ workspaceBytes: 4 * MiB, workspaceFiles: 1024, files: { "before.txt": "before" } });
    expect(one.workspaceFiles).toBe(1024);
    const report = await runCode({
      code: `${FS}fs.writeFileSync("before.txt", "changed"); for (let i = 0; i < 1100; i++) fs.writeFileSync("f" + i, ""); return "made";`,
      session: one,
    });
    expect(report.ok).toBe(false);
    expect(report.failure).toMatchObject({ code: "WorkspaceNotKept" });
    expect(report.failure?.message).toMatch(
      /more than 1024 files and directories in the workspace \(workspaceFiles\); nothing of the run was kept/,
    );
    // The body's result is still there to see; the workspace is as it was before the run.
    expect(report.outcome?.structured).toBe("made");
    expect(readdirSync(one.path)).toEqual(["before.txt"]);
    expect(readFileSync(join(one.path, "before.txt"), "utf8")).toBe("before");
  });

  it("a sparse file past the bound (holes take no room in the tmpfs) is never written back: fails naming workspaceBytes", async () => {
    const one = await session({ workspaceBytes: 4 * MiB, files: { "before.txt": "before" } });
    const report = await runCode({
      code: `${FS}const fd = fs.openSync("sparse", "w"); fs.ftruncateSync(fd, 1024 * 1024 * 1024); fs.closeSync(fd);
return fs.statSync("sparse").size;`,
      session: one,
    });
    expect(report.outcome?.structured).toBe(1024 * MiB);
    expect(report.failure).toMatchObject({ code: "WorkspaceNotKept" });
    expect(report.failure?.message).toMatch(/more than workspaceBytes \(4194304 bytes, a file's holes counted\)/);
    expect(readdirSync(one.path)).toEqual(["before.txt"]);
  });

  it("a directory the body made unreadable: as root it is read all the same and kept, the owner's access back", async () => {
    const one = await session();
    await runCode({ code: `${FS}fs.mkdirSync("closed"); fs.writeFileSync("closed/a", "a"); fs.chmodSync("closed", 0);`, session: one });
    expect(readFileSync(join(one.path, "closed", "a"), "utf8")).toBe("a");
    expect(lstatSync(join(one.path, "closed")).mode & 0o777).toBe(0o700);
  });

  it("a workspace that no longer fits its tmpfs (changed behind the session): the guest never runs, the run fails saying why", async () => {
    const one = await session({ workspaceBytes: 4 * MiB });
    writeFileSync(join(one.path, "grown"), Buffer.alloc(6 * MiB));
    const report = await runCode({ code: `${FS}fs.writeFileSync("ran", "yes"); return "ran";`, session: one });
    expect(report.ok).toBe(false);
    expect(report.failure?.code).toBe("SpawnFailed");
    expect(report.failure?.message).toMatch(/the session's workspace could not be given to the run, so nothing ran: .*ENOSPC/);
    expect(report.outcome).toBeUndefined();
    // Nothing ran; the clean-up after the run then trims what is past the bound (a file the host put there by hand).
    expect(readdirSync(one.path)).not.toContain("ran");
  });

  it("a durable copy session: dir holds what the runs kept, and openSession continues it (as copy), still bounded", async () => {
    const dir = join(scratchDir(), "kept");
    const one = await createSession({ mechanism: "copy", dir, files: { "seed.txt": "seed" }, workspaceBytes: 2 * MiB });
    await runCode({ code: `${FS}fs.writeFileSync("run.txt", "run");`, session: one });
    await one.close();
    expect(readdirSync(dir).sort()).toEqual(["run.txt", "seed.txt"]);
    const again = closeAfter(await openSession(dir, { mechanism: "copy", workspaceBytes: 2 * MiB }));
    expect((await again.readFile("run.txt")).toString()).toBe("run");
    writeFileSync(join(dir, "huge"), Buffer.alloc(3 * MiB));
    await again.close();
    await expect(openSession(dir, { mechanism: "copy", workspaceBytes: 2 * MiB })).rejects.toThrow(/holds more than workspaceBytes/);
  });

  it("a pooled run refuses a copy session (a runner started ahead cannot take a copied workspace): nothing ran", async () => {
    const one = await session({ files: { "a.txt": "a" } });
    const pool = createRunPool({ size: 1 });
    try {
      const report = await runCode({ code: `${FS}fs.writeFileSync("b.txt", "b");`, session: one, pool });
      expect(report.failure?.code).toBe("SpawnFailed");
      expect(report.failure?.message).toMatch(/mechanism "copy"/);
      expect(readdirSync(one.path)).toEqual(["a.txt"]);
    } finally {
      await pool.close();
    }
  });

  it("close() removes the host's directory", async () => {
    const one = await createSession({ mechanism: "copy", files: { a: "1" } });
    const base = join(one.path, "..");
    expect(existsSync(base)).toBe(true);
    await one.close();
    expect(existsSync(base)).toBe(false);
    // No copy was left beside it either.
    expect(spawnSync("sh", ["-c", `ls -d ${base}* 2>/dev/null`]).stdout.toString()).toBe("");
  });
});
