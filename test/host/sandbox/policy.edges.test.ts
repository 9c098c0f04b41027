/**
 * The sandbox policy's rules at their edges, in-process on a file system given as data: what Stryker's run on
 * policy.ts (issue 28) found untested. Errors by name and text; the script's directory read-only; a session's
 * workspace not walked; a plain /node_modules shown; a directory named through a link shown (and masked) at the
 * link too; a planted script directory reached by its real path; `/` broad with no other place; a walk for
 * sockets alone never reused as a walk for secrets; the cache's bound; links named like secrets; the
 * self-reference and linked-package lookups; PATH's relative entries.
 */
import { describe, expect, it } from "vitest";
import {
  checkSandboxOptions,
  CommandNotFoundError,
  findExecutable,
  MaskCache,
  RACY_MS,
  SandboxPathError,
  sandboxPolicy,
  scriptOf,
} from "../../../src/host/sandbox/policy.js";
import type { SandboxOptions } from "../../../src/host/sandbox/types.js";
import { NODE, places, base, launch, policy, shown, masked } from "./policy-fixture.js";

const thrown = (run: () => unknown): Error => {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  throw new Error("did not throw");
};

describe("the policy's errors", () => {
  it("a path that cannot be shown is a SandboxPathError; a command not found is spawn's own ENOENT Error", () => {
    const missing = thrown(() => policy(base(), launch("/work/nope")));
    expect(missing).toBeInstanceOf(SandboxPathError);
    expect(missing.name).toBe("SandboxPathError");
    expect(missing.message).toBe(
      'the working directory "/work/nope" cannot be made visible in the sandbox: ' +
        "ENOENT: no such file or directory, realpath '/work/nope'",
    );
    const notFound = thrown(() => policy(base(), launch("/work/proj", [], { command: "nope" })));
    expect(notFound).toBeInstanceOf(CommandNotFoundError);
    expect(notFound).toMatchObject({ name: "Error", code: "ENOENT", message: "spawn nope ENOENT" });
    expect(String(notFound)).toBe("Error: spawn nope ENOENT");
  });

  it("names every known option when refusing an unknown one, and refuses a list holding a non-string with its own message", () => {
    expect(() => checkSandboxOptions({ nope: 1 } as SandboxOptions, "runGuest")).toThrow(
      new TypeError(
        "runGuest: unknown option sandbox.nope (known: readable, writable, network, env, showSecrets, allowBroadPaths, mechanism)",
      ),
    );
    for (const key of ["readable", "writable", "env"]) {
      expect(() => checkSandboxOptions({ [key]: [1] } as SandboxOptions, "runGuest")).toThrow(
        new TypeError(`runGuest: options.sandbox.${key} must be an array of non-empty strings`),
      );
    }
  });
});

