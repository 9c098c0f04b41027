import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, constants, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Capabilities } from "../../src/host/index.js";
import type { Json } from "../../src/protocol/json.js";
import { rootFiles } from "../../src/cli/root-files.js";

type Answer = { status: string; code?: string; content: string; structured?: Json };
let dir: string;
let real: string;
let files: Capabilities;
let socketServer: Server;
const ctx = { name: "test", id: 1, signal: new AbortController().signal };
const callOn = (capabilities: Capabilities, name: string, args: Json, signal = ctx.signal) =>
  capabilities[name]!(args, { ...ctx, name, signal }) as Promise<Answer>;
const call = (name: string, args: Json) => callOn(files, name, args);

/** The answer, or a rejection if none came within 5 s: a call that blocks must fail the test, not stall it. */
function answerSoon(answer: Promise<Answer>): Promise<Answer> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>(
    (_, fail) => (timer = setTimeout(() => fail(new Error("no answer within 5 s: the call blocked")), 5_000)),
  );
  return Promise.race([answer, hang]).finally(() => clearTimeout(timer));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ears-root-"));
  real = join(dir, "real");
  mkdirSync(join(real, "docs", "deep"), { recursive: true });
  writeFileSync(join(real, "docs", "a.md"), "# A\n");
  writeFileSync(join(real, "big.txt"), "0123456789abcdef");
  writeFileSync(join(dir, "outside.txt"), "outside");
  symlinkSync(join(real, "docs"), join(real, "docs-link")); // a directory link that stays inside
  symlinkSync("loop-b", join(real, "loop-a"));
  symlinkSync("loop-a", join(real, "loop-b"));
  symlinkSync(real, join(dir, "root-link")); // the root itself reached through a link
  symlinkSync(join(dir, "outside.txt"), join(real, "link-out")); // a file link that leaves the root
  symlinkSync(dir, join(real, "dir-out")); // a directory link that leaves the root
  execFileSync("mkfifo", [join(real, "pipe")]);
  socketServer = createServer();
  await new Promise<void>((listening) => socketServer.listen(join(real, "socket"), listening));
  files = await rootFiles(join(dir, "root-link"), { maxFileBytes: 10 });
});
afterAll(async () => {
  // A blocking open of the pipe (the code before O_NONBLOCK) would hold a thread-pool thread: a writer frees it.
  closeSync(openSync(join(real, "pipe"), constants.O_RDWR | constants.O_NONBLOCK));
  await new Promise((closed) => socketServer.close(closed));
  rmSync(dir, { recursive: true, force: true });
});

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
    expect(expected.content).toBe("big.txt\ndir-out\ndocs/\ndocs-link\nlink-out\nloop-a\nloop-b\npipe\nsocket");
    expect(await call("list", {})).toEqual(expected);
    expect(await call("list", { path: "." })).toEqual(expected);
  });

  it("refuses paths that climb out even when they would come back in", async () => {
    for (const [name, path] of [
      ["read", "../outside.txt"],
      ["read", "../real/big.txt"],
      ["read", "docs/../../real/docs/a.md"],
      ["list", "docs/../.."],
      ["list", ".."],
      ["list", "../real"],
    ]) {
      expect(await call(name!, { path: path! })).toEqual({
        status: "failure",
        code: "PathOutsideRoot",
        content: `${path} climbs out of the root with ..; paths must stay inside the root`,
      });
    }
  });

  it("refuses absolute paths, even ones inside the root", async () => {
    for (const [name, path] of [
      ["read", join(real, "docs", "a.md")],
      ["read", join(dir, "outside.txt")],
      ["list", real],
      ["list", join(real, "docs")],
    ]) {
      expect(await call(name!, { path: path! })).toEqual({
        status: "failure",
        code: "PathOutsideRoot",
        content: `${path} is an absolute path; paths must stay inside the root`,
      });
    }
  });

  it("refuses symbolic links that lead outside the root, for read and list", async () => {
    for (const [name, path] of [
      ["read", "link-out"],
      ["read", "dir-out/outside.txt"],
      ["list", "dir-out"],
      ["list", "docs-link/../dir-out"],
    ]) {
      expect(await call(name!, { path: path! })).toEqual({
        status: "failure",
        code: "PathOutsideRoot",
        content: `${path} leads outside the root through a symbolic link; paths must stay inside the root`,
      });
    }
    // A link out and back in names a file inside the root: it is followed like any inside link.
    expect(await call("read", { path: "dir-out/real/docs/a.md" })).toEqual({ status: "success", content: "# A\n" });
  });

  it("refuses scalar and array arguments with InvalidArguments instead of acting on the root", async () => {
    for (const args of [5, "x", true, false, 0, "", ["docs"]] as Json[]) {
      expect(await call("list", args)).toEqual({
        status: "failure",
        code: "InvalidArguments",
        content: `list takes {"path": "dir"} (or null for the root), got ${JSON.stringify(args)}`,
      });
      expect(await call("read", args)).toEqual({
        status: "failure",
        code: "InvalidArguments",
        content: `read takes {"path": "file.txt"}, got ${JSON.stringify(args)}`,
      });
    }
    expect(await call("read", null)).toMatchObject({ code: "InvalidArguments" });
  });

  it("refuses a named pipe at once, without blocking on it, for read and list", async () => {
    expect(await answerSoon(call("read", { path: "pipe" }))).toEqual({
      status: "failure",
      code: "NotAFile",
      content: "pipe is a named pipe, not a regular file",
    });
    expect(await answerSoon(call("list", { path: "pipe" }))).toMatchObject({ status: "failure", code: "NotADirectory" });
  });

  it("refuses a socket with NotAFile", async () => {
    expect(await answerSoon(call("read", { path: "socket" }))).toEqual({
      status: "failure",
      code: "NotAFile",
      content: "socket is not a regular file (a socket, or a device with no driver)",
    });
  });

  it("refuses a directory with NotAFile and a pointer to list", async () => {
    expect(await call("read", { path: "docs" })).toEqual({ status: "failure", code: "NotAFile", content: "docs is a directory; use list" });
  });

  it("gives up waiting for its turn when the call's signal aborts", async () => {
    const aborted = AbortSignal.abort(new Error("the call timed out"));
    await expect(callOn(files, "read", { path: "docs/a.md" }, aborted)).rejects.toThrow("the call timed out");
    await expect(callOn(files, "list", null, aborted)).rejects.toThrow("the call timed out");
    // Nothing was left holding a turn: later calls still run, many at once.
    // (Each with its own signal, as the host gives every call.)
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => callOn(files, "read", { path: "docs/a.md" }, new AbortController().signal)),
    );
    expect(answers.every((answer) => answer.content === "# A\n")).toBe(true);
  });

  it("answers size, loop and argument problems with failures", async () => {
    expect(await call("read", { path: "big.txt" })).toEqual({
      status: "failure",
      code: "FileTooLarge",
      content: "big.txt has 16 bytes; read returns files of up to 10 bytes",
    });
    expect(await call("read", { path: "loop-a" })).toMatchObject({
      code: "FileSystemError",
      content: expect.stringContaining("too many levels of symbolic links"),
    });
    for (const args of [null, [], "a.md", { path: "" }, { path: 3 }, { path: "a\0b" }, { path: null }] as Json[]) {
      expect(await call("read", args)).toMatchObject({ status: "failure", code: "InvalidArguments" });
    }
    expect(await call("list", ["docs"])).toMatchObject({ code: "InvalidArguments" });
  });

  it.runIf(existsSync("/proc/self/status"))("reads at most maxFileBytes + 1 bytes of a file whose size fstat does not know", async () => {
    // Files under /proc report size 0 and still have content, as a file growing after the size check does.
    const proc = await rootFiles("/proc/self", { maxFileBytes: 64 });
    expect(await callOn(proc, "read", { path: "status" })).toEqual({
      status: "failure",
      code: "FileTooLarge",
      content: "status grew past 64 bytes while it was read; read returns files of up to 64 bytes",
    });
    const roomy = await rootFiles("/proc/self", { maxFileBytes: 1024 * 1024 });
    expect(await callOn(roomy, "read", { path: "status" })).toMatchObject({ status: "success", content: expect.stringMatching(/^Name:/) });
  });

  it("confines the same way with the portable check used where /proc/self/fd is missing", async () => {
    const portable = await rootFiles(join(dir, "root-link"), { maxFileBytes: 10, descriptorPaths: false });
    expect(await callOn(portable, "read", { path: "docs-link/a.md" })).toEqual({ status: "success", content: "# A\n" });
    expect(await callOn(portable, "list", { path: "docs" })).toMatchObject({ status: "success", content: "a.md\ndeep/" });
    expect(await callOn(portable, "read", { path: "link-out" })).toMatchObject({ code: "PathOutsideRoot" });
    expect(await callOn(portable, "list", { path: "dir-out" })).toMatchObject({ code: "PathOutsideRoot" });
    expect(await answerSoon(callOn(portable, "read", { path: "pipe" }))).toMatchObject({ code: "NotAFile" });
  });

  it("rejects a root that is missing or not a directory", async () => {
    await expect(rootFiles(join(dir, "nope"))).rejects.toThrow(/the root .*nope cannot be used: ENOENT/);
    await expect(rootFiles(join(dir, "outside.txt"))).rejects.toThrow(/is not a directory/);
  });
});
