/**
 * A host whose Node lives under a user's directory (a version manager's `~/.nvm/versions/node/v24/bin/node`, or
 * the registry package's `~/.cache/ears-node/24.22.3/bin/node`, as CI runs it): a sandboxed runCode starts its
 * runner with that very binary, so the sandbox shows it, and nothing else of that directory or of the home
 * around it (the version manager's other files, a token beside it). Real bubblewrap, a real host process
 * started with a copy of this Node at such a path. Nor are the directories bubblewrap makes on its root to hold
 * that bind (the home, the version manager's folders) writable.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { requireBuild } from "../../helpers/spawned-guest.js";

const HOST = `
import { runCode } from ${JSON.stringify(resolve("dist/host/index.js"))};
const home = process.argv[2];
const body = \`const fs = process.getBuiltinModule("node:fs");
const list = (dir) => { try { return fs.readdirSync(dir).sort(); } catch (error) { return error.code; } };
const read = (file) => { try { return fs.readFileSync(file, "utf8"); } catch (error) { return error.code; } };
const write = (file) => { try { fs.writeFileSync(file, "x"); return "written"; } catch (error) { return error.code; } };
const bin = process.execPath.slice(0, process.execPath.lastIndexOf("/"));
return { execPath: process.execPath, version: process.version, bin: list(bin), versions: list(bin + "/../.."),
  home: list(input.home), token: read(input.home + "/.npmrc"), npm: read(bin + "/npm"),
  writes: [input.home + "/x", bin + "/x", "/x", "/tmp/x"].map(write) };\`;
const report = await runCode({ code: body, input: { home }, sandbox: true });
console.log(JSON.stringify({ ok: report.ok, outcome: report.outcome, failure: report.failure, readable: report.sandbox?.readable }));
`;

describe.runIf(bwrapPath !== undefined && process.getuid?.() === 0)("a Node binary under a user's directory", () => {
  // Not under the temporary directory: the sandbox's /tmp is a writable tmpfs, which is no home's place.
  const dir = mkdtempSync(join(existsSync("/var/tmp") ? "/var/tmp" : resolve("."), ".ears-node-home-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("is shown to the runner as the one file it is, with nothing else of its directory or the home", () => {
    requireBuild();
    const home = join(dir, "home", "alice");
    const bin = join(home, ".nvm", "versions", "node", process.version, "bin");
    mkdirSync(bin, { recursive: true });
    mkdirSync(join(home, ".nvm", "versions", "node", "v0.0.1"));
    const node = join(bin, "node");
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
    }
    writeFileSync(join(bin, "npm"), "#!/bin/sh\n");
    writeFileSync(join(home, ".npmrc"), "//registry.npmjs.org/:_authToken=secret-token\n");
    const host = join(dir, "host.mjs");
    writeFileSync(host, HOST);
    const out = execFileSync(node, [host, home], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", HOME: home } });
    const seen = JSON.parse(out.trim().split("\n").at(-1)!);
    expect(seen.failure).toBeUndefined();
    expect(seen.ok).toBe(true);
    expect(seen.outcome.structured).toEqual({
      execPath: node,
      version: process.version,
      bin: ["node"],
      versions: [process.version],
      home: [".nvm"],
      token: "ENOENT",
      npm: "ENOENT",
      // The directories bubblewrap makes to hold the binary's bind are not a place to write (nor is its root):
      // only /tmp (and a run's writable directories) take writes.
      writes: ["EROFS", "EROFS", "EROFS", "written"],
    });
    expect(seen.readable).toContain(node);
    expect(seen.readable.filter((path: string) => path.startsWith(home))).toEqual([node]);
  });
});
