/**
 * The host's walks over a workspace (walk.ts) on real directories, without a sandbox: byte names, deep
 * trees, links, FIFOs, sparse files, the bounds, modes, the lock's reserved name, and a directory/link swap
 * loop racing the walk (a C helper calling renameat2 RENAME_EXCHANGE, compiled here with gcc).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  cleanTree,
  isTextName,
  kindOf,
  maskedMode,
  MAX_DEPTH,
  mirrorTree,
  removePath,
  surveyTree,
  TreeRefused,
} from "../../../src/host/workspace/walk.js";
import { scratchDirs } from "../../helpers/scratch.js";

const MiB = 1024 * 1024;
const scratch = scratchDirs("ears-walk-");
const BIG = { bytes: 1 << 30, files: 100_000 };
const sorted = (dir: string) => readdirSync(dir).sort();
/**
 * `levels` nested directories `d` under `dir`, and a file at the bottom (made from a changing working directory:
 * past PATH_MAX no path names the bottom).
 */
const nest = (dir: string, levels: number) =>
  execFileSync(
    process.execPath,
    [
      "-e",
      `const fs = require("node:fs"); for (let i = 0; i < ${levels}; i++) { fs.mkdirSync("d"); process.chdir("d"); }` +
        ' fs.writeFileSync("bottom", "x");',
    ],
    { cwd: dir },
  );
const depthOf = (dir: string): number => {
  let depth = 0;
  for (let at = dir; existsSync(join(at, "d")); depth++) at = join(at, "d");
  return depth;
};
const hasGcc = spawnSync("gcc", ["--version"]).status === 0;
const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;

describe("the walks' small rules", () => {
  it("masks modes: no group or other write, no setuid, setgid or sticky; the owner keeps read and write (and enter)", () => {
    expect(maskedMode("file", 0o6777)).toBe(0o755);
    expect(maskedMode("file", 0o000)).toBe(0o600);
    expect(maskedMode("file", 0o644)).toBe(0o644);
    expect(maskedMode("directory", 0o1777)).toBe(0o755);
    expect(maskedMode("directory", 0o000)).toBe(0o700);
    expect(maskedMode("directory", 0o750)).toBe(0o750);
  });

  it("tells UTF-8 names from byte names", () => {
    expect(isTextName(Buffer.from("naïve.txt"))).toBe(true);
    expect(isTextName(Buffer.from("bad\xff", "latin1"))).toBe(false);
    expect(isTextName(Buffer.from([0xc3]))).toBe(false);
  });

  it("kinds: file, directory, and everything else is other", () => {
    const dir = scratch();
    writeFileSync(join(dir, "f"), "");
    symlinkSync("f", join(dir, "l"));
    expect(kindOf(lstatSync(join(dir, "f")))).toBe("file");
    expect(kindOf(lstatSync(dir))).toBe("directory");
    expect(kindOf(lstatSync(join(dir, "l")))).toBe("other");
  });
});

