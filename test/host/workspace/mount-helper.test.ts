/**
 * The mount helper (native/ears-mount.c, driven by src/host/workspace/mount-helper.ts): its request bytes, the
 * host's side against stand-in helpers (a small Node program that records what it was asked and answers, fails,
 * dies or hangs as told), bindMount and unmountBounded going through it instead of mount(8) and umount(8), and,
 * on a root Linux host, the built helper itself: the bounds and flags the kernel reports for its tmpfs, shared
 * propagation reaching a bind made later, a bind, a lazy detach, its errors, and its end with the host.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  bindMount,
  makeBoundedDir,
  mountBounded,
  sealBounded,
  tmpfsData,
  unmountBounded,
  type MountSystem,
} from "../../../src/host/workspace/bounded-dir.js";
import {
  encodeRequest,
  findMountHelper,
  MountHelper,
  mountHelperName,
  REQUEST_TIMEOUT_MS,
  type MountRequest,
} from "../../../src/host/workspace/mount-helper.js";

describe("a mount request's bytes", () => {
  it("is a verb byte and NUL-ended fields", () => {
    const text = (request: MountRequest) => encodeRequest(request)?.toString("latin1");
    expect(text({ verb: "tmpfs", dir: "/t/d", data: "size=8k,nr_inodes=16,mode=0700", shared: true })).toBe(
      "t/t/d\0size=8k,nr_inodes=16,mode=0700\x001\0",
    );
    expect(text({ verb: "tmpfs", dir: "/t/d", data: "size=8k", shared: false })).toBe("t/t/d\0size=8k\x000\0");
    expect(text({ verb: "self-bind", dir: "/t/d" })).toBe("s/t/d\0");
    expect(text({ verb: "bind", source: "/from", target: "/onto" })).toBe("b/from\0/onto\0");
    expect(text({ verb: "detach", dir: "/t/d" })).toBe("u/t/d\0");
    expect(text({ verb: "read-only", dir: "/t/d" })).toBe("r/t/d\0");
    expect(text({ verb: "writable", dir: "/t/d" })).toBe("w/t/d\0");
  });

  it("keeps a path's bytes (UTF-8), and refuses an empty field or one with a NUL byte", () => {
    expect(encodeRequest({ verb: "detach", dir: "/tmp/é\n x" })).toEqual(Buffer.concat([Buffer.from("u"), Buffer.from("/tmp/é\n x\0")]));
    expect(encodeRequest({ verb: "detach", dir: "" })).toBeUndefined();
    expect(encodeRequest({ verb: "bind", source: "/a\0b", target: "/c" })).toBeUndefined();
    expect(encodeRequest({ verb: "bind", source: "/a", target: "" })).toBeUndefined();
  });

  it("gives the helper a bound's tmpfs options without the flags it always sets (nosuid, nodev)", () => {
    expect(tmpfsData({ bytes: 8 * 1024 * 1024, files: 2048 })).toBe("size=8192k,nr_inodes=2048,mode=0700");
    expect(tmpfsData({ bytes: 100, files: 1024 })).toBe("size=1k,nr_inodes=1024,mode=0700");
  });

  it("names the helper per architecture (x64 and arm64 are built)", () => {
    expect(mountHelperName("x64")).toBe("ears-mount-linux-x64");
    expect(mountHelperName("arm64")).toBe("ears-mount-linux-arm64");
    expect(mountHelperName("ia32")).toBeUndefined();
    expect(findMountHelper("ia32")).toBeUndefined();
  });
});

/**
 * A stand-in helper: parses the requests as the real one does, appends each to `log` as a line of its verb and
 * fields (joined by "|"), and answers per the file `mode` in its directory: "ok" (or no file), "fail" (an
 * error line), "die" (exits without answering), "hang" (never answers).
 */
