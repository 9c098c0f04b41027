/**
 * The walks' (walk.ts) finer rules, on real directories in process: what each refusal says and its code, the
 * reserved and unfinished-removal names only at the top, the exact counts of a clean, and what a write-back
 * carries over (times, modes, a change of mode or size alone) and leaves out (special files, past MAX_DEPTH).
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  cleanTree,
  MAX_DEPTH,
  measureTree,
  mirrorTree,
  removePath,
  surveyCleanSync,
  surveyTree,
  TreeRefused,
} from "../../../src/host/workspace/walk.js";
import { scratchDirs } from "../../helpers/scratch.js";

const scratch = scratchDirs("ears-walk-details-");
const BIG = { bytes: 1 << 30, files: 100_000 };
const sorted = (dir: string) => readdirSync(dir).sort();
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as TreeRefused,
  );
const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;
/** `levels` nested directories `d` under `dir`. */
const nest = (dir: string, levels: number) => mkdirSync(join(dir, ...Array.from({ length: levels }, () => "d")), { recursive: true });

describe("surveyTree's refusals", () => {
  it.runIf(hasMkfifo)("a special file is named as one, with EINVAL", async () => {
    const dir = scratch();
    mkdirSync(join(dir, "sub"));
    execFileSync("mkfifo", [join(dir, "sub", "pipe")]);
    const error = await refusal(surveyTree(dir, BIG));
    expect(error).toBeInstanceOf(TreeRefused);
    expect(error?.code).toBe("EINVAL");
    expect(error?.message).toBe(
      `${dir}/sub/pipe is not a regular file or directory; a workspace holds only files and directories ` +
        "(remove it, or copy what it leads to in its place)",
    );
  });

  it("a byte name is named (as JSON) with EINVAL; a too deep tree with EINVAL", async () => {
    const dir = scratch();
    writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0x62, 0xff])]), "");
    const error = await refusal(surveyTree(dir, BIG));
    expect(error?.code).toBe("EINVAL");
    expect(error?.message).toBe(`${JSON.stringify(`${dir}/b\ufffd`)} is not named in UTF-8; a workspace's names are text`);
    const deep = scratch();
    nest(deep, MAX_DEPTH + 1);
    const tooDeep = await refusal(surveyTree(deep, BIG));
    expect(tooDeep?.code).toBe("EINVAL");
    expect(tooDeep?.message).toBe(
      `${deep}/${Array.from({ length: MAX_DEPTH + 1 }, () => "d").join("/")} is more than ${MAX_DEPTH} directories deep`,
    );
    const exact = scratch();
    nest(exact, MAX_DEPTH);
    await expect(surveyTree(exact, BIG)).resolves.toBeUndefined();
  });

  it("the reserved name is skipped at the top only; the bounds count directories and are inclusive", async () => {
    const dir = scratch();
    mkdirSync(join(dir, "sub"));
    symlinkSync("x", join(dir, "sub", ".lock"));
    await expect(surveyTree(dir, BIG, ".lock")).rejects.toThrow(`${dir}/sub/.lock is a symbolic link`);
    const counted = scratch();
    mkdirSync(join(counted, "a"));
    writeFileSync(join(counted, "a", "f"), "xy");
    await expect(surveyTree(counted, { bytes: 2, files: 2 })).resolves.toBeUndefined();
    await expect(surveyTree(counted, { bytes: 2, files: 1 })).rejects.toThrow("past the bound");
    await expect(surveyTree(counted, { bytes: 1, files: 2 })).rejects.toThrow("past the bound");
    await expect(surveyTree(join(counted, "missing"), BIG)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("cleanTree's counts", () => {
  it.runIf(hasMkfifo)("counts what it removed and kept, exactly; an unfinished removal's name is kept below the top", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "a"), "abc");
    symlinkSync("a", join(dir, "link"));
    execFileSync("mkfifo", [join(dir, "fifo")]);
    mkdirSync(join(dir, "sub"));
    mkdirSync(join(dir, "sub", ".ears-removing-0123"));
    writeFileSync(join(dir, "sub", "b"), "de");
    mkdirSync(join(dir, ".ears-removing-4567"));
    const cleaned = await cleanTree(dir, BIG);
    expect(cleaned).toEqual({ removed: 3, overBound: 0, masked: 0, files: 4, bytes: 5, complete: true });
    expect(sorted(dir)).toEqual(["a", "sub"]);
    expect(sorted(join(dir, "sub"))).toEqual([".ears-removing-0123", "b"]);
  });

  it("a directory past the bound is removed with all it holds; a file's bytes are counted inclusively", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "a"), "12");
    mkdirSync(join(dir, "b"));
    writeFileSync(join(dir, "b", "c"), "3");
    const cleaned = await cleanTree(dir, { bytes: 3, files: 3 });
    expect(cleaned).toEqual({ removed: 0, overBound: 0, masked: 0, files: 3, bytes: 3, complete: true });
    const over = await cleanTree(dir, { bytes: 2, files: 3 });
    expect(over).toEqual({ removed: 1, overBound: 1, masked: 0, files: 2, bytes: 2, complete: true });
    expect(existsSync(join(dir, "b", "c"))).toBe(false);
    const fewer = await cleanTree(dir, { bytes: 100, files: 1 });
    expect(fewer).toEqual({ removed: 1, overBound: 1, masked: 0, files: 1, bytes: 2, complete: true });
    expect(sorted(dir)).toEqual(["a"]);
  });

  it("leaves modes that are already masked as they are, and masks a setuid file", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "plain"), "");
    chmodSync(join(dir, "plain"), 0o640);
    writeFileSync(join(dir, "setuid"), "");
    chmodSync(join(dir, "setuid"), 0o4755);
    mkdirSync(join(dir, "d"));
    chmodSync(join(dir, "d"), 0o2750);
    expect((await cleanTree(dir, BIG)).masked).toBe(2);
    expect(statSync(join(dir, "plain")).mode & 0o7777).toBe(0o640);
    expect(statSync(join(dir, "setuid")).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dir, "d")).mode & 0o7777).toBe(0o750);
  });

  it("a survey changes nothing and counts what the clean would remove and mask; a clean tree surveys as nothing to do", async () => {
    const dir = scratch();
    writeFileSync(join(dir, "setuid"), "");
    chmodSync(join(dir, "setuid"), 0o4755);
    mkdirSync(join(dir, "d"));
    chmodSync(join(dir, "d"), 0o2750);
    writeFileSync(join(dir, "d", "kept"), "12");
    symlinkSync("/etc/passwd", join(dir, "link"));
    writeFileSync(join(dir, "over"), "345");
    const bound = { bytes: 4, files: 4 };
    const seen = await cleanTree(dir, bound, { survey: true });
    // In name order: the link goes, "over" is kept (3 bytes), d/kept would pass the bytes.
    expect(seen).toEqual({ removed: 2, overBound: 1, masked: 2, files: 3, bytes: 3, complete: true });
    expect(sorted(dir)).toEqual(["d", "link", "over", "setuid"]);
    expect(statSync(join(dir, "setuid")).mode & 0o7777).toBe(0o4755);
    expect(statSync(join(dir, "d")).mode & 0o7777).toBe(0o2750);
    // The clean does what the survey counted; after it, a survey finds nothing to do.
    expect(await cleanTree(dir, bound)).toEqual(seen);
    expect(sorted(dir)).toEqual(["d", "over", "setuid"]);
    expect(sorted(join(dir, "d"))).toEqual([]);
    expect(await cleanTree(dir, bound, { survey: true })).toEqual({
      removed: 0,
      overBound: 0,
      masked: 0,
      files: 3,
      bytes: 3,
      complete: true,
    });
  });
});