describe("what the policy shows, at its edges", () => {
  it("shows the script's directory read-only, like the working directory", () => {
    const fs = base().add("/work/proj/src/main.js", "1");
    expect(shown(policy(fs, launch("/work/proj", ["src/main.js"])))).toEqual([
      "/work/proj -> /work/proj",
      "/work/proj/src -> /work/proj/src",
    ]);
  });

  it("does not walk a session's workspace for secrets, whether it is the working directory or a named path", () => {
    const fs = base().add("/work/ws/.env", "the run's own").add("/work/proj/.env", "a secret");
    const ws = launch("/work/ws", [], { workspace: "/work/ws", discover: false });
    expect(masked(policy(fs, ws, { writable: ["/work/ws"] }))).toEqual([]);
    expect(masked(policy(fs, ws, { readable: ["/work/proj"] }))).toEqual(["/work/proj/.env"]);
    expect(masked(policy(fs, launch("/work/proj", [], { workspace: "/work/ws", discover: false }), { writable: ["/work/ws"] }))).toEqual([
      "/work/proj/.env",
    ]);
    // Without the workspace mark the same directory is walked like any other.
    expect(masked(policy(fs, launch("/work/ws", [], { discover: false })))).toEqual(["/work/ws/.env"]);
  });

  it("shows a real /node_modules above the working directory (Node's lookup reaches it); never a link there", () => {
    const fs = base().add("/node_modules/left-pad/index.js", "1");
    expect(shown(policy(fs, launch("/work/proj")))).toContain("/node_modules -> /node_modules");
    const linked = base().add("/opt/mods/x.js", "1").add("/node_modules", "->/opt/mods");
    expect(shown(policy(linked, launch("/work/proj"))).join("\n")).not.toContain("/opt/mods");
  });

  it("shows a directory named through a link at its real path and at the link, with each secret masked at both, in path order", () => {
    const fs = base().add("/data/real/.env", "x").add("/work/linkdir", "->/data/real").add("/work/proj/.npmrc", "x");
    const p = policy(fs, launch("/work/proj"), { readable: ["/work/linkdir"] });
    expect(shown(p)).toEqual(["/data/real -> /data/real", "/work/linkdir -> /work/linkdir", "/work/proj -> /work/proj"].map(fix));
    expect(p.masks).toEqual([
      { path: "/data/real/.env", kind: "file" },
      { path: "/work/linkdir/.env", kind: "file" },
      { path: "/work/proj/.npmrc", kind: "file" },
    ]);
    function fix(line: string) {
      return line === "/work/linkdir -> /work/linkdir" ? "/data/real -> /work/linkdir" : line;
    }
  });

  it("refuses a script directory planted as a link in the working directory also when the script is named by the real path", () => {
    // The working directory is given through a link; the script by the real path of that directory.
    const fs = base().add("/work/link", "->/work/proj").add("/victim/src/main.js", "1").add("/work/proj/src", "->/victim/src");
    expect(() => policy(fs, launch("/work/link", ["/work/proj/src/main.js"]))).toThrow(
      /^the script's directory "\/work\/proj\/src" is inside "\/work\/link" but leads out of it through a link \(to \/victim\/src\)/,
    );
  });

  it("never shows the root, even where no home or temporary directory is known", () => {
    const fs = base();
    expect(() => sandboxPolicy(launch("/"), {}, fs, { homes: [], temporaryRoots: [] })).toThrow(
      new SandboxPathError(
        'the working directory "/" would show /, which is too broad (the root, a home directory, the temporary directory or an ' +
          "ancestor of one); name a directory of its own, or pass sandbox.allowBroadPaths: true",
      ),
    );
  });

  it("does not mask a link named like a secret (bubblewrap cannot mount over a link; what it leads to is masked or not shown)", () => {
    const fs = base().add("/work/proj/real.txt", "x").add("/work/proj/.env", "->real.txt").add("/work/proj/.ssh", "->/root/.ssh");
    expect(policy(fs, launch("/work/proj")).masks).toEqual([]);
  });
});

describe("the mask walk's cache", () => {
  it("never reuses a walk for sockets alone as a walk for secrets of the same directory", () => {
    // node_modules above the working directory is walked for sockets only; named, it is walked for secrets.
    const fs = base()
      .add("/work/proj/app/", "")
      .add("/work/proj/node_modules/pkg/.env", "x")
      .add("/work/proj/node_modules/sock", { kind: "other" });
    fs.now = Date.now() - 10 * RACY_MS;
    const cache = new MaskCache();
    const run = (options: SandboxOptions) => masked(sandboxPolicy(launch("/work/proj/app"), options, fs, places, cache));
    expect(run({})).toEqual(["/work/proj/node_modules/sock"]);
    expect(run({ readable: ["/work/proj/node_modules"] })).toEqual(["/work/proj/node_modules/pkg/.env", "/work/proj/node_modules/sock"]);
    // And the other way round: a walk for secrets is not taken for one for sockets (nor the reverse) on a fresh cache.
    const again = new MaskCache();
    expect(masked(sandboxPolicy(launch("/work/proj/app"), { readable: ["/work/proj/node_modules"] }, fs, places, again))).toEqual([
      "/work/proj/node_modules/pkg/.env",
      "/work/proj/node_modules/sock",
    ]);
    expect(masked(sandboxPolicy(launch("/work/proj/app"), {}, fs, places, again))).toEqual(["/work/proj/node_modules/sock"]);
  });

  it("remembers at most 64 roots, forgetting the oldest first", () => {
    const old = Date.now() - 10 * RACY_MS;
    const fs = base();
    for (let i = 0; i < 66; i++) fs.add(`/d${i}/`, "");
    fs.now = old;
    const record = (i: number) => ({ startedAt: Date.now(), dirs: new Map([[`/d${i}`, fs.changedMs(`/d${i}`)]]), masks: [] });
    const cache = new MaskCache();
    for (let i = 0; i < 64; i++) cache.remember(`r${i}`, record(i));
    for (let i = 0; i < 64; i++) expect(cache.reuse(`r${i}`, fs), `r${i}`).toEqual([]);
    cache.remember("r64", record(64));
    expect(cache.reuse("r0", fs)).toBeUndefined();
    for (let i = 1; i <= 64; i++) expect(cache.reuse(`r${i}`, fs), `r${i}`).toEqual([]);
    cache.remember("r65", record(65));
    expect(cache.reuse("r1", fs)).toBeUndefined();
    expect(cache.reuse("r65", fs)).toEqual([]);
  });
});