const STAND_IN = `
const { appendFileSync, readFileSync } = require("node:fs");
const [log, modeFile] = process.argv.slice(2);
let buffered = Buffer.alloc(0);
const counts = { t: 3, s: 1, b: 2, u: 1, r: 1, w: 1 };
process.stdin.on("data", (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  for (;;) {
    const verb = String.fromCharCode(buffered[0] ?? 0);
    const fields = [];
    let at = 1;
    while (fields.length < (counts[verb] ?? 0)) {
      const end = buffered.indexOf(0, at);
      if (end < 0) return;
      fields.push(buffered.subarray(at, end).toString("utf8"));
      at = end + 1;
    }
    if (fields.length === 0) return;
    buffered = buffered.subarray(at);
    appendFileSync(log, [verb, ...fields].join("|") + "\\n");
    let mode = "ok";
    try { mode = readFileSync(modeFile, "utf8"); } catch {}
    if (mode === "die") process.exit(7);
    // Told, so that a test changes the mode only once this request's was read.
    if (mode === "hang") { appendFileSync(modeFile + ".hung", "\\n"); continue; }
    process.stdout.write(mode === "fail" ? "error mount --bind: No such file or directory\\n" : "ok\\n");
  }
});
`;

describe.runIf(process.platform === "linux")("the host's side of the mount helper, against a stand-in", () => {
  let dir: string;
  let helperPath: string;
  const log = () => join(dir, "log");
  const requests = () => (existsSync(log()) ? readFileSync(log(), "utf8").trimEnd().split("\n") : []);
  const mode = (what: "ok" | "fail" | "die" | "hang") => writeFileSync(join(dir, "mode"), what);

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-mount-helper-test-"));
    writeFileSync(join(dir, "stand-in.cjs"), STAND_IN);
    helperPath = join(dir, "helper");
    writeFileSync(helperPath, `#!/bin/sh\nexec '${process.execPath}' '${join(dir, "stand-in.cjs")}' '${log()}' '${join(dir, "mode")}'\n`);
    chmodSync(helperPath, 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    rmSync(log(), { force: true });
    rmSync(join(dir, "mode.hung"), { force: true });
    mode("ok");
  });

  it("sends each request once, in order, and matches the replies to them by order", async () => {
    const helper = new MountHelper(helperPath);
    const answers = await Promise.all([
      helper.request({ verb: "tmpfs", dir: "/t/a", data: "size=8k", shared: true }),
      helper.request({ verb: "self-bind", dir: "/t/b" }),
      helper.request({ verb: "bind", source: "/t/ws", target: "/t/a/work" }),
      helper.request({ verb: "detach", dir: "/t/a" }),
    ]);
    expect(answers).toEqual([undefined, undefined, undefined, undefined]);
    expect(requests()).toEqual(["t|/t/a|size=8k|1", "s|/t/b", "b|/t/ws|/t/a/work", "u|/t/a"]);
    mode("fail");
    expect(await helper.request({ verb: "bind", source: "/gone", target: "/t/a" })).toBe("mount --bind: No such file or directory");
    mode("die");
    expect(await helper.request({ verb: "detach", dir: "/t/a" })).toBe("the mount helper ended (exit code 7)");
  });

  it("refuses a path it cannot send, without starting the helper", async () => {
    const helper = new MountHelper(join(dir, "no-such-helper"));
    expect(await helper.request({ verb: "bind", source: "/a\0b", target: "/c" })).toBe(
      "the mount helper takes no empty path nor one with a NUL byte",
    );
  });

  it("a helper that dies fails the requests under way, and the next request starts another", async () => {
    const helper = new MountHelper(helperPath);
    mode("hang");
    const stuck = helper.request({ verb: "detach", dir: "/t/1" });
    // The second request is what makes it die: both fail. The mode changes once the first request's "hang" was
    // read (not when it was logged: the helper would read "die" for it, and the second would never reach it).
    await new Promise<void>((resolve) => {
      const look = () => (existsSync(join(dir, "mode.hung")) ? resolve() : setTimeout(look, 10));
      look();
    });
    mode("die");
    const second = helper.request({ verb: "detach", dir: "/t/2" });
    expect(await stuck).toBe("the mount helper ended (exit code 7)");
    expect(await second).toBe("the mount helper ended (exit code 7)");
    mode("ok");
    expect(await helper.request({ verb: "detach", dir: "/t/3" })).toBeUndefined();
    expect(requests()).toEqual(["u|/t/1", "u|/t/2", "u|/t/3"]);
  });

  it("a helper that cannot be started says why, and so does every request", async () => {
    const helper = new MountHelper(join(dir, "no-such-helper"));
    expect(await helper.request({ verb: "detach", dir: "/t/a" })).toMatch(/^the mount helper (failed|ended) \(.*\)$/);
  });

  it("a helper that does not answer in time is given up, and the next request starts another", async () => {
    const helper = new MountHelper(helperPath);
    helper.timeoutMs = 200;
    mode("hang");
    expect(await helper.request({ verb: "detach", dir: "/t/a" })).toBe("the mount helper did not answer within 200 ms");
    // The next one's deadline is the default again: a stand-in that starts slowly on a loaded machine still answers.
    helper.timeoutMs = REQUEST_TIMEOUT_MS;
    mode("ok");
    expect(await helper.request({ verb: "detach", dir: "/t/b" })).toBeUndefined();
  });

  it("bindMount and unmountBounded go through the helper where the system has one, not through the programs", async () => {
    const helper = new MountHelper(helperPath);
    const system: MountSystem = {
      tools: () => ({ mount: join(dir, "no-mount-program"), umount: join(dir, "no-umount-program") }),
      helper: () => helper.request,
      cover: () => () => {},
    };
    expect(await bindMount("/from/workspace", "/onto/work", system)).toBeUndefined();
    expect(await unmountBounded("/a/bounded/dir", system)).toBeUndefined();
    mode("fail");
    expect(await bindMount("/from/workspace", "/onto/work", system)).toBe(
      "could not bind /from/workspace onto /onto/work (mount --bind: No such file or directory)",
    );
    await expect(unmountBounded("/a/bounded/dir", system)).resolves.toBe(
      "could not detach /a/bounded/dir (mount --bind: No such file or directory)",
    );
    expect(requests()).toEqual(["b|/from/workspace|/onto/work", "u|/a/bounded/dir", "b|/from/workspace|/onto/work", "u|/a/bounded/dir"]);
  });

  it("sealBounded goes through the helper only: without one it says so and runs no program", async () => {
    const helper = new MountHelper(helperPath);
    const tools = () => ({ mount: join(dir, "no-mount-program"), umount: join(dir, "no-umount-program") });
    const system: MountSystem = { tools, helper: () => helper.request, cover: () => () => {} };
    expect(await sealBounded("/a/bounded/dir", true, system)).toBeUndefined();
    expect(await sealBounded("/a/bounded/dir", false, system)).toBeUndefined();
    expect(requests()).toEqual(["r|/a/bounded/dir", "w|/a/bounded/dir"]);
    expect(await sealBounded("/a/bounded/dir", true, { tools, cover: () => () => {} })).toBe("there is no mount helper");
  });

  it("mountBounded and makeBoundedDir mount through the helper too, without blocking the event loop", async () => {
    const helper = new MountHelper(helperPath);
    const covered: string[] = [];
    const system: MountSystem = {
      tools: () => ({ mount: join(dir, "no-mount-program"), umount: join(dir, "no-umount-program") }),
      helper: () => helper.request,
      cover: (path) => {
        covered.push(path);
        return () => {};
      },
    };
    expect(await mountBounded("/t/d", { bytes: 8 * 1024 * 1024, files: 2048 }, true, system)).toBeUndefined();
    expect(await mountBounded("/t/e", undefined, true, system)).toBeUndefined();
    const made = await makeBoundedDir("ears-mount-helper-test-made-", { bytes: 1024 * 1024, files: 1024 }, false, true, system);
    expect(made).toMatchObject({ bounded: true, shared: true });
    await made.remove();
    expect(requests()).toEqual([
      "t|/t/d|size=8192k,nr_inodes=2048,mode=0700|1",
      "s|/t/e",
      `t|${made.dir}|size=1024k,nr_inodes=1024,mode=0700|1`,
      `u|${made.dir}`,
    ]);
    expect(covered).toEqual([made.dir]);
    mode("fail");
    expect(await mountBounded("/t/d", { bytes: 1024 * 1024, files: 1024 }, false, system)).toBe(
      "could not mount a bounded tmpfs on /t/d (mount --bind: No such file or directory); the host needs CAP_SYS_ADMIN (run it as root)",
    );
    const plain = await makeBoundedDir("ears-mount-helper-test-made-", { bytes: 1024 * 1024, files: 1024 }, true, true, system);
    expect(plain).toMatchObject({ bounded: false, shared: false });
    await plain.remove();
    expect(existsSync(plain.dir)).toBe(false);
  });
});

