/**
 * The sandbox policy as data: which host paths a guest gets, in which order bubblewrap binds them,
 * and its environment. The escape suite (sandbox.test.ts) proves the policy holds in a real sandbox;
 * these check the rules that build it, on real directories.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bubblewrapCommand } from "../../src/host/sandbox/bubblewrap.js";
import { sandboxPolicy } from "../../src/host/sandbox/policy.js";

describe.runIf(process.platform === "linux")("the sandbox policy", () => {
  let base: string;
  const launch = (cwd: string, args: string[] = [], env: NodeJS.ProcessEnv = { PATH: process.env.PATH }) => ({
    command: process.execPath,
    args,
    cwd,
    env,
  });

  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "ears-policy-")));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("binds a parent before anything inside it, and a path asked writable is writable (fast-check)", () => {
    const names = ["a", "b", "c"];
    const pathArb = fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"));
    fc.assert(
      fc.property(fc.uniqueArray(pathArb, { maxLength: 6 }), fc.uniqueArray(pathArb, { maxLength: 6 }), (readable, writable) => {
        const cwd = mkdtempSync(join(base, "tree-"));
        for (const path of [...readable, ...writable]) mkdirSync(join(cwd, path), { recursive: true });
        const policy = sandboxPolicy(launch(cwd), { readable, writable });
        const targets = policy.binds.map((bind) => bind.target);
        for (const [i, target] of targets.entries()) {
          for (const later of targets.slice(i + 1))
            expect(target.startsWith(`${later}/`), `${later} is bound after ${target}, hiding it`).toBe(false);
        }
        const writableTargets = new Set(writable.map((path) => join(cwd, path)));
        for (const bind of policy.binds) expect(bind.writable, bind.target).toBe(writableTargets.has(bind.target));
        expect(targets).toContain(cwd);
        rmSync(cwd, { recursive: true, force: true });
      }),
      { seed: 9, numRuns: 60 },
    );
  });

  it("binds a path given through a link at its real path and where it was given, but not over a link inside a bound directory", () => {
    const real = join(base, "real");
    mkdirSync(real);
    symlinkSync(real, join(base, "link"));
    const project = join(base, "project");
    mkdirSync(project);
    // node_modules linked elsewhere, as in a workspace: reachable through the link inside the bound cwd.
    const shared = join(base, "shared-modules");
    mkdirSync(shared);
    symlinkSync(shared, join(project, "node_modules"));
    const policy = sandboxPolicy(launch(project), { readable: [join(base, "link")] });
    const targets = policy.binds.map((bind) => `${bind.source} -> ${bind.target}`);
    expect(targets).toContain(`${real} -> ${real}`);
    expect(targets).toContain(`${real} -> ${join(base, "link")}`);
    expect(targets).toContain(`${shared} -> ${shared}`);
    expect(targets).not.toContain(`${shared} -> ${join(project, "node_modules")}`);
  });

  it("binds the script's directory, not the files its other arguments name", () => {
    const scripts = join(base, "scripts");
    const data = join(base, "data");
    mkdirSync(scripts);
    mkdirSync(data);
    writeFileSync(join(scripts, "guest.mjs"), "");
    writeFileSync(join(data, "input.json"), "{}");
    const cwd = join(base, "elsewhere");
    mkdirSync(cwd);
    const policy = sandboxPolicy(launch(cwd, ["--no-warnings", join(scripts, "guest.mjs"), join(data, "input.json")]), {});
    const targets = policy.binds.map((bind) => bind.target);
    expect(targets).toContain(scripts);
    expect(targets).not.toContain(data);
  });

  it("refuses a readable or writable path that does not exist, naming it", () => {
    expect(() => sandboxPolicy(launch(base), { writable: ["missing"] })).toThrow(/sandbox\.writable path "missing" cannot be made visible/);
    expect(() => sandboxPolicy(launch(base), { readable: ["missing"] })).toThrow(/sandbox\.readable path "missing"/);
  });

  it("builds the environment from PATH, HOME, LANG, TZ and the names asked for", () => {
    const policy = sandboxPolicy(launch(base, [], { PATH: process.env.PATH, TZ: "Europe/Paris", SECRET: "x", KEEP: "k" }), {
      env: ["KEEP", "NEW=v", "ABSENT"],
    });
    expect(policy.env).toEqual({
      PATH: expect.stringContaining("/usr/bin"),
      HOME: "/tmp/home",
      LANG: "C.UTF-8",
      TZ: "Europe/Paris",
      KEEP: "k",
      NEW: "v",
    });
  });

  it("has bubblewrap unshare every namespace, start a new session and die with the host; network only when asked", () => {
    const policy = sandboxPolicy(launch(base), {});
    const closed = bubblewrapCommand("/usr/bin/bwrap", policy);
    expect(closed.args).toEqual(expect.arrayContaining(["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]));
    expect(closed.args).not.toContain("--share-net");
    expect(closed.args).not.toContain("/etc/resolv.conf");
    const open = bubblewrapCommand("/usr/bin/bwrap", { ...policy, network: true });
    expect(open.args).toContain("--share-net");
    expect(open.report.network).toBe(true);
    for (const args of [closed.args, open.args]) {
      expect(
        args.some(
          (arg) => arg === "/etc/passwd" || arg === "/etc/ssl" || arg.startsWith("/etc/ssl/private") || arg === "/root" || arg === "/home",
        ),
      ).toBe(false);
    }
  });
});
