/**
 * Sessions against a hostile body (issue 41): sparse files and the bound, byte names, deep trees, planted
 * special files, a child left writing after the result, a directory/link swap racing the host's walk, a
 * flood of files, modes, and the durable directory's lock. Real sandboxed runs (bubblewrap) on a host
 * that can mount the bounded tmpfs (root), cold and through a run pool.
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSession, openSession, runCode } from "../../../src/host/index.js";
import { MAX_DEPTH } from "../../../src/host/workspace/walk.js";
import { LOCK_NAME } from "../../../src/host/workspace/lock.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { diskBytes } from "../../helpers/scratch.js";
import { canMountSessions, sessionFixtures } from "../../helpers/sessions.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const { session, closeAfter, pool, scratchDir } = sessionFixtures("ears-session-attack-");

/** How many directories deep a tree goes (its top's own directories are 1). */
function depthOf(dir: string): number {
  let depth = 0;
  for (let at = dir; ; depth++) {
    const inner = readdirSync(at).find((name) => lstatSync(join(at, name)).isDirectory());
    if (inner === undefined) return depth;
    at = join(at, inner);
  }
}

const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
/** A 1 GiB sparse file (ftruncate) and a file grown until the bound stops it. */
const SPARSE = `${FS}fs.writeFileSync("keep.txt", "kept");
const fd = fs.openSync("sparse.bin", "w"); fs.ftruncateSync(fd, 1024 ** 3); fs.closeSync(fd);
fs.writeFileSync("truncated.bin", ""); fs.truncateSync("truncated.bin", 1024 ** 3);
const grow = fs.openSync("grow.bin", "w"); const chunk = Buffer.alloc(1024 * 1024, 1); let n = 0;
try { for (;;) { fs.writeSync(grow, chunk); n++; } } catch (e) { return [e.code, fs.statSync("sparse.bin").size]; }`;
const READ_KEPT = `${FS}return [fs.readFileSync("keep.txt", "utf8"), fs.readdirSync(".").sort()];`;

