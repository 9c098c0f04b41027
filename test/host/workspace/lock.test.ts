/**
 * A durable session directory's lock (lock.ts) on real directories, in process: taken, refused while held
 * (naming the holder), released, and taken over from a holder that is gone.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOCK_NAME, lockDir, startTimeOf } from "../../../src/host/workspace/lock.js";
import { scratchDirs } from "../../helpers/scratch.js";

const scratch = scratchDirs("ears-lock-");
/** The pid of a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid!;
const plant = (dir: string, holder: object) => writeFileSync(join(dir, LOCK_NAME), JSON.stringify(holder));

describe.runIf(process.platform === "linux")("a session directory's lock", () => {
  it("is taken, refused while held (naming the directory and this process), and released once", async () => {
    const dir = scratch();
    const lock = await lockDir(dir, "openSession");
    const held = JSON.parse(readFileSync(join(dir, LOCK_NAME), "utf8")) as { pid: number; start: string; host: string };
    expect(held).toMatchObject({ pid: process.pid, start: startTimeOf(process.pid), host: hostname() });
    await expect(lockDir(dir, "openSession")).rejects.toThrow(
      `openSession: ${dir} is in use by another open session, held by this process (a session not closed) on ${hostname()}; close it first`,
    );
    await lock.release();
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false);
    const again = await lockDir(dir, "createSession");
    // A second release of the first lock leaves the new holder's lock alone.
    await lock.release();
    expect(existsSync(join(dir, LOCK_NAME))).toBe(true);
    await again.release();
    await again.release();
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false);
  });

  it("names another live process, or another host, as the holder", async () => {
    const dir = scratch();
    plant(dir, { pid: 1, start: startTimeOf(1), host: hostname(), token: "t" });
    await expect(lockDir(dir, "openSession")).rejects.toThrow(
      `${dir} is in use by another open session, held by process 1 on ${hostname()}`,
    );
    plant(dir, { pid: deadPid(), start: "1", host: "elsewhere.example", token: "t" });
    await expect(lockDir(dir, "openSession")).rejects.toThrow(/held by process \d+ on elsewhere\.example/);
  });

  it("takes over a lock whose holder is gone: no such process, or a pid started at another time", async () => {
    const dir = scratch();
    plant(dir, { pid: deadPid(), start: "1", host: hostname(), token: "old" });
    const first = await lockDir(dir, "openSession");
    await first.release();
    plant(dir, { pid: process.pid, start: "not-my-start", host: hostname(), token: "reused" });
    const second = await lockDir(dir, "openSession");
    expect(JSON.parse(readFileSync(join(dir, LOCK_NAME), "utf8"))).toMatchObject({ pid: process.pid, start: startTimeOf(process.pid) });
    await second.release();
  });

  it("refuses, never overwrites, a lock file it cannot read as one; says why it cannot lock a missing directory", async () => {
    const dir = scratch();
    writeFileSync(join(dir, LOCK_NAME), "");
    await expect(lockDir(dir, "openSession")).rejects.toThrow(`openSession: ${dir} is locked by another session (${LOCK_NAME} is there)`);
    writeFileSync(join(dir, LOCK_NAME), '{"pid":"x"}');
    await expect(lockDir(dir, "openSession")).rejects.toThrow(/is locked by another session/);
    expect(readFileSync(join(dir, LOCK_NAME), "utf8")).toBe('{"pid":"x"}');
    await expect(lockDir(join(dir, "missing"), "openSession")).rejects.toThrow(`openSession: cannot lock ${join(dir, "missing")}: ENOENT`);
  });

  it("reads a process's start time, and none for a process that is not running", () => {
    expect(startTimeOf(process.pid)).toMatch(/^\d+$/);
    expect(startTimeOf(deadPid())).toBeUndefined();
  });
  it("writes the lock for its owner alone, and a release after the directory is gone resolves", async () => {
    const dir = scratch();
    const lock = await lockDir(dir, "openSession");
    expect(statSync(join(dir, LOCK_NAME)).mode & 0o777).toBe(0o600);
    rmSync(dir, { recursive: true, force: true });
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it("a live holder that wrote no start time, or this pid on another host, still holds the lock", async () => {
    const dir = scratch();
    plant(dir, { pid: process.pid, host: hostname(), token: "t" });
    await expect(lockDir(dir, "openSession")).rejects.toThrow(`held by this process (a session not closed) on ${hostname()}`);
    plant(dir, { pid: process.pid, start: "1", host: "elsewhere.example", token: "t" });
    await expect(lockDir(dir, "openSession")).rejects.toThrow(`held by process ${process.pid} on elsewhere.example`);
  });

  it("refuses a lock file with no token, or one that is a directory, as not a lock of ours", async () => {
    const dir = scratch();
    writeFileSync(join(dir, LOCK_NAME), JSON.stringify({ pid: deadPid(), start: "1", host: hostname() }));
    await expect(lockDir(dir, "openSession")).rejects.toThrow(`openSession: ${dir} is locked by another session`);
    rmSync(join(dir, LOCK_NAME));
    mkdirSync(join(dir, LOCK_NAME));
    await expect(lockDir(dir, "openSession")).rejects.toThrow(`openSession: ${dir} is locked by another session`);
  });

  it("reads the 22nd field of /proc/PID/stat, counted after the command name", () => {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    // Field 3 (the state) is the first after the name; field 22 (the start time) is 19 further on.
    expect(startTimeOf(process.pid)).toBe(fields[19]);
    expect(fields[0]).toMatch(/^[A-Za-z]$/);
  });
  it("a release leaves alone a lock file that another holder has written since", async () => {
    const dir = scratch();
    const lock = await lockDir(dir, "openSession");
    plant(dir, { pid: 1, start: startTimeOf(1), host: hostname(), token: "" });
    await lock.release();
    expect(JSON.parse(readFileSync(join(dir, LOCK_NAME), "utf8"))).toMatchObject({ pid: 1, token: "" });
  });

  it("takes over a lock of a process that is gone even when it wrote no start time", async () => {
    const dir = scratch();
    plant(dir, { pid: deadPid(), host: hostname(), token: "old" });
    const lock = await lockDir(dir, "openSession");
    expect(JSON.parse(readFileSync(join(dir, LOCK_NAME), "utf8"))).toMatchObject({ pid: process.pid });
    await lock.release();
  });
});
