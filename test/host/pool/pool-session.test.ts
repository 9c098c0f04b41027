/**
 * Sessions through a run pool (issue 32): the session's workspace is bound late onto the pooled runner's
 * own working directory (src/host/code/pool-session.ts). Real sandboxed runners (bubblewrap) on a host
 * that can mount (root), as sessions need. Spawned runners load dist/: `npm run build:fast` first.
 */
import { spawn } from "node:child_process";
import { lstatSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCode } from "../../../src/host/index.js";
import { bindSession } from "../../../src/host/code/pool-session.js";
import { codeRunner } from "../../../src/host/code/code-launch.js";
import { encodeBodyFrame } from "../../../src/protocol/code-body.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { canMountSessions, READ_NOTE, sessionFixtures, WRITE_NOTE } from "../../helpers/sessions.js";
import { within } from "../../helpers/spawned-guest.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const { session, pool, scratchDir } = sessionFixtures("ears-pool-session-test-");

const LIST = 'return process.getBuiltinModule("node:fs").readdirSync(".").sort();';

/** The host's mounts of the filesystem `path` is on (its major:minor in /proc/self/mountinfo). */
function mountsOf(path: string): string[] {
  const dev = statSync(path).dev;
  const id = `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & ~0xff)}`;
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => line.split(" ")[2] === id)
    .map((line) => line.split(" ")[4]!);
}

describe.runIf(canMountSessions)("a session's runs through a run pool", () => {
  it("a file written in run 1 is read in run 2 through the pool; another session's run and a run without one do not see it", async () => {
    const warm = pool({ size: 2 });
    const [one, two] = [await session(), await session()];
    const first = await runCode({ code: WRITE_NOTE, input: "from run 1", session: one, pool: warm });
    expect(first, JSON.stringify(first.failure)).toMatchObject({ ok: true, pooled: true, sandbox: { mechanism: "bubblewrap" } });
    expect(first.outcome?.structured).toEqual(["notes"]);
    expect((await runCode({ code: READ_NOTE, session: one, pool: warm })).outcome?.structured).toBe("from run 1");
    expect((await runCode({ code: READ_NOTE, session: two, pool: warm })).outcome?.structured).toBe("ENOENT");
    expect((await runCode({ code: READ_NOTE, pool: warm })).outcome?.structured).toBe("ENOENT");
    expect((await runCode({ code: READ_NOTE, session: one })).outcome?.structured).toBe("from run 1");
    expect((await one.readFile("notes/a.txt")).toString()).toBe("from run 1");
  });

  it("two sessions' runs at once on one pool each see only their own files", async () => {
    const warm = pool({ size: 2 });
    const [a, b] = [await session({ files: { "only-a": "a" } }), await session({ files: { "only-b": "b" } })];
    const both = await Promise.all([
      runCode({ code: WRITE_NOTE, input: "a", session: a, pool: warm }),
      runCode({ code: WRITE_NOTE, input: "b", session: b, pool: warm }),
    ]);
    expect(both.map((report) => [report.ok, report.pooled])).toEqual([
      [true, true],
      [true, true],
    ]);
    expect(both.map((report) => report.outcome?.structured)).toEqual([
      ["notes", "only-a"],
      ["notes", "only-b"],
    ]);
    const reads = await Promise.all([
      runCode({ code: READ_NOTE, session: a, pool: warm }),
      runCode({ code: READ_NOTE, session: b, pool: warm }),
      runCode({ code: LIST, pool: warm }),
    ]);
    expect(reads.map((report) => report.outcome?.structured)).toEqual(["a", "b", []]);
  });

  it("the session's bounds hold in a pooled run (ENOSPC), and a planted link or setuid bit is not kept", async () => {
    const warm = pool({ size: 1 });
    const one = await session({ workspaceBytes: 4 * MiB });
    const outside = scratchDir();
    writeFileSync(join(outside, "secret"), "host secret");
    const report = await runCode({
      code: `const fs = process.getBuiltinModule("node:fs");
fs.symlinkSync(${JSON.stringify(join(outside, "secret"))}, "link");
fs.writeFileSync("suid", "x"); try { fs.chmodSync("suid", 0o4755); } catch {}
try { fs.writeFileSync("big", Buffer.alloc(8 * 1024 * 1024)); return "wrote"; } catch (e) { return [e.code, fs.statfsSync(".").type]; }`,
      session: one,
      pool: warm,
    });
    expect(report.outcome?.structured).toEqual(["ENOSPC", 0x01021994]);
    expect((await one.list()).map((entry) => entry.name)).toEqual(["big", "suid"]);
    expect(lstatSync(join(one.path, "suid")).mode & 0o7000).toBe(0);
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("host secret");
  });

  it("the bind goes with the runner: once the pool is closed the workspace is mounted only at its own place", async () => {
    const warm = pool({ size: 1 });
    const one = await session();
    await runCode({ code: WRITE_NOTE, input: "x", session: one, pool: warm });
    await warm.close();
    expect(mountsOf(one.path)).toEqual([join(one.path, "..")]);
    expect((await one.readFile("notes/a.txt")).toString()).toBe("x");
  });

  it("a durable session's pooled run is written back to its dir", async () => {
    const warm = pool({ size: 1 });
    const dir = scratchDir();
    const one = await session({ dir });
    expect((await runCode({ code: WRITE_NOTE, input: "kept", session: one, pool: warm })).ok).toBe(true);
    expect(readFileSync(join(dir, "notes/a.txt"), "utf8")).toBe("kept");
  });

  it("a pool whose runners cannot take a workspace is a TypeError: made with cwd, or with sandbox: false", async () => {
    const one = await session();
    const cwd = scratchDir();
    expect(() => runCode({ code: "return 1;", session: one, pool: pool({ size: 1, cwd }) })).toThrow(/made with cwd/);
    expect(() => runCode({ code: "return 1;", session: one, pool: pool({ size: 1, sandbox: false }) })).toThrow(/sandbox: false/);
    expect(() => runCode({ code: "return 1;", session: one, pool: pool({ size: 1 }), sandbox: false })).toThrow(/must not be false/);
  });
});