describe.runIf(canMountSessions)("a session against a hostile body", () => {
  it("a sparse 1 GiB file never reaches the durable directory: DIR's disk use stays under the bound, and the session goes on", async () => {
    for (const pooled of [false, true]) {
      const dir = scratchDir();
      const one = await session({ workspaceBytes: 16 * MiB, dir });
      const on = pooled ? { pool: pool() } : {};
      const run = await runCode({ code: SPARSE, session: one, ...on });
      expect(run.outcome?.structured).toEqual(["ENOSPC", 1024 ** 3]);
      // The files' own bytes are within the bound; the disk adds a block per file (the lock file's too) at most.
      expect(diskBytes(dir)).toBeLessThan(16 * MiB + 64 * 1024);
      expect(readdirSync(dir)).not.toContain("sparse.bin");
      expect(readdirSync(dir)).not.toContain("truncated.bin");
      // The session stays usable: the next run works and sees what was kept.
      const next = await runCode({ code: READ_KEPT, session: one, ...on });
      expect(next.outcome?.structured).toEqual(["kept", expect.arrayContaining(["keep.txt", "grow.bin"])]);
      expect((next.outcome?.structured as [string, string[]])[1]).not.toContain("sparse.bin");
      await one.close();
      // And DIR opens again within the same bound.
      const again = closeAfter(await openSession(dir, { workspaceBytes: 16 * MiB }));
      expect((await again.readFile("keep.txt")).toString()).toBe("kept");
      expect(diskBytes(dir)).toBeLessThan(16 * MiB + 64 * 1024);
    }
  });

  it("the write-back copies off the event loop: the host's own turns run while a file is being copied", async () => {
    const dir = scratchDir();
    const one = await session({ workspaceBytes: 16 * MiB, dir });
    const seen = new Set<number>();
    let watching = true;
    // Each turn of the event loop looks at the copy in DIR: a copy done in one blocking call is never seen half written.
    const watch = () => {
      if (!watching) return;
      const size = statSync(join(dir, "big.bin"), { throwIfNoEntry: false })?.size;
      if (size !== undefined) seen.add(size);
      setImmediate(watch);
    };
    watch();
    await one.writeFile("big.bin", Buffer.alloc(12 * MiB, 7));
    watching = false;
    expect(statSync(join(dir, "big.bin")).size).toBe(12 * MiB);
    expect([...seen].some((size) => size > 0 && size < 12 * MiB)).toBe(true);
  });

  it("byte names, 2,100 nested directories, links, FIFOs and sockets: the run resolves, nothing is kept, the session goes on", async () => {
    const target = scratchDir();
    writeFileSync(join(target, "host-file"), "the host's");
    for (const pooled of [false, true]) {
      const dir = scratchDir();
      const one = await session({ dir });
      const on = pooled ? { pool: pool() } : {};
      const code = `${FS}const net = process.getBuiltinModule("node:net");
const { execFileSync } = process.getBuiltinModule("node:child_process");
fs.writeFileSync(Buffer.from("bad\\xff", "latin1"), "x");
fs.mkdirSync(Buffer.from("dir\\xfe", "latin1"));
fs.writeFileSync("ok.txt", "ok");
const top = process.cwd();
fs.mkdirSync("deep"); process.chdir("deep");
for (let i = 0; i < 2100; i++) { fs.mkdirSync("d"); process.chdir("d"); }
fs.writeFileSync("bottom", "x"); fs.symlinkSync(${JSON.stringify(target)}, "link-at-bottom");
process.chdir(top);
fs.symlinkSync(${JSON.stringify(target)}, "link");
execFileSync("mkfifo", ["fifo"]);
await new Promise((resolve) => { const server = net.createServer().listen("sock", () => { server.unref(); resolve(); }); });
return "planted";`;
      const run = await runCode({ code, session: one, ...on });
      expect(run.outcome?.structured).toBe("planted");
      expect(readdirSync(one.path).sort()).toEqual(["deep", "ok.txt"]);
      expect(depthOf(join(one.path, "deep"))).toBe(MAX_DEPTH - 1);
      expect((await one.list()).map((entry) => entry.name)).toEqual(["deep", "ok.txt"]);
      expect(readdirSync(dir).sort()).toEqual([LOCK_NAME, "deep", "ok.txt"]);
      expect(depthOf(join(dir, "deep"))).toBe(MAX_DEPTH - 1);
      expect(readdirSync(target)).toEqual(["host-file"]);
      expect((await runCode({ code: `${FS}return fs.readFileSync("ok.txt", "utf8");`, session: one, ...on })).outcome?.structured).toBe(
        "ok",
      );
      await one.remove("deep");
      expect(readdirSync(dir).sort()).toEqual([LOCK_NAME, "ok.txt"]);
    }
  });

  it("a child the body leaves writing is gone before the workspace is cleaned and written back (cold and pooled)", async () => {
    const code = `${FS}const { spawn } = process.getBuiltinModule("node:child_process");
spawn("sh", ["-c", "trap '' TERM HUP INT; while :; do echo written-late >> log; done"], { detached: true, stdio: "ignore" }).unref();
while (!fs.existsSync("log") || fs.statSync("log").size < 4096) {}
return "left";`;
    for (const pooled of [false, true]) {
      const dir = scratchDir();
      const one = await session({ dir });
      const on = pooled ? { pool: pool() } : {};
      expect((await runCode({ code, session: one, ...on })).outcome?.structured).toBe("left");
      // Written back after the writer was gone: DIR holds the workspace's final file, and it grows no more.
      const final = readFileSync(join(one.path, "log"));
      expect(readFileSync(join(dir, "log")).equals(final)).toBe(true);
      await runCode({ code: "return 1;" });
      expect(readFileSync(join(one.path, "log")).equals(final)).toBe(true);
    }
  });

  it("a directory/link swap loop the body leaves running never makes the host's walk follow the link", async () => {
    const helper = scratchDir();
    writeFileSync(
      join(helper, "swap.c"),
      `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  for (;;) {
    if (syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "l", 2 /* RENAME_EXCHANGE */) != 0) {
      mkdir("d", 0755); symlink(argv[1], "l");
    }
  }
}
`,
    );
    execFileSync("gcc", ["-O2", "-o", join(helper, "swap"), join(helper, "swap.c")]);
    // What the walk would change, were it to follow the link: a FIFO it would remove, a mode it would mask.
    const victim = scratchDir();
    writeFileSync(join(victim, "open-file"), "the host's");
    chmodSync(join(victim, "open-file"), 0o666);
    execFileSync("mkfifo", [join(victim, "fifo")]);
    const one = await session();
    const on = { pool: pool() };
    await one.writeFile("swap", readFileSync(join(helper, "swap")));
    const code = `${FS}const { spawn } = process.getBuiltinModule("node:child_process");
fs.chmodSync("swap", 0o755);
fs.mkdirSync("d"); fs.writeFileSync("d/inside", "x"); fs.symlinkSync(input, "l");
spawn("./swap", [input], { detached: true, stdio: "ignore" }).unref();
// Until the swaps are seen happening.
let swaps = 0; let was = fs.lstatSync("d").isDirectory();
while (swaps < 100) { let now; try { now = fs.lstatSync("d").isDirectory(); } catch { continue; } if (now !== was) { swaps++; was = now; } }
return swaps;`;
    for (let attempt = 0; attempt < 2; attempt++) {
      for (const options of [on, {}]) {
        expect((await runCode({ code, input: victim, session: one, ...options })).outcome?.structured).toBe(100);
        await one.remove("d").catch(() => {});
        await one.remove("l").catch(() => {});
        expect(readdirSync(victim).sort()).toEqual(["fifo", "open-file"]);
        expect(statSync(join(victim, "open-file")).mode & 0o777).toBe(0o666);
        expect(lstatSync(join(victim, "fifo")).isFIFO()).toBe(true);
      }
    }
  }, 120_000);

  it("files are bounded (10,000 by default), ENOSPC in the body; the walk after each run leaves the host's event loop free", async () => {
    const dir = scratchDir();
    const one = await session({ dir });
    const flood = `${FS}let n = 0; try { for (;;) { fs.writeFileSync("f" + n, ""); n++; } } catch (e) { return [n, e.code]; }`;
    const run = await runCode({ code: flood, session: one });
    expect(run.outcome?.structured).toEqual([10_000, "ENOSPC"]);
    expect(readdirSync(dir).length).toBe(10_001);
    // The host's write walks the 10,000 files again: its turns go on meanwhile (counted, not timed).
    let turns = 0;
    let counting = true;
    const count = () => {
      if (!counting) return;
      turns++;
      setImmediate(count);
    };
    count();
    await expect(one.writeFile("one-more", "x")).rejects.toThrow(/workspace is full: it holds at most 268435456 bytes and 10000 files/);
    await one.remove("f0");
    counting = false;
    expect(turns).toBeGreaterThan(1000);
    expect((await runCode({ code: `${FS}return fs.readdirSync(".").length;`, session: one })).outcome?.structured).toBe(9_999);
    expect(() => createSession({ workspaceFiles: 15 })).toThrow(RangeError);
  }, 120_000);

  it("write-back masks modes: no group or other write, no sticky bit on the host (setuid and setgid: see session.test.ts)", async () => {
    const dir = scratchDir();
    const one = await session({ dir });
    const code = `${FS}fs.mkdirSync("shared"); fs.chmodSync("shared", 0o1777);
fs.writeFileSync("shared/open.txt", "x"); fs.chmodSync("shared/open.txt", 0o777);
fs.writeFileSync("private.txt", "x"); fs.chmodSync("private.txt", 0o000);
return "ok";`;
    expect((await runCode({ code, session: one })).outcome?.structured).toBe("ok");
    expect(statSync(join(dir, "shared")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dir, "shared", "open.txt")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dir, "private.txt")).mode & 0o7777).toBe(0o600);
    expect(statSync(join(one.path, "shared")).mode & 0o7777).toBe(0o755);
  });

  it("a durable directory is held by one open session: a second opener is refused naming it and the holder, until it closes", async () => {
    const dir = scratchDir();
    const first = await session({ dir });
    await expect(openSession(dir)).rejects.toThrow(`openSession: ${dir} is in use by another open session, held by this process`);
    await expect(createSession({ dir })).rejects.toThrow(/is not empty|in use/);
    await first.writeFile("a.txt", "first's");
    await first.close();
    const second = closeAfter(await openSession(dir));
    expect((await second.readFile("a.txt")).toString()).toBe("first's");
    await second.close();
    // A holder that died (SIGKILL leaves its lock file): its lock is taken over.
    const dead = spawn("true");
    await new Promise((resolve) => dead.on("exit", resolve));
    writeFileSync(
      join(dir, LOCK_NAME),
      JSON.stringify({ pid: dead.pid, start: "1", host: (await import("node:os")).hostname(), token: "x" }),
    );
    const third = closeAfter(await openSession(dir));
    expect((await third.readFile("a.txt")).toString()).toBe("first's");
    await third.close();
    expect(readdirSync(dir)).toEqual(["a.txt"]);
  });
});