describe("cleanTree", () => {
  it.runIf(hasMkfifo)("removes links, FIFOs, byte names and directories past MAX_DEPTH; keeps the rest; never follows a link", async () => {
    const dir = scratch();
    const outside = scratch();
    writeFileSync(join(outside, "keep"), "");
    chmodSync(join(outside, "keep"), 0o666);
    writeFileSync(join(dir, "ok.txt"), "ok");
    writeFileSync(join(dir, "badÿ"), "x");
    writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0x62, 0xff])]), "x");
    mkdirSync(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0x64, 0xfe])]));
    symlinkSync(outside, join(dir, "link"));
    execFileSync("mkfifo", [join(dir, "fifo")]);
    mkdirSync(join(dir, "deep"));
    nest(join(dir, "deep"), 2100);
    const cleaned = await cleanTree(dir, BIG);
    expect(cleaned.complete).toBe(true);
    // "badÿ" is a text name (UTF-8 on disk); the bytes 62 ff and 64 fe are not.
    expect(sorted(dir)).toEqual(["badÿ", "deep", "ok.txt"]);
    expect(depthOf(join(dir, "deep"))).toBe(MAX_DEPTH - 1);
    expect(existsSync(join(dir, "link"))).toBe(false);
    expect(statSync(join(outside, "keep")).mode & 0o777).toBe(0o666);
    expect(cleaned.removed).toBeGreaterThanOrEqual(5);
  });

  it("counts apparent sizes: a sparse file past the bound is removed, in name order, and the rest is kept", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "a.txt"), "a");
    writeFileSync(join(dir, "b.sparse"), "");
    truncateSync(join(dir, "b.sparse"), 1024 ** 3);
    writeFileSync(join(dir, "c.txt"), "c");
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub", "d.txt"), "d");
    const cleaned = await cleanTree(dir, { bytes: 16 * MiB, files: 100 });
    expect(sorted(dir)).toEqual(["a.txt", "c.txt", "sub"]);
    expect(cleaned).toMatchObject({ removed: 1, overBound: 1, files: 4, bytes: 3, complete: true });
  });

  it("counts files and directories: past the bound they are removed", async () => {
    const dir = scratch();
    for (const name of ["a", "b", "c"]) writeFileSync(join(dir, name), "");
    mkdirSync(join(dir, "d"));
    writeFileSync(join(dir, "d", "e"), "");
    const cleaned = await cleanTree(dir, { bytes: MiB, files: 3 });
    expect(sorted(dir)).toEqual(["a", "b", "c"]);
    expect(cleaned).toMatchObject({ files: 3, overBound: 1, complete: true });
  });

  it("masks modes in place, files and directories", async () => {
    const dir = scratch();
    mkdirSync(join(dir, "shared"));
    chmodSync(join(dir, "shared"), 0o777);
    writeFileSync(join(dir, "shared", "f"), "");
    chmodSync(join(dir, "shared", "f"), 0o666);
    await cleanTree(dir, BIG);
    expect(statSync(join(dir, "shared")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dir, "shared", "f")).mode & 0o7777).toBe(0o644);
  });

  it("a missing root is reported incomplete, never thrown", async () => {
    expect(await cleanTree(join(scratch(), "missing"), BIG)).toMatchObject({ complete: false });
  });

  it("finishes a removal the host did not finish (a directory moved to the top to be emptied)", async () => {
    const dir = scratch();
    mkdirSync(join(dir, ".ears-removing-0123"));
    writeFileSync(join(dir, ".ears-removing-0123", "x"), "");
    writeFileSync(join(dir, "kept"), "");
    await cleanTree(dir, BIG);
    expect(sorted(dir)).toEqual(["kept"]);
  });

  it.runIf(hasGcc && hasMkfifo)("a directory/link swap loop racing the walk never makes it follow the link", async () => {
    const dir = scratch();
    const helper = join(scratch(), "swap");
    writeFileSync(
      `${helper}.c`,
      `#define _GNU_SOURCE
#include <fcntl.h>
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
    execFileSync("gcc", ["-O2", "-o", helper, `${helper}.c`]);
    const victim = scratch();
    writeFileSync(join(victim, "open-file"), "");
    chmodSync(join(victim, "open-file"), 0o666);
    execFileSync("mkfifo", [join(victim, "fifo")]);
    const swapper = spawn(helper, [victim], { cwd: dir, stdio: "ignore" });
    try {
      // Until the swapper has made its entries: then each walk races it.
      while (!existsSync(join(dir, "d"))) await new Promise((resolve) => setImmediate(resolve));
      for (let walk = 0; walk < 300; walk++) {
        await cleanTree(dir, BIG);
        await mirrorTree(dir, scratch());
      }
    } finally {
      swapper.kill("SIGKILL");
    }
    expect(sorted(victim)).toEqual(["fifo", "open-file"]);
    expect(statSync(join(victim, "open-file")).mode & 0o777).toBe(0o666);
  });
});

describe("mirrorTree", () => {
  it("makes the target hold what the source holds: removals first, links in the target removed, never written through", async () => {
    const from = scratch();
    const to = scratch();
    const outside = scratch();
    mkdirSync(join(from, "sub"));
    writeFileSync(join(from, "sub", "a.txt"), "new");
    writeFileSync(join(from, "same.txt"), "same");
    chmodSync(join(from, "same.txt"), 0o666);
    writeFileSync(join(to, "gone.txt"), "old");
    mkdirSync(join(to, "was-dir"));
    writeFileSync(join(from, "was-dir"), "now a file");
    symlinkSync(outside, join(to, "sub"));
    writeFileSync(join(to, ".lock"), "held");
    writeFileSync(join(from, ".lock"), "a body's");
    expect(await mirrorTree(from, to, ".lock")).toBe(true);
    expect(sorted(to)).toEqual([".lock", "same.txt", "sub", "was-dir"]);
    expect(readFileSync(join(to, ".lock"), "utf8")).toBe("held");
    expect(lstatSync(join(to, "sub")).isDirectory()).toBe(true);
    expect(readFileSync(join(to, "sub", "a.txt"), "utf8")).toBe("new");
    expect(readFileSync(join(to, "was-dir"), "utf8")).toBe("now a file");
    expect(statSync(join(to, "same.txt")).mode & 0o7777).toBe(0o644);
    expect(readdirSync(outside)).toEqual([]);
    // An unchanged file is not copied again (its inode's change time stays).
    const before = statSync(join(to, "same.txt"), { bigint: true }).ctimeNs;
    expect(await mirrorTree(from, to, ".lock")).toBe(true);
    expect(statSync(join(to, "same.txt"), { bigint: true }).ctimeNs).toBe(before);
    // A changed one is.
    writeFileSync(join(from, "same.txt"), "changed");
    utimesSync(join(from, "same.txt"), 1, 1);
    expect(await mirrorTree(from, to, ".lock")).toBe(true);
    expect(readFileSync(join(to, "same.txt"), "utf8")).toBe("changed");
  });

  it("copies a sparse file's apparent size at most, in chunks, and resolves false (not throws) for a missing side", async () => {
    const from = scratch();
    const to = scratch();
    writeFileSync(join(from, "holes"), "");
    truncateSync(join(from, "holes"), 3 * MiB + 5);
    expect(await mirrorTree(from, to)).toBe(true);
    expect(statSync(join(to, "holes")).size).toBe(3 * MiB + 5);
    expect(await mirrorTree(join(from, "missing"), to)).toBe(false);
    expect(await mirrorTree(from, join(to, "missing"))).toBe(false);
  });
});

describe("surveyTree", () => {
  it("takes a tree within the bound, skipping the reserved name", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "a"), "12345");
    symlinkSync("a", join(dir, ".lock"));
    await expect(surveyTree(dir, { bytes: 5, files: 1 }, ".lock")).resolves.toBeUndefined();
  });

  it("refuses a link, a byte name, a tree too deep, and one past the bound, naming the entry", async () => {
    const linked = scratch();
    mkdirSync(join(linked, "sub"));
    symlinkSync("/", join(linked, "sub", "root"));
    await expect(surveyTree(linked, BIG)).rejects.toThrow(`${linked}/sub/root is a symbolic link`);
    const bytes = scratch();
    writeFileSync(Buffer.concat([Buffer.from(`${bytes}/`), Buffer.from([0x62, 0xff])]), "");
    await expect(surveyTree(bytes, BIG)).rejects.toThrow(/is not named in UTF-8/);
    const deep = scratch();
    nest(deep, MAX_DEPTH + 1);
    await expect(surveyTree(deep, BIG)).rejects.toThrow(`more than ${MAX_DEPTH} directories deep`);
    const shallow = scratch();
    nest(shallow, MAX_DEPTH - 1);
    await expect(surveyTree(shallow, BIG)).resolves.toBeUndefined();
    const big = scratch();
    writeFileSync(join(big, "a"), "");
    truncateSync(join(big, "a"), 2 * MiB);
    const refusal = await surveyTree(big, { bytes: MiB, files: 10 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(TreeRefused);
    expect((refusal as TreeRefused).code).toBe("ENOSPC");
    await expect(surveyTree(big, { bytes: 4 * MiB, files: 0 })).rejects.toThrow("past the bound");
  });
});

describe("removePath", () => {
  it("removes a tree 2,100 levels deep, a file, and nothing for a missing path; never through a link", async () => {
    const dir = scratch();
    mkdirSync(join(dir, "deep"));
    nest(join(dir, "deep"), 2100);
    writeFileSync(join(dir, "f"), "");
    const outside = scratch();
    writeFileSync(join(outside, "keep"), "");
    symlinkSync(outside, join(dir, "link"));
    await removePath(dir, "deep");
    await removePath(dir, "f");
    await removePath(dir, "missing/x");
    await expect(removePath(dir, "link/keep")).rejects.toThrow();
    expect(readdirSync(outside)).toEqual(["keep"]);
    await removePath(dir, "link");
    expect(sorted(dir)).toEqual([]);
    expect(readdirSync(outside)).toEqual(["keep"]);
  });
});