const built = findMountHelper();
const root = process.platform === "linux" && process.getuid?.() === 0;

/** The mountinfo line of the mount at `dir`, or undefined. */
function mountAt(dir: string): string | undefined {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((line) => line.split(" ")[4] === dir)
    .at(-1);
}

describe.runIf(built !== undefined && root)("the built mount helper, as root", () => {
  let top: string;
  let helper: MountHelper;
  beforeAll(() => {
    top = realpathSync(mkdtempSync(join(tmpdir(), "ears-mount-helper-real-")));
    helper = new MountHelper(built!);
  });
  afterAll(async () => {
    for (const name of ["tmp", "self", "onto", "tmp"]) await helper.request({ verb: "detach", dir: join(top, name) });
    rmSync(top, { recursive: true, force: true });
  });

  it("mounts a bounded tmpfs (nosuid, nodev, its size and files), shared: a bind made on it later reaches a bind of it", async () => {
    const dir = join(top, "tmp");
    mkdirSync(dir);
    expect(await helper.request({ verb: "tmpfs", dir, data: "size=1024k,nr_inodes=64,mode=0700", shared: true })).toBeUndefined();
    const line = mountAt(dir)!;
    expect(line).toMatch(/ shared:\d+ /);
    expect(line).toMatch(/ - tmpfs ears-bounded rw,.*size=1024k,nr_inodes=64,mode=700/);
    expect(line.split(" ")[5]).toMatch(/nosuid/);
    expect(line.split(" ")[5]).toMatch(/nodev/);
    // The kernel holds it to its size: a write past 1 MiB fails.
    expect(() => writeFileSync(join(dir, "big"), Buffer.alloc(2 * 1024 * 1024))).toThrow(/ENOSPC/);
    rmSync(join(dir, "big"), { force: true });

    // A bind of a workspace onto a directory in it: the files are the workspace's; detached, they are gone again.
    const workspace = join(top, "workspace");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "kept.txt"), "kept");
    const onto = join(top, "onto");
    mkdirSync(onto);
    expect(await helper.request({ verb: "bind", source: workspace, target: onto })).toBeUndefined();
    expect(readFileSync(join(onto, "kept.txt"), "utf8")).toBe("kept");
    expect(await helper.request({ verb: "detach", dir: onto })).toBeUndefined();
    expect(existsSync(join(onto, "kept.txt"))).toBe(false);
    expect(await helper.request({ verb: "detach", dir })).toBeUndefined();
    expect(mountAt(dir)).toBeUndefined();
  });

  it("makes a tmpfs read-only (all its mounts) and writable again, flags, bounds kept; EBUSY while a file is open to write", async () => {
    const dir = join(top, "sealed");
    mkdirSync(dir);
    expect(await helper.request({ verb: "tmpfs", dir, data: "size=1024k,nr_inodes=64,mode=0700", shared: false })).toBeUndefined();
    writeFileSync(join(dir, "kept.txt"), "kept");
    const onto = join(top, "sealed-onto");
    mkdirSync(onto);
    expect(await helper.request({ verb: "bind", source: dir, target: onto })).toBeUndefined();
    try {
      expect(await helper.request({ verb: "read-only", dir })).toBeUndefined();
      expect(mountAt(dir)).toMatch(/ - tmpfs ears-bounded ro,.*size=1024k,nr_inodes=64,mode=700/);
      expect(mountAt(dir)!.split(" ")[5]).toMatch(/^ro,nosuid,nodev/);
      for (const at of [dir, onto]) {
        expect(() => writeFileSync(join(at, "kept.txt"), "changed")).toThrow(/EROFS/);
        expect(() => writeFileSync(join(at, "new.txt"), "new")).toThrow(/EROFS/);
        expect(() => chmodSync(join(at, "kept.txt"), 0o777)).toThrow(/EROFS/);
      }
      expect(await helper.request({ verb: "writable", dir })).toBeUndefined();
      expect(mountAt(dir)!.split(" ")[5]).toMatch(/^rw,nosuid,nodev/);
      writeFileSync(join(onto, "new.txt"), "new");
      // A file open for writing (here through the bind) keeps it writable: the request fails, nothing changes.
      const held = openSync(join(onto, "new.txt"), "a");
      try {
        expect(await helper.request({ verb: "read-only", dir })).toMatch(/^mount -o remount,ro: (Device or r|R)esource busy$/);
        writeSync(held, "more");
      } finally {
        closeSync(held);
      }
      expect(readFileSync(join(dir, "new.txt"), "utf8")).toBe("newmore");
      expect(await helper.request({ verb: "read-only", dir: join(top, "missing") })).toBe("mount -o remount,ro: No such file or directory");
    } finally {
      await helper.request({ verb: "detach", dir: onto });
      await helper.request({ verb: "detach", dir });
    }
  });

  it("a runner's directory whose detach failed is not removed: the session's workspace bound in it keeps its files", async () => {
    const workspace = join(top, "bound-workspace");
    mkdirSync(workspace);
    writeFileSync(join(workspace, "kept.txt"), "kept");
    // The built helper, but for a detach that fails (as one that timed out), whose directory the watchdog keeps.
    const covered: string[] = [];
    const forgotten: string[] = [];
    const system: MountSystem = {
      tools: () => ({ mount: "/no/mount/program", umount: "/no/umount/program" }),
      helper: () => (request) =>
        request.verb === "detach" ? Promise.resolve("umount -l: a failure the test made") : helper.request(request),
      cover: (dir) => {
        covered.push(dir);
        return () => forgotten.push(dir);
      },
    };
    const runner = await makeBoundedDir("ears-mount-helper-runner-", { bytes: 1024 * 1024, files: 64 }, false, true, system);
    try {
      expect(await bindMount(workspace, runner.work, system)).toBeUndefined();
      expect(readFileSync(join(runner.work, "kept.txt"), "utf8")).toBe("kept");
      await runner.remove();
      expect(readFileSync(join(workspace, "kept.txt"), "utf8")).toBe("kept");
      expect(mountAt(runner.work)).toBeDefined();
      expect(covered).toEqual([runner.dir]);
      expect(forgotten).toEqual([]);
    } finally {
      await helper.request({ verb: "detach", dir: runner.work });
      await helper.request({ verb: "detach", dir: runner.dir });
      rmSync(runner.dir, { recursive: true, force: true });
    }
    expect(readFileSync(join(workspace, "kept.txt"), "utf8")).toBe("kept");
  });

  it("binds a directory onto itself, shared", async () => {
    const dir = join(top, "self");
    mkdirSync(dir);
    expect(await helper.request({ verb: "self-bind", dir })).toBeUndefined();
    expect(mountAt(dir)).toMatch(/ shared:\d+ /);
    expect(await helper.request({ verb: "detach", dir })).toBeUndefined();
  });

  it("says which step failed and why, and leaves nothing mounted", async () => {
    expect(await helper.request({ verb: "bind", source: join(top, "missing"), target: top })).toBe(
      "mount --bind: No such file or directory",
    );
    expect(await helper.request({ verb: "tmpfs", dir: join(top, "missing"), data: "size=8k", shared: false })).toBe(
      "mount: No such file or directory",
    );
    expect(await helper.request({ verb: "tmpfs", dir: top, data: "size=8k,no_such_option", shared: true })).toBe("mount: Invalid argument");
    expect(mountAt(top)).toBeUndefined();
    expect(await helper.request({ verb: "detach", dir: join(top, "missing") })).toBe("umount -l: No such file or directory");
  });

  it("exits 2 on a malformed request, 0 when its input ends", () => {
    const malformed = spawnSync(built!, [], { input: Buffer.from("x/a\0") });
    expect(malformed.status).toBe(2);
    expect(spawnSync(built!, [], { input: Buffer.from("b/only-one-field\0") }).status).toBe(2);
    expect(spawnSync(built!, [], { input: Buffer.from(`u${"a".repeat(5000)}\0`) }).status).toBe(2);
    const ended = spawnSync(built!, [], { input: "" });
    expect(ended.status).toBe(0);
    expect(ended.stdout.toString()).toBe("");
  });

  it("dies with a host that is killed (it never outlives it)", async () => {
    // A host that starts the helper, prints its pid and waits; killed with SIGKILL, it closes nothing itself.
    const host = spawn(process.execPath, [
      "-e",
      `const c = require("node:child_process").spawn(${JSON.stringify(built)}, [], { stdio: ["pipe", "pipe", "ignore"] });` +
        "console.log(c.pid); setInterval(() => {}, 1000);",
    ]);
    const pid = await new Promise<number>((resolve) => host.stdout.once("data", (chunk: Buffer) => resolve(Number(String(chunk).trim()))));
    const alive = () => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    host.kill("SIGKILL");
    await new Promise((resolve) => host.once("exit", resolve));
    for (let tries = 0; tries < 500 && alive(); tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(alive()).toBe(false);
  });
});
