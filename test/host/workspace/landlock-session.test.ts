/**
 * A "copy" session's runs under Landlock (no namespace, no mount: what a host gets where bubblewrap cannot start).
 * Each run works in a scratch copy of the workspace that only it may write; RLIMIT_FSIZE bounds a file (EFBIG), the
 * host's watchdog the total (the run ended, WorkspaceNotKept), and the read-back keeps nothing past the bounds. Here
 * in-process, Landlock asked for by name; test/deploy/environments.test.ts runs the same promises where "auto" picks
 * Landlock (no user namespaces, as uid 0 without capabilities and as another uid).
 */
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { createRunPool, createSession, openSession, runCode, runGuest, type Session } from "../../../src/host/index.js";
import { hasLandlock } from "../../helpers/landlock.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { sessionFixtures } from "../../helpers/sessions.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const LANDLOCK = { mechanism: "landlock" } as const;
const { session, closeAfter, scratchDir } = sessionFixtures("ears-landlock-session-test-", { mechanism: "copy" });
const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
/** What a session's directory beside its workspace holds: the workspace, and nothing a run left (scratch copies). */
const beside = (one: Session) => readdirSync(dirname(one.path)).sort();

describe.runIf(process.platform === "linux" && hasLandlock)("a copy session's runs under Landlock", () => {
  it("two runs: the first's file is there for the second; each works in a scratch copy, which is gone after it", async () => {
    const one = await session({ files: { "seed.txt": "seed" } });
    const first = await runCode({
      code: `${FS}fs.mkdirSync("notes"); fs.writeFileSync("notes/a.txt", fs.readFileSync("seed.txt", "utf8") + "+1");
return process.cwd();`,
      session: one,
      sandbox: LANDLOCK,
    });
    expect(first.ok).toBe(true);
    expect(first.sandbox?.mechanism).toBe("landlock");
    // Not the workspace itself: a scratch copy beside it, the one place of the session the run may write.
    expect(first.outcome?.structured).not.toBe(one.path);
    expect(dirname(first.outcome?.structured as string)).toBe(dirname(one.path));
    expect(first.sandbox?.writable).toContain(first.outcome?.structured);
    expect(first.sandbox?.writable).not.toContain(one.path);
    expect(first.sandbox?.gaps.filter((gap) => gap.startsWith("workspace:"))).toHaveLength(1);
    expect(readFileSync(join(one.path, "notes/a.txt"), "utf8")).toBe("seed+1");
    const second = await runCode({ code: `${FS}return fs.readFileSync("notes/a.txt", "utf8");`, session: one, sandbox: LANDLOCK });
    expect(second.outcome?.structured).toBe("seed+1");
    expect(beside(one)).toEqual(["work"]);
  });

  it("runGuest too: its guest starts in the filled scratch copy, and what it wrote is kept", async () => {
    const one = await session({ files: { "in.txt": "hello" } });
    const report = await runGuest({
      command: process.execPath,
      args: ["-e", 'require("fs").writeFileSync("out.txt", require("fs").readFileSync("in.txt", "utf8") + " world")'],
      session: one,
      sandbox: LANDLOCK,
    });
    // Not a protocol guest: it exits without a hello, and its file is kept all the same.
    expect(report.failure?.code).toBe("NoHello");
    expect(report.sandbox?.mechanism).toBe("landlock");
    expect((await one.readFile("out.txt")).toString()).toBe("hello world");
  });

  it("a single file past workspaceBytes gets EFBIG inside the body (RLIMIT_FSIZE), at most the bound written", async () => {
    // Empty before: the file fills the workspace exactly, never past the total (the watchdog's), and is kept.
    const one = await session({ workspaceBytes: 4 * MiB });
    const report = await runCode({
      code: `${FS}try { fs.writeFileSync("big", Buffer.alloc(8 * 1024 * 1024, 1)); return "wrote"; }
catch (e) { return [e.code, fs.statSync("big").size]; }`,
      session: one,
      sandbox: LANDLOCK,
    });
    expect(report.outcome?.structured).toEqual(["EFBIG", 4 * MiB]);
    expect(report.ok).toBe(true);
    expect(report.limits?.tmpBytes.enforcedBy).toBe("rlimit");
    expect(lstatSync(join(one.path, "big")).size).toBe(4 * MiB);
  });

  it("many small files past the total: the watchdog ends the run WorkspaceNotKept naming the bound; the workspace as before", async () => {
    const one = await session({ workspaceBytes: 4 * MiB, files: { "before.txt": "before" } });
    const report = await runCode({
      // The body never ends by itself: only the watchdog can end it (else the run's deadline would, as RunTimeout).
      code: `${FS}fs.writeFileSync("before.txt", "changed");
for (let i = 0; i < 32; i++) fs.writeFileSync("f" + i, Buffer.alloc(256 * 1024, 1));
await new Promise(() => {});`,
      session: one,
      sandbox: LANDLOCK,
      limits: { runTimeoutMs: 120_000 },
    });
    expect(report.ok).toBe(false);
    expect(report.failure?.code).toBe("WorkspaceNotKept");
    expect(report.failure?.message).toMatch(
      /more than workspaceBytes \(4194304 bytes, a file's holes counted\) in its workspace, so the host's watchdog ended it; nothing of the run was kept/,
    );
    expect(readdirSync(one.path)).toEqual(["before.txt"]);
    expect(readFileSync(join(one.path, "before.txt"), "utf8")).toBe("before");
    expect(beside(one)).toEqual(["work"]);
  });

  it("more files than workspaceFiles: ended by the watchdog too, naming workspaceFiles", async () => {
    const one = await session({ workspaceFiles: 64, files: { "before.txt": "before" } });
    const report = await runCode({
      code: `${FS}for (let i = 0; i < 100; i++) fs.writeFileSync("f" + i, ""); await new Promise(() => {});`,
      session: one,
      sandbox: LANDLOCK,
      limits: { runTimeoutMs: 120_000 },
    });
    expect(report.failure?.code).toBe("WorkspaceNotKept");
    expect(report.failure?.message).toMatch(/more than 64 files and directories \(workspaceFiles\) in its workspace/);
    expect(readdirSync(one.path)).toEqual(["before.txt"]);
  });

  it("a run past the total that ends at once: whichever of the watchdog and the read-back sees it keeps nothing", async () => {
    const one = await session({ workspaceBytes: 4 * MiB, files: { "before.txt": "before" } });
    // A sparse file: past the bound at once, in one call, and nothing for the watchdog to race.
    const report = await runCode({
      code: `${FS}const fd = fs.openSync("sparse", "w"); fs.ftruncateSync(fd, 3 * 1024 * 1024); fs.closeSync(fd);
const other = fs.openSync("sparse2", "w"); fs.ftruncateSync(other, 3 * 1024 * 1024); fs.closeSync(other); return "done";`,
      session: one,
      sandbox: LANDLOCK,
    });
    expect(report.failure?.code).toBe("WorkspaceNotKept");
    expect(report.failure?.message).toMatch(/more than workspaceBytes \(4194304 bytes, a file's holes counted\)/);
    expect(readdirSync(one.path)).toEqual(["before.txt"]);
  });

  it("nothing planted is kept: a link, a FIFO, a setuid bit; and the body cannot reach the session's own directory", async () => {
    const one = await session({ files: { "a.txt": "a" } });
    const report = await runCode({
      code: `${FS}fs.symlinkSync("/", "root"); fs.symlinkSync(input.host + "/a.txt", "host-link");
process.getBuiltinModule("node:child_process").execFileSync("mkfifo", ["fifo"]);
fs.writeFileSync("suid", "x"); let chmod = "done"; try { fs.chmodSync("suid", 0o4755); } catch (e) { chmod = e.code; }
const tryIt = (f) => { try { f(); return "done"; } catch (e) { return e.code; } };
return { chmod, made: fs.readdirSync(".").sort(),
  write: tryIt(() => fs.writeFileSync(input.host + "/direct.txt", "x")),
  read: tryIt(() => fs.readFileSync(input.host + "/a.txt")),
  list: tryIt(() => fs.readdirSync(input.host)),
  throughLink: tryIt(() => fs.writeFileSync("host-link", "changed")) };`,
      input: { host: one.path },
      session: one,
      sandbox: LANDLOCK,
    });
    expect(report.outcome?.structured).toEqual({
      chmod: "EPERM",
      made: ["a.txt", "fifo", "host-link", "root", "suid"],
      write: "EACCES",
      read: "EACCES",
      list: "EACCES",
      throughLink: "EACCES",
    });
    expect(readdirSync(one.path).sort()).toEqual(["a.txt", "suid"]);
    expect(lstatSync(join(one.path, "suid")).mode & 0o7000).toBe(0);
    expect(readFileSync(join(one.path, "a.txt"), "utf8")).toBe("a");
  });

  it("a durable session: dir holds what the runs kept, and openSession continues it under Landlock", async () => {
    const dir = join(scratchDir(), "kept");
    const one = await createSession({ mechanism: "copy", dir, files: { "seed.txt": "seed" }, workspaceBytes: 2 * MiB });
    await runCode({ code: `${FS}fs.writeFileSync("run.txt", "run");`, session: one, sandbox: LANDLOCK });
    await one.close();
    expect(readdirSync(dir).sort()).toEqual(["run.txt", "seed.txt"]);
    const again = closeAfter(await openSession(dir, { mechanism: "copy", workspaceBytes: 2 * MiB }));
    const report = await runCode({ code: `${FS}return fs.readFileSync("run.txt", "utf8");`, session: again, sandbox: LANDLOCK });
    expect(report.outcome?.structured).toBe("run");
  });

  it("a pooled run still refuses a copy session (its runner was started ahead): nothing ran", async () => {
    const one = await session({ files: { "a.txt": "a" } });
    const pool = createRunPool({ size: 1, sandbox: LANDLOCK });
    try {
      const report = await runCode({ code: `${FS}fs.writeFileSync("b.txt", "b");`, session: one, pool });
      expect(report.failure?.code).toBe("SpawnFailed");
      expect(readdirSync(one.path)).toEqual(["a.txt"]);
    } finally {
      await pool.close();
    }
  });

  it("close() removes the session's directory, scratch copies and all", async () => {
    const one = await createSession({ mechanism: "copy", files: { a: "1" } });
    await runCode({ code: `${FS}fs.writeFileSync("b", "2");`, session: one, sandbox: LANDLOCK });
    const base = dirname(one.path);
    await one.close();
    expect(existsSync(base)).toBe(false);
  });
});