describe.runIf(canMountSessions)("the late bind's refusals", () => {
  it("a runner whose working directory is not the workspace it was told of runs nothing (the code runner's check)", async () => {
    const child = spawn(process.execPath, [codeRunner()], { cwd: tmpdir(), stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const { dev, ino } = statSync("/");
    child.stdin.write(`${encodeBodyFrame('require("fs").writeFileSync("ran", "1"); return 1;', { dev, ino })}\n`);
    child.stdin.write(`${JSON.stringify({ type: "invoke", protocol: 1, allowed: [], input: null })}\n`);
    const code = await within(new Promise((resolve) => child.once("exit", resolve)), "the runner");
    expect(code).toBe(1);
    expect(err).toContain("the session's workspace is not at the working directory");
    expect(out).not.toContain('"type":"result"');
  });

  it("bindSession refuses an unconfined runner and one with no shared directory (left for other runs); a failed mount", async () => {
    const one = await session();
    const unconfined = await bindSession(one, { work: "/nonexistent", shared: true, confined: false });
    expect(unconfined).toMatchObject({ unused: true, failure: { code: "SandboxUnavailable" } });
    expect(unconfined?.failure.message).toMatch(/unconfined/);
    expect(await bindSession(one, { work: undefined, shared: false, confined: true })).toMatchObject({
      unused: true,
      failure: { code: "SpawnFailed", message: expect.stringMatching(/not a shared mount/) },
    });
    const failed = await bindSession(one, { work: join(tmpdir(), "ears-no-such-dir-for-a-bind"), shared: true, confined: true });
    expect(failed).toMatchObject({ unused: false, failure: { code: "SpawnFailed" } });
    expect(failed?.failure.message).toMatch(/could not bind/);
  });
});