describe("surveyCleanSync", () => {
  /** A small tree: files (sizes, modes), directories (modes, nested), links, FIFOs, byte names, an unfinished removal's name. */
  type Entry = { name: string; kind: "file" | "directory" | "link" | "fifo" | "bytes"; size: number; mode: number; inner: Entry[] };
  const entry: fc.Memo<Entry> = fc.memo((depth) =>
    fc.record({
      name: fc.constantFrom("a", "b", "c", "d", ".ears-removing-x"),
      kind: fc.constantFrom("file", "file", "file", "directory", "directory", "link", "fifo", "bytes"),
      size: fc.nat(6),
      mode: fc.constantFrom(0o600, 0o644, 0o640, 0o666, 0o700, 0o755, 0o4755, 0o2750, 0o1777),
      inner: depth > 1 ? fc.array(entry(depth - 1), { maxLength: 3 }) : fc.constant([]),
    }),
  );
  const make = (dir: string, entries: Entry[]) => {
    for (const { name, kind, size, mode, inner } of entries) {
      const path = join(dir, name);
      if (existsSync(path)) continue;
      if (kind === "file") {
        writeFileSync(path, "x".repeat(size));
        chmodSync(path, mode);
      } else if (kind === "directory") {
        mkdirSync(path);
        make(path, inner);
        chmodSync(path, mode | 0o700);
      } else if (kind === "link") symlinkSync("/etc/passwd", path);
      else if (kind === "fifo") execFileSync("mkfifo", [path]);
      else writeFileSync(Buffer.from(join(dir, "bad-\xff"), "latin1"), "");
    }
  };

  it("says clean exactly when cleanTree's survey counts nothing to remove or mask (random trees and bounds)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entry(3), { maxLength: 5 }), fc.nat(12), fc.nat(12), async (entries, bytes, files) => {
        const dir = scratch();
        make(dir, entries);
        const seen = await cleanTree(dir, { bytes, files }, { survey: true });
        expect(surveyCleanSync(dir, { bytes, files })).toBe(seen.complete && seen.removed === 0 && seen.masked === 0);
        rmSync(dir, { recursive: true, force: true });
      }),
      { seed: 0x5ea1, numRuns: 150 },
    );
  });

  it("leaves a tree past its budget to the asynchronous survey (undefined), and a root that cannot be opened is not clean", () => {
    const dir = scratch();
    mkdirSync(join(dir, "d"));
    for (const name of ["a", "b", "c"]) writeFileSync(join(dir, "d", name), "");
    expect(surveyCleanSync(dir, BIG, 4)).toBe(true);
    expect(surveyCleanSync(dir, BIG, 3)).toBeUndefined();
    expect(surveyCleanSync(join(dir, "missing"), BIG)).toBe(false);
    expect(surveyCleanSync(join(dir, "d", "a"), BIG)).toBe(false);
  });
});

