import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capabilities } from "../../src/host/index.js";
import type { Json } from "../../src/json.js";
import { rootFiles } from "../../src/cli/root-files.js";

let dir: string;
let files: Capabilities;
const ctx = { name: "test", id: 1, signal: new AbortController().signal };
const call = async (name: string, args: Json) => files[name]!(args, { ...ctx, name }) as Promise<{ status: string; code?: string; content: string; structured?: Json }>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ears-root-"));
  const real = join(dir, "real");
  mkdirSync(join(real, "docs", "deep"), { recursive: true });
  writeFileSync(join(real, "docs", "a.md"), "# A\n");
  writeFileSync(join(real, "big.txt"), "0123456789abcdef");
  writeFileSync(join(dir, "outside.txt"), "outside");
  symlinkSync(join(real, "docs"), join(real, "docs-link")); // a directory link that stays inside
  symlinkSync("loop-b", join(real, "loop-a"));
  symlinkSync("loop-a", join(real, "loop-b"));
  symlinkSync(real, join(dir, "root-link")); // the root itself reached through a link
  files = await rootFiles(join(dir, "root-link"), { maxFileBytes: 10 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("rootFiles", () => {
  it("follows paths and links that stay inside a root that is itself a symbolic link", async () => {
    expect(await call("read", { path: "docs/deep/../a.md" })).toEqual({ status: "success", content: "# A\n" });
    expect(await call("read", { path: "docs-link/a.md" })).toEqual({ status: "success", content: "# A\n" });
    expect(await call("list", { path: "docs-link" })).toEqual({
      status: "success",
      content: "a.md\ndeep/",
      structured: [
        { name: "a.md", type: "file" },
        { name: "deep", type: "directory" },
      ],
    });
  });

  it("lists the root for null, {} and '.'", async () => {
    const expected = await call("list", null);
    expect(expected.content).toBe("big.txt\ndocs/\ndocs-link\nloop-a\nloop-b");
    expect(await call("list", {})).toEqual(expected);
    expect(await call("list", { path: "." })).toEqual(expected);
  });

  it("refuses paths that climb out even when they would come back in", async () => {
    expect(await call("read", { path: "../outside.txt" })).toMatchObject({ code: "PathOutsideRoot" });
    expect(await call("read", { path: "../real/big.txt" })).toMatchObject({ code: "PathOutsideRoot" });
    expect(await call("list", { path: "docs/../.." })).toMatchObject({ code: "PathOutsideRoot" });
  });

  it("answers size, loop and argument problems with failures", async () => {
    expect(await call("read", { path: "big.txt" })).toEqual({
      status: "failure",
      code: "FileTooLarge",
      content: "big.txt has 16 bytes; read returns files of up to 10 bytes",
    });
    expect(await call("read", { path: "loop-a" })).toMatchObject({ code: "FileSystemError", content: expect.stringContaining("too many levels of symbolic links") });
    for (const args of [null, [], "a.md", { path: "" }, { path: 3 }, { path: "a\0b" }] as Json[]) {
      expect(await call("read", args)).toMatchObject({ status: "failure", code: "InvalidArguments" });
    }
    expect(await call("list", ["docs"])).toMatchObject({ code: "InvalidArguments" });
  });

  it("rejects a root that is missing or not a directory", async () => {
    await expect(rootFiles(join(dir, "nope"))).rejects.toThrow(/the root .*nope cannot be used: ENOENT/);
    await expect(rootFiles(join(dir, "outside.txt"))).rejects.toThrow(/is not a directory/);
  });
});
