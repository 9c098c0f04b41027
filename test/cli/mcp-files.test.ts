/**
 * Files MCP tools send (images, blobs) under `ears exec` / `ears run --mcp-config` (issue 29 item 10): a path
 * the CLI prints must exist after it exits. By default they are kept in a fresh directory under the OS
 * temporary directory, named on stderr; `--files-dir DIR` puts them there. With server-everything's
 * get-tiny-image, through the built CLI.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EARS, type EarsRun } from "../helpers/spawn-ears.js";

const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const GUEST = resolve("fixtures/guests/call-input.mjs");

describe("files from MCP tools outlive the command that printed their paths", () => {
  let root: string;
  let dir: string;
  /** The ears child's temporary directory (TMPDIR), so what it leaves there can be seen and removed. */
  let temp: string;
  beforeAll(() => {
    // Siblings: a working directory that holds the temporary directory would be too broad to show a sandboxed guest.
    root = mkdtempSync(join(tmpdir(), "ears-mcp-files-"));
    dir = mkdtempSync(join(root, "work-"));
    temp = mkdtempSync(join(root, "tmp-"));
    writeFileSync(
      join(dir, "mcp.json"),
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } }),
    );
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  function earsIn(args: string[]): Promise<EarsRun> {
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [EARS, ...args], {
        cwd: dir,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TMPDIR: temp },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", fail);
      child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
    });
  }

  const commands: [string, string[]][] = [
    ["exec", ["exec", "--code", 'const r = await ears.call("everything.get-tiny-image", {}); return r;']],
    ["run", ["run", "--input", JSON.stringify({ name: "everything.get-tiny-image", args: {} }), "--", process.execPath, GUEST]],
  ];

  it.each(commands)("ears %s: the image's printed path exists after exit, in a kept directory named on stderr", async (_, args) => {
    const before = new Set(readdirSync(temp));
    const run = await earsIn([...args.slice(0, 1), "--mcp-config", "mcp.json", ...args.slice(1)]);
    expect(run.code, run.stderr).toBe(0);
    const path = /\[image saved to (\S+) \(image\/png, \d+ bytes\)\]/.exec(run.stdout)?.[1];
    expect(path, run.stdout).toBeDefined();
    expect(statSync(path!).size).toBeGreaterThan(0);
    const kept = readdirSync(temp).filter((name) => !before.has(name));
    expect(kept).toHaveLength(1);
    expect(path!.startsWith(join(temp, kept[0]!) + "/")).toBe(true);
    expect(run.stderr).toContain(
      `ears: 1 file from MCP tools kept in ${join(temp, kept[0]!)} (ears does not delete them; --files-dir chooses`,
    );
  });

  it("--files-dir DIR saves them there (created if missing) and keeps them, without a note", async () => {
    const run = await earsIn([
      "exec",
      "--mcp-config",
      "mcp.json",
      "--files-dir",
      "out/images",
      "--code",
      'return (await ears.call("everything.get-tiny-image", {})).structured;',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const { images } = JSON.parse(run.stdout) as { images: string[] };
    expect(images).toHaveLength(1);
    expect(images[0]!.startsWith(join(dir, "out/images") + "/")).toBe(true);
    expect(existsSync(images[0]!)).toBe(true);
    expect(run.stderr).not.toContain("kept in");
  });

  it("a run that saved nothing leaves no directory behind, and says nothing", async () => {
    const before = readdirSync(temp).sort();
    const run = await earsIn([
      "exec",
      "--mcp-config",
      "mcp.json",
      "--code",
      'return (await ears.call("everything.get-sum", { a: 1, b: 2 })).content;',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(temp).sort()).toEqual(before);
    expect(run.stderr).not.toContain("kept in");
  });

  it("--files-dir without --mcp-config is a usage error", async () => {
    const run = await earsIn(["exec", "--files-dir", "out", "--code", "return 1;"]);
    expect(run.code).toBe(64);
    expect(run.stderr).toBe("ears: --files-dir needs --mcp-config (it is where MCP tools' images go)\n");
  });
});
