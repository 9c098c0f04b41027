// scripts/install-node.mjs, with-node.mjs and test-nodes.mjs: what they refuse, and a build already in the cache
// used without asking the registry. (Installing from the registry is what every `npm test` does first.)
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const cache = mkdtempSync(join(tmpdir(), "ears-node-cache-"));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

/** node_version.h as a Node release ships it (the lines that name the release). */
function versionHeader(version: string): string {
  const [major, minor, patch] = version.split(".");
  return `#define NODE_MAJOR_VERSION ${major}\n#define NODE_MINOR_VERSION ${minor}\n#define NODE_PATCH_VERSION ${patch}\n`;
}

function script(name: string, args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [`scripts/${name}`, ...args], {
    encoding: "utf8",
    // No registry: a test that reached it would fail (or wait), not pass.
    env: { ...process.env, EARS_NODE_CACHE: cache, npm_config_registry: "http://127.0.0.1:9/", npm_config_fetch_retries: "0", ...env },
  });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr.trim() };
}

describe("the Node builds for the test runs", () => {
  it("install-node takes a version already in the cache without asking the registry", () => {
    const bin = join(cache, "99.1.2", "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "node"), "#!/bin/sh\necho v99.1.2\n");
    chmodSync(join(bin, "node"), 0o755);
    expect(script("install-node.mjs", ["99.1.2"])).toEqual({ status: 0, stdout: join(bin, "node"), stderr: "" });
    // A major resolves to the newest release in the cache when the registry cannot be asked.
    expect(script("install-node.mjs", ["99"]).stdout).toBe(join(bin, "node"));
  });

  it("install-node refuses what is not a version, and says what is", () => {
    const run = script("install-node.mjs", ["latest"]);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('install-node: a Node version is a major (24), or exact (22.12.0), not "latest"');
    expect(script("install-node.mjs", []).status).toBe(64);
  });

  it("install-node --headers takes a release's headers already in the cache without asking the registry", () => {
    const include = join(cache, "99.3.0", "include", "node");
    mkdirSync(include, { recursive: true });
    writeFileSync(join(include, "node_version.h"), versionHeader("99.3.0"));
    expect(script("install-node.mjs", ["--headers", "99.3.0"])).toEqual({ status: 0, stdout: join(cache, "99.3.0"), stderr: "" });
  });

  it("install-node --headers never takes another release's headers for this one, and wants an exact release", () => {
    // Headers of 99.3.2 where 99.3.1's belong: the registry is asked (unreachable here), not the wrong ones used.
    const include = join(cache, "99.3.1", "include", "node");
    mkdirSync(include, { recursive: true });
    writeFileSync(join(include, "node_version.h"), versionHeader("99.3.2"));
    const run = script("install-node.mjs", ["--headers", "99.3.1"]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^install-node: npm pack node-linux-\w+@99\.3\.1 /);
    const major = script("install-node.mjs", ["--headers", "24"]);
    expect(major.status).toBe(1);
    expect(major.stderr).toBe('install-node: headers are for an exact release (24.22.3), not "24"');
  });

  it("with-node needs a version and a script", () => {
    const run = script("with-node.mjs", ["24"]);
    expect(run.status).toBe(64);
    expect(run.stderr).toMatch(/^usage: node scripts\/with-node\.mjs/);
  });

  it("test-nodes refuses a malformed EARS_TEST_NODES before running anything, naming the form", () => {
    const run = script("test-nodes.mjs", [], { EARS_TEST_NODES: "24:full,22:slow" });
    expect(run.status).toBe(64);
    expect(run.stderr).toBe(
      'test-nodes: EARS_TEST_NODES takes VERSION:full or VERSION:fast, comma-separated (e.g. 24:full,22.12.0:fast), not "22:slow"',
    );
  });
});
