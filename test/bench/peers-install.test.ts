// bench/lib/peers-install.mjs: the peers (isolated-vm is a native addon) are built against the headers of the Node
// that runs the bench, and built again when that Node changes. Run in child Nodes: the module reads process.version.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const scratch = mkdtempSync(join(tmpdir(), "ears-peers-install-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const module = join(process.cwd(), "bench/lib/peers-install.mjs");

/** Runs `expression` (over `m`, the module) in a child Node and returns what it printed as JSON. */
function evaluate(expression: string, env: Record<string, string> = {}) {
  const source = `const m = await import(${JSON.stringify(module)}); console.log(JSON.stringify(${expression}));`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", source], { encoding: "utf8", env: { ...process.env, ...env } });
  expect(run.stderr.replace(/^peers: installing .*\n/m, "")).toBe("");
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "") as unknown;
}

/** A Node layout `root/bin/node` with `root/include/node/node_version.h` declaring `version`. */
function nodeTree(name: string, version: string): string {
  const root = join(scratch, name);
  mkdirSync(join(root, "bin"), { recursive: true });
  mkdirSync(join(root, "include", "node"), { recursive: true });
  writeFileSync(join(root, "bin", "node"), "");
  const [major, minor, patch] = version.split(".");
  writeFileSync(
    join(root, "include", "node", "node_version.h"),
    [`#define NODE_MAJOR_VERSION ${major}`, `#define NODE_MINOR_VERSION ${minor}`, `#define NODE_PATCH_VERSION ${patch}`, ""].join("\n"),
  );
  return root;
}

describe("the headers the peers are built against", () => {
  it("are the ones beside the Node binary when they declare its release", () => {
    const root = nodeTree("beside", "99.2.0");
    expect(evaluate(`m.nodeHeadersDir(${JSON.stringify(join(root, "bin", "node"))}, "99.2.0")`)).toEqual({ dir: root });
  });

  it("are never another release's: headers of 99.2.1 beside a 99.2.2 binary are refused, and without a registry that is said", () => {
    const root = nodeTree("other", "99.2.1");
    const cache = join(scratch, "cache");
    const found = evaluate(`m.nodeHeadersDir(${JSON.stringify(join(root, "bin", "node"))}, "99.2.2")`, {
      EARS_NODE_CACHE: cache,
      npm_config_registry: "http://127.0.0.1:9/",
      npm_config_fetch_retries: "0",
    });
    const failure = /^no headers of Node 99\.2\.2 to build isolated-vm against \(install-node: npm pack node-linux-/;
    expect(found).toEqual({ failure: expect.stringMatching(failure) });
  });
});

describe("installing the peers", () => {
  /** A stand-in for bench/peers with no dependencies (npm ci needs no registry), and a marker npm ci would remove. */
  function peersDir(name: string, stamp?: (lock: string) => string) {
    const dir = join(scratch, name);
    mkdirSync(join(dir, "node_modules"), { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "stand-in", private: true }));
    const lock = JSON.stringify({ name: "stand-in", lockfileVersion: 3, requires: true, packages: { "": { name: "stand-in" } } });
    writeFileSync(join(dir, "package-lock.json"), lock);
    writeFileSync(join(dir, "node_modules", "marker"), "");
    if (stamp !== undefined) writeFileSync(join(dir, "node_modules", ".installed-from-lock"), stamp(lock));
    return dir;
  }
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

  it("builds them again when they were built for another Node, and records this one", () => {
    // Built from this very lock, by another Node: built again (npm ci empties node_modules), the stamp rewritten.
    const dir = peersDir("other-node", (lock) => `${sha256(lock)} node v1.0.0 ${process.arch}`);
    expect(evaluate(`m.installPeers(${JSON.stringify(dir)}) ?? "installed"`)).toBe("installed");
    expect(existsSync(join(dir, "node_modules", "marker"))).toBe(false);
    const lock = readFileSync(join(dir, "package-lock.json"), "utf8");
    const stamp = readFileSync(join(dir, "node_modules", ".installed-from-lock"), "utf8");
    expect(stamp).toBe(`${sha256(lock)} node ${process.version} ${process.arch}`);
    // Built for this Node and this lock: not built again.
    writeFileSync(join(dir, "node_modules", "marker"), "");
    expect(evaluate(`m.installPeers(${JSON.stringify(dir)}) ?? "installed"`)).toBe("installed");
    expect(existsSync(join(dir, "node_modules", "marker"))).toBe(true);
  });
});
