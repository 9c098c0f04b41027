/**
 * `ears exec --workspace DIR` (issue 32): DIR is a durable session's directory, the body's writable and
 * kept working directory, bounded by --workspace-size. Real CLI processes: what one writes the next reads.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyForUser, runAs } from "../helpers/as-user.js";
import { ears } from "../helpers/spawn-ears.js";

const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
const root = process.platform === "linux" && process.getuid?.() === 0;

describe.runIf(root)("ears exec --workspace", () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), "ears-exec-ws-"));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));
  let count = 0;
  const fresh = () => join(base, `ws-${++count}`);

  it("writes a file in one exec and reads it in the next; DIR holds it in between", async () => {
    const dir = fresh();
    const made = await ears([
      "exec",
      "--workspace",
      dir,
      "--code",
      `${FS}fs.mkdirSync("notes"); fs.writeFileSync("notes/a.txt", "hello"); return "ok";`,
    ]);
    expect(made.stdout.trim()).toBe('"ok"');
    expect(made.code).toBe(0);
    expect(readFileSync(join(dir, "notes", "a.txt"), "utf8")).toBe("hello");
    const read = await ears(["exec", "--workspace", dir, "--code", `${FS}return fs.readFileSync("notes/a.txt", "utf8");`]);
    expect(read.stdout.trim()).toBe('"hello"');
    expect(read.code).toBe(0);
  });

  it("a write past --workspace-size fails with ENOSPC inside the body, and DIR never holds more", async () => {
    const dir = fresh();
    const run = await ears([
      "exec",
      "--workspace",
      dir,
      "--workspace-size",
      "1M",
      "--code",
      `${FS}try { fs.writeFileSync("big.bin", Buffer.alloc(2 * 1024 * 1024, 1)); return "written"; } catch (e) { return e.code; }`,
    ]);
    expect(run.stdout.trim()).toBe('"ENOSPC"');
    expect(run.code).toBe(0);
    const size = existsSync(join(dir, "big.bin")) ? lstatSync(join(dir, "big.bin")).size : 0;
    expect(size).toBeLessThanOrEqual(1024 * 1024);
  });

  it("a link the body plants is neither kept in DIR nor followed by the next exec", async () => {
    const dir = fresh();
    const plant = await ears([
      "exec",
      "--workspace",
      dir,
      "--code",
      `${FS}fs.symlinkSync("/etc/passwd", "pw"); fs.writeFileSync("kept.txt", "k"); return 1;`,
    ]);
    expect(plant.code).toBe(0);
    expect(readdirSync(dir)).toEqual(["kept.txt"]);
    const next = await ears(["exec", "--workspace", dir, "--code", `${FS}return [fs.existsSync("pw"), fs.readdirSync(".")];`]);
    expect(JSON.parse(next.stdout)).toEqual([false, ["kept.txt"]]);
  });

  it.each([
    [
      "a symbolic link",
      (dir: string) => symlinkSync("/etc/passwd", join(dir, "pw")),
      /pw is a symbolic link; a workspace holds only files and directories/,
    ],
    ["a named pipe", (dir: string) => execFileSync("mkfifo", [join(dir, "pipe")]), /pipe is not a regular file or directory/],
    [
      "more than --workspace-size",
      (dir: string) => writeFileSync(join(dir, "big.bin"), Buffer.alloc(2 * 1024 * 1024)),
      /holds more than --workspace-size/,
    ],
  ])("refuses a DIR holding %s: exit 64, nothing ran, DIR unchanged", async (_, plant, message) => {
    const dir = fresh();
    mkdirSync(dir);
    plant(dir);
    const before = readdirSync(dir);
    const run = await ears([
      "exec",
      "--workspace",
      dir,
      "--workspace-size",
      "1M",
      "--code",
      `${FS}fs.writeFileSync("ran", "1"); return 1;`,
    ]);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain(`ears: --workspace ${JSON.stringify(dir)}: `);
    expect(run.code).toBe(64);
    expect(readdirSync(dir)).toEqual(before);
  });

  it("refuses DIR when it is a file or a link to a directory", async () => {
    const file = join(base, "a-file");
    writeFileSync(file, "x");
    const link = join(base, "a-link");
    symlinkSync(base, link);
    for (const dir of [file, link]) {
      const run = await ears(["exec", "--workspace", dir, "--code", "return 1;"]);
      expect(run.stderr).toContain("is not a directory");
      expect(run.code).toBe(64);
    }
  });

  it.each([
    [["--no-sandbox"], "--workspace runs the body sandboxed"],
    [["--cwd", "."], "--workspace and --cwd both choose the body's working directory"],
    [["--workspace-size", "512K"], "--workspace-size 512K is 512 KiB, under the least of 1 MiB"],
    [["--workspace-size", "lots"], "--workspace-size takes a size in bytes, or with K, M or G"],
  ])("refuses --workspace with %j as a usage error, and makes no DIR", async (extra, message) => {
    const dir = fresh();
    const run = await ears(["exec", "--workspace", dir, ...extra, "--code", "return 1;"]);
    expect(run.stderr).toContain(message);
    expect(run.code).toBe(64);
    expect(existsSync(dir)).toBe(false);
  });

  it("refuses --workspace-size without --workspace", async () => {
    const run = await ears(["exec", "--workspace-size", "8M", "--code", "return 1;"]);
    expect(run.stderr).toContain("--workspace-size bounds --workspace DIR; give --workspace too");
    expect(run.code).toBe(64);
  });

  it("on a host that is not root: the workspace is copied into each run's sandbox (no mount), DIR keeps what the body wrote", async () => {
    // As nobody, from a copy it can reach: the checkout's parents may be 0700 (a clone under /root).
    const copy = copyForUser({ packages: ["amaro"] });
    try {
      const parent = copy.dir("for-nobody");
      const dir = join(parent, "ws");
      const exec = (code: string) =>
        runAs(copy, [copy.ears, "exec", "--workspace", dir, "--workspace-size", "4M", "--code", code], { cwd: parent });
      const first = await exec(`${FS}fs.writeFileSync("note.txt", "kept");\nreturn "written";`);
      expect(first.stderr).not.toMatch(/cannot be bounded/);
      expect(first.code).toBe(0);
      expect(readFileSync(join(dir, "note.txt"), "utf8")).toBe("kept");
      // Past the bound the write fails inside the body, as on a root host.
      const flood = await exec(
        `${FS}try { fs.writeFileSync("big.bin", Buffer.alloc(8 << 20)); return "written"; } catch (e) { return e.code; }`,
      );
      expect(flood.code).toBe(0);
      expect(flood.stdout).toContain("ENOSPC");
      const next = await exec(`${FS}return fs.readFileSync("note.txt", "utf8");`);
      expect(next.stdout).toContain("kept");
    } finally {
      copy.remove();
    }
  });
});