describe("mirrorTree's copies", () => {
  it("carries the source's times and masked modes over, files and directories", async () => {
    const from = scratch();
    const to = scratch();
    mkdirSync(join(from, "d"));
    chmodSync(join(from, "d"), 0o777);
    writeFileSync(join(from, "d", "f"), "body");
    chmodSync(join(from, "d", "f"), 0o4666);
    utimesSync(join(from, "d", "f"), 1000.5, 2000.25);
    expect(await mirrorTree(from, to)).toBe(true);
    const copied = statSync(join(to, "d", "f"));
    expect(copied.mode & 0o7777).toBe(0o644);
    expect(copied.mtimeMs).toBe(2000250);
    expect(copied.atimeMs).toBe(1000500);
    expect(statSync(join(to, "d")).mode & 0o7777).toBe(0o755);
    // A directory whose mode changed is masked again on the next write-back.
    chmodSync(join(to, "d"), 0o700);
    expect(await mirrorTree(from, to)).toBe(true);
    expect(statSync(join(to, "d")).mode & 0o7777).toBe(0o755);
  });

  it("copies a file again when only its mode, or only its size, differs", async () => {
    const from = scratch();
    const to = scratch();
    writeFileSync(join(from, "f"), "aaaa");
    expect(await mirrorTree(from, to)).toBe(true);
    chmodSync(join(to, "f"), 0o600);
    expect(await mirrorTree(from, to)).toBe(true);
    expect(statSync(join(to, "f")).mode & 0o7777).toBe(0o644);
    // Same time, another size.
    const { mtime, atime } = statSync(join(from, "f"));
    writeFileSync(join(to, "f"), "bb");
    utimesSync(join(to, "f"), atime, mtime);
    expect(await mirrorTree(from, to)).toBe(true);
    expect(readFileSync(join(to, "f"), "utf8")).toBe("aaaa");
    // Same size and mode, a time a second away.
    writeFileSync(join(to, "f"), "cccc");
    utimesSync(join(to, "f"), atime, new Date(mtime.getTime() - 1000));
    expect(await mirrorTree(from, to)).toBe(true);
    expect(readFileSync(join(to, "f"), "utf8")).toBe("aaaa");
  });

  it.runIf(hasMkfifo)(
    "leaves special files out, keeps the reserved name at the top only, and removes a link that replaced a file",
    async () => {
      const from = scratch();
      const to = scratch();
      execFileSync("mkfifo", [join(from, "pipe")]);
      mkdirSync(join(from, "sub"));
      writeFileSync(join(from, "sub", ".lock"), "mine");
      writeFileSync(join(from, "f"), "file");
      symlinkSync("f", join(to, "f"));
      expect(await mirrorTree(from, to, ".lock")).toBe(true);
      expect(sorted(to)).toEqual(["f", "sub"]);
      expect(lstatSync(join(to, "f")).isFile()).toBe(true);
      expect(readFileSync(join(to, "sub", ".lock"), "utf8")).toBe("mine");
      // A special file in the target where the source has one too is removed, not kept.
      execFileSync("mkfifo", [join(to, "pipe")]);
      expect(await mirrorTree(from, to, ".lock")).toBe(true);
      expect(sorted(to)).toEqual(["f", "sub"]);
    },
  );

  it("writes directories down to MAX_DEPTH levels, and no deeper", async () => {
    const from = scratch();
    const to = scratch();
    nest(from, MAX_DEPTH + 2);
    expect(await mirrorTree(from, to)).toBe(true);
    let depth = 0;
    for (let at = to; existsSync(join(at, "d")); depth++) at = join(at, "d");
    expect(depth).toBe(MAX_DEPTH);
  });

  it("copies a file of more than one chunk whole", async () => {
    const from = scratch();
    const to = scratch();
    const body = Buffer.alloc(2 * 1024 * 1024 + 3);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    writeFileSync(join(from, "big"), body);
    writeFileSync(join(from, "empty"), "");
    expect(await mirrorTree(from, to)).toBe(true);
    expect(readFileSync(join(to, "big")).equals(body)).toBe(true);
    expect(statSync(join(to, "empty")).size).toBe(0);
  });
});