describe("the lookups the policy makes", () => {
  it("takes no script after --command (a runtime's own eval option)", () => {
    const fs = base().add("/opt/scripts/guest.mjs", "1");
    expect(scriptOf(["--command", "/opt/scripts/guest.mjs"], "/work/proj", fs)).toBeUndefined();
    expect(scriptOf(["--command=1", "/opt/scripts/guest.mjs"], "/work/proj", fs)).toBeUndefined();
    expect(scriptOf(["--commander", "/opt/scripts/guest.mjs"], "/work/proj", fs)).toBe("/opt/scripts/guest.mjs");
  });

  it("shows the script's own package only when it names itself (a string name and exports), and stops at a link named package.json", () => {
    const self = (manifest: string) =>
      base().add("/opt/pkg/package.json", manifest).add("/opt/pkg/.env", "x").add("/opt/pkg/lib/guest.mjs", "1");
    const own = policy(self('{"name":"pkg","exports":"./lib/guest.mjs"}'), launch("/work/proj", ["/opt/pkg/lib/guest.mjs"]));
    expect(shown(own)).toContain("/opt/pkg -> /opt/pkg");
    // Walked for secrets, as the user's own files.
    expect(masked(own)).toEqual(["/opt/pkg/.env"]);
    const numbered = policy(self('{"name":5,"exports":"./lib/guest.mjs"}'), launch("/work/proj", ["/opt/pkg/lib/guest.mjs"]));
    expect(shown(numbered)).not.toContain("/opt/pkg -> /opt/pkg");
    const stopped = self('{"name":"pkg","exports":"./lib/guest.mjs"}')
      .add("/opt/pkg/lib/package.json", "->/opt/other.json")
      .add("/opt/other.json", "{}");
    expect(shown(policy(stopped, launch("/work/proj", ["/opt/pkg/lib/guest.mjs"])))).not.toContain("/opt/pkg -> /opt/pkg");
  });

  it("shows the linked packages of node_modules one level deep, and one more under an @scope, no deeper", () => {
    const fs = base()
      .add("/work/proj/app/", "")
      .add("/work/pkgs/a/index.js", "1")
      .add("/work/pkgs/b/index.js", "1")
      .add("/work/pkgs/c/index.js", "1")
      .add("/work/node_modules/a", "->../pkgs/a")
      .add("/work/node_modules/@scope/b", "->../../pkgs/b")
      .add("/work/node_modules/@scope/@nested/c", "->../../../pkgs/c");
    const targets = policy(fs, launch("/work/proj/app")).binds.map((b) => b.source);
    expect(targets).toContain("/work/pkgs/a");
    expect(targets).toContain("/work/pkgs/b");
    expect(targets).not.toContain("/work/pkgs/c");
  });

  it("never searches a relative PATH entry (it would be relative to the host's own working directory)", () => {
    const fs = base().add("/bin/node", NODE);
    expect(findExecutable("node", "/work/proj", "bin:/usr/bin", fs)).toBe("/usr/bin/node");
    expect(() => findExecutable("node", "/work/proj", "bin::.", fs)).toThrow(new CommandNotFoundError("spawn node ENOENT"));
    expect(() => findExecutable("node", "/work/proj", undefined, fs)).toThrow("spawn node ENOENT");
  });
});
