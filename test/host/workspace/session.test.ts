/**
 * Sessions (issue 32): a workspace that lasts between runs. Real sandboxed runs (bubblewrap) on a host that
 * can mount the bounded tmpfs (root), as the sessions need.
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createSession, openSession, runCode, runGuest, type Session } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneFromDisk } from "../../helpers/processes.js";
import { canMountSessions, READ_NOTE, sessionFixtures, WRITE_NOTE } from "../../helpers/sessions.js";
import { within } from "../../helpers/spawned-guest.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const root = fileURLToPath(new URL("../../../", import.meta.url));
const { session, scratchDir } = sessionFixtures("ears-session-test-");
const mounted = (path: string) => readFileSync("/proc/self/mounts", "utf8").includes(` ${path} `);

describe.runIf(canMountSessions)("a session", () => {
  it("a file written in run 1 is read in run 2; another session and a run without one do not see it", async () => {
    const one = await session();
    const two = await session();
    expect((await runCode({ code: WRITE_NOTE, input: "from run 1", session: one })).outcome?.structured).toEqual(["notes"]);
    expect((await runCode({ code: READ_NOTE, session: one })).outcome?.structured).toBe("from run 1");
    expect((await runCode({ code: READ_NOTE, session: two })).outcome?.structured).toBe("ENOENT");
    expect((await runCode({ code: READ_NOTE, sandbox: true })).outcome?.structured).toBe("ENOENT");
    expect((await one.readFile("notes/a.txt")).toString()).toBe("from run 1");
  });

  it("runGuest with a session: the workspace is the guest's writable working directory", async () => {
    const one = await session({ files: { "in.txt": "hello" } });
    const report = await runGuest({
      command: process.execPath,
      args: [join(root, "fixtures/hostile/consume.mjs")],
      input: { action: "tmp", mib: 0 },
      session: one,
    });
    expect(report.sandbox?.writable).toContain(one.path);
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    expect(report.sandbox?.masked.filter((path) => path.startsWith(one.path))).toEqual([]);
  });

  it("two sessions' runs at once each see only their own files", async () => {
    const [a, b] = [await session(), await session()];
    const both = await Promise.all([
      runCode({ code: WRITE_NOTE, input: "a", session: a }),
      runCode({ code: WRITE_NOTE, input: "b", session: b }),
    ]);
    expect(both.map((report) => report.ok)).toEqual([true, true]);
    const reads = await Promise.all([runCode({ code: READ_NOTE, session: a }), runCode({ code: READ_NOTE, session: b })]);
    expect(reads.map((report) => report.outcome?.structured)).toEqual(["a", "b"]);
  });

  it("ENOSPC past workspaceBytes inside the body and from writeFile; the workspace is a tmpfs", async () => {
    const one = await session({ workspaceBytes: 4 * MiB });
    const report = await runCode({
      code: `const fs = process.getBuiltinModule("node:fs");
try { fs.writeFileSync("big", Buffer.alloc(8 * 1024 * 1024)); return "wrote"; } catch (e) { return [e.code, fs.statfsSync(".").type]; }`,
      session: one,
    });
    expect(report.outcome?.structured).toEqual(["ENOSPC", 0x01021994]);
    await expect(one.writeFile("more", new Uint8Array(8 * MiB))).rejects.toMatchObject({ code: "ENOSPC" });
  });

  it("a planted link, socket or setuid bit is neither kept nor followed", async () => {
    const one = await session();
    const outside = scratchDir();
    writeFileSync(join(outside, "secret"), "host secret");
    const report = await runCode({
      code: `const fs = process.getBuiltinModule("node:fs");
fs.symlinkSync(${JSON.stringify(join(outside, "secret"))}, "link");
fs.symlinkSync("/", "root");
fs.writeFileSync("suid", "x"); try { fs.chmodSync("suid", 0o4755); } catch {}
fs.mkdirSync("d"); try { fs.chmodSync("d", 0o3777); } catch {}
const net = process.getBuiltinModule("node:net");
await new Promise((resolve) => { const server = net.createServer().listen("sock", () => { server.unref(); resolve(); }); });
return fs.readdirSync(".").sort();`,
      session: one,
    });
    expect(report.outcome?.structured).toEqual(["d", "link", "root", "sock", "suid"]);
    expect((await one.list()).map((entry) => entry.name)).toEqual(["d", "suid"]);
    expect(lstatSync(join(one.path, "suid")).mode & 0o7000).toBe(0);
    expect(lstatSync(join(one.path, "d")).mode & 0o7000).toBe(0);
    await expect(one.readFile("link")).rejects.toThrow();
    await one.writeFile("link", "written in the workspace");
    expect(readFileSync(join(outside, "secret"), "utf8")).toBe("host secret");
    expect(
      (await runCode({ code: 'return process.getBuiltinModule("node:fs").readdirSync(".").sort();', session: one })).outcome?.structured,
    ).toEqual(["d", "link", "suid"]);
  });

  it("host files in and out: writeFile, readFile, list, remove, paths confined to the workspace", async () => {
    const one = await session({ files: { "data.csv": "a,b\n1,2\n", "bin/raw": new Uint8Array([0, 255]) } });
    const report = await runCode({
      code: `const fs = process.getBuiltinModule("node:fs");
fs.writeFileSync("chart.txt", fs.readFileSync("data.csv", "utf8").toUpperCase());
return [...fs.readFileSync("bin/raw")];`,
      session: one,
    });
    expect(report.outcome?.structured).toEqual([0, 255]);
    expect((await one.readFile("chart.txt")).toString()).toBe("A,B\n1,2\n");
    expect(await one.list()).toEqual([
      { name: "bin", type: "directory", size: 0 },
      { name: "chart.txt", type: "file", size: 8 },
      { name: "data.csv", type: "file", size: 8 },
    ]);
    await one.remove("bin");
    expect((await one.list()).map((entry) => entry.name)).toEqual(["chart.txt", "data.csv"]);
    await expect(one.readFile("../etc/passwd")).rejects.toThrow(/climbs out/);
    await expect(one.readFile("/etc/passwd")).rejects.toThrow(/absolute/);
    await expect(one.writeFile("a\0b", "x")).rejects.toThrow(/NUL/);
    await expect(one.readFile(".")).rejects.toThrow(/directory/);
  });

  it("close() leaves nothing: no directory, no mount; later runs and operations are refused", async () => {
    const one = await createSession({ files: { a: "1" } });
    const base = join(one.path, "..");
    expect(mounted(base)).toBe(true);
    await one.close();
    expect(existsSync(base)).toBe(false);
    expect(mounted(base)).toBe(false);
    expect(() => runCode({ code: "return 1;", session: one })).toThrow(/closed/);
    await expect(one.readFile("a")).rejects.toThrow(/closed/);
  });

  it("a durable session keeps its files in dir, and openSession continues it in a new host process, still bounded", async () => {
    const dir = join(scratchDir(), "kept");
    const one = await createSession({ dir, files: { "seed.txt": "seed" } });
    await runCode({ code: WRITE_NOTE, input: "durable", session: one });
    await one.close();
    expect(readFileSync(join(dir, "notes/a.txt"), "utf8")).toBe("durable");
    const host = spawn(process.execPath, [join(root, "fixtures/hostile/session-host.mjs"), "reopen", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    host.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    await within(new Promise((resolve) => host.once("exit", resolve)), "the second host");
    expect(JSON.parse(out)).toEqual({ read: "durable", full: "ENOSPC" });
    // The write that failed left what fitted; the directory never holds more than the bound.
    expect(readdirSync(dir).sort()).toEqual(["big", "notes", "second.txt", "seed.txt"]);
    expect(lstatSync(join(dir, "big")).size).toBeLessThanOrEqual(2 * MiB);
  });

  it("openSession refuses a directory holding a link, and a workspaceBytes the host cannot have", async () => {
    const dir = scratchDir();
    symlinkSync("/etc", join(dir, "etc"));
    await expect(openSession(dir)).rejects.toThrow(/symbolic link/);
    expect(() => createSession({ workspaceBytes: 10 })).toThrow(RangeError);
    expect(() => runCode({ code: "return 1;", session: {} as Session })).toThrow(/createSession/);
  });

  it("a SIGKILLed host leaves nothing of a temporary session: the watchdog unmounts and removes it", async () => {
    const host = spawn(process.execPath, [join(root, "fixtures/hostile/session-host.mjs"), "hang"], { stdio: ["ignore", "pipe", "pipe"] });
    const base = await within(
      new Promise<string>((resolve, reject) => {
        host.stdout.on("data", (chunk: Buffer) => {
          const line = chunk.toString().trim();
          if (line.startsWith("/")) resolve(line);
        });
        host.once("exit", () => reject(new Error("the host ended first")));
      }),
      "the session's start",
    );
    expect(mounted(base)).toBe(true);
    host.kill("SIGKILL");
    expect(await goneFromDisk([base], 5000)).toEqual([]);
    expect(mounted(base)).toBe(false);
  });
});