describe("measureTree's counts", () => {
  it("counts every entry (links and pipes too) and files' apparent sizes, in pages when asked; changes nothing", async () => {
    const root = scratch();
    writeFileSync(join(root, "a"), "12345");
    mkdirSync(join(root, "d"));
    writeFileSync(join(root, "d", "b"), Buffer.alloc(5000));
    symlinkSync("/etc/passwd", join(root, "link"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    const sparse = join(root, "d", "sparse");
    writeFileSync(sparse, "");
    execFileSync("truncate", ["-s", "1M", sparse]);
    expect(await measureTree(root, BIG)).toStrictEqual({ files: 6, bytes: 5 + 5000 + (1 << 20), deep: false });
    expect(await measureTree(root, BIG, 4096)).toStrictEqual({ files: 6, bytes: 4096 + 8192 + (1 << 20), deep: false });
    expect(sorted(root)).toEqual(["a", "d", "fifo", "link"]);
  });

  it("stops at the first entry past a bound and says which; the bounds are inclusive", async () => {
    const root = scratch();
    for (const name of ["a", "b", "c"]) writeFileSync(join(root, name), Buffer.alloc(100));
    expect(await measureTree(root, { bytes: 300, files: 3 })).toStrictEqual({ files: 3, bytes: 300, deep: false });
    expect(await measureTree(root, { bytes: 299, files: 3 })).toMatchObject({ over: "bytes", files: 3 });
    expect(await measureTree(root, { bytes: 300, files: 2 })).toMatchObject({ over: "files", files: 3 });
  });

  it("counts a directory deeper than MAX_DEPTH but walks nothing in it (deep); never follows a link", async () => {
    const root = scratch();
    let at = root;
    for (let level = 0; level <= MAX_DEPTH; level++) {
      at = join(at, "d");
      mkdirSync(at);
    }
    writeFileSync(join(at, "hidden"), Buffer.alloc(4096));
    const outside = scratch();
    writeFileSync(join(outside, "big"), Buffer.alloc(1 << 20));
    symlinkSync(outside, join(root, "out"));
    const measured = await measureTree(root, BIG);
    expect(measured).toStrictEqual({ files: MAX_DEPTH + 2, bytes: 0, deep: true });
  });

  it.runIf(process.getuid?.() !== 0)(
    "a directory it cannot read is named (unreadable); a missing root is unreadable at the top",
    async () => {
      const root = scratch();
      mkdirSync(join(root, "closed"));
      chmodSync(join(root, "closed"), 0);
      expect(await measureTree(root, BIG)).toMatchObject({ unreadable: "closed" });
      chmodSync(join(root, "closed"), 0o700);
    },
  );

  it("walks every directory, the ones after a nested one too, and closes every descriptor it opened", async () => {
    const root = scratch();
    for (const inner of ["x", "y"]) {
      mkdirSync(join(root, "a", inner), { recursive: true });
      writeFileSync(join(root, "a", inner, "f"), "1");
    }
    mkdirSync(join(root, "b"));
    writeFileSync(join(root, "b", "f"), "22");
    const open = () => readdirSync("/proc/self/fd").length;
    const before = open();
    expect(await measureTree(root, BIG)).toStrictEqual({ files: 7, bytes: 4, deep: false });
    expect(open()).toBe(before);
  });

  it("counts nothing past the first entry over a bound, in the directories after it neither", async () => {
    const root = scratch();
    for (const name of ["a", "b", "c"]) writeFileSync(join(root, name), Buffer.alloc(100));
    expect(await measureTree(root, { bytes: 1 << 20, files: 1 })).toStrictEqual({ files: 2, bytes: 200, deep: false, over: "files" });
    expect(await measureTree(root, { bytes: 150, files: 10 })).toStrictEqual({ files: 2, bytes: 200, deep: false, over: "bytes" });
    const nested = scratch();
    for (const dir of ["a", "b"]) {
      mkdirSync(join(nested, dir));
      for (const name of ["f", "g", "h"]) writeFileSync(join(nested, dir, name), "1");
    }
    expect(await measureTree(nested, { bytes: 1 << 20, files: 3 })).toStrictEqual({ files: 4, bytes: 2, deep: false, over: "files" });
  });

  it("a file at MAX_DEPTH is no directory too deep", async () => {
    const root = scratch();
    nest(root, MAX_DEPTH);
    writeFileSync(join(root, ...Array.from({ length: MAX_DEPTH }, () => "d"), "leaf"), "x");
    expect(await measureTree(root, BIG)).toStrictEqual({ files: MAX_DEPTH + 1, bytes: 1, deep: false });
  });

  it("a root that cannot be opened is unreadable at the top", async () => {
    expect(await measureTree(join(scratch(), "missing"), BIG)).toStrictEqual({ files: 0, bytes: 0, deep: false, unreadable: "" });
  });
});

describe("removePath", () => {
  it("removes a nested file and a directory through its parents; a file on the way is an error", async () => {
    const dir = scratch();
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    writeFileSync(join(dir, "a", "b", "f"), "");
    writeFileSync(join(dir, "a", "g"), "");
    await removePath(dir, "a/b/f");
    expect(sorted(join(dir, "a", "b"))).toEqual([]);
    await removePath(dir, "a/b");
    expect(sorted(join(dir, "a"))).toEqual(["g"]);
    await expect(removePath(dir, "a/g/x")).rejects.toMatchObject({ code: "ENOTDIR" });
    await expect(removePath(join(dir, "missing"), "x")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
