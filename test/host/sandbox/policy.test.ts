/**
 * The sandbox policy's rules, in-process, on a file system given as data: what is shown, where, whether
 * writable, what is masked, what is refused, and the guest's environment. Each test fails when its rule
 * is removed or inverted; the spawned suite (test/host/confine/) proves bubblewrap does what the policy says.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkSandboxOptions,
  CommandNotFoundError,
  envEntryProblem,
  isSecretName,
  MASK_BUDGET,
  MaskCache,
  RACY_MS,
  SandboxPathError,
  sandboxPolicy,
  scriptOf,
  secretNames,
  within,
  type SandboxPolicy,
} from "../../../src/host/sandbox/policy.js";
import { FakeFileSystem } from "./fake-file-system.js";
import { NODE, places, base, launch, policy, shown } from "./policy-fixture.js";

const targets = (p: SandboxPolicy) => p.binds.map((b) => b.target);

describe("what the sandbox shows", () => {
  it("shows the working directory read-only, and each named path as asked (fast-check: parents first, writable exactly when asked)", () => {
    const names = ["a", "b", "c"];
    const pathArb = fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }).map((parts) => parts.join("/"));
    fc.assert(
      fc.property(fc.uniqueArray(pathArb, { maxLength: 6 }), fc.uniqueArray(pathArb, { maxLength: 6 }), (readable, writable) => {
        const fs = base();
        for (const path of [...readable, ...writable]) fs.add(`/work/proj/${path}/`, "");
        const p = policy(fs, launch("/work/proj"), { readable, writable });
        const t = targets(p);
        for (const [i, target] of t.entries()) {
          for (const later of t.slice(i + 1))
            expect(target.startsWith(`${later}/`), `${later} is bound after ${target}, hiding it`).toBe(false);
        }
        const asked = new Set(writable.map((path) => `/work/proj/${path}`));
        for (const bind of p.binds) expect(bind.writable, bind.target).toBe(asked.has(bind.target));
        expect(t).toContain("/work/proj");
        for (const path of readable) expect(t).toContain(`/work/proj/${path}`);
      }),
      { seed: 9, numRuns: 80 },
    );
  });

  it("shows a named path at its real path and where it was given (the report lists the resolved path)", () => {
    const fs = base().add("/data/real/", "").add("/work/proj/link", "->/data/real");
    const p = policy(fs, launch("/work/proj"), { readable: ["link"] });
    expect(shown(p)).toContain("/data/real -> /data/real");
    expect(shown(p)).not.toContain("/data/real -> /work/proj/link"); // the bound cwd holds the link; it leads to the real path
    const q = policy(fs, launch("/work/proj"), { readable: ["/work/proj/link"], writable: ["/data/real"] });
    expect(shown(q)).toContain("/data/real -> /data/real (rw)");
  });

  it("refuses a named path that does not exist, naming it", () => {
    expect(() => policy(base(), launch("/work/proj"), { writable: ["missing"] })).toThrow(SandboxPathError);
    expect(() => policy(base(), launch("/work/proj"), { writable: ["missing"] })).toThrow(
      /sandbox\.writable path "missing" cannot be made visible/,
    );
    expect(() => policy(base(), launch("/work/proj"), { readable: ["missing"] })).toThrow(/sandbox\.readable path "missing"/);
    expect(() => policy(base(), launch("/nowhere"))).toThrow(/the working directory "\/nowhere"/);
  });

  it("shows the script's directory, not the files its other arguments name", () => {
    const fs = base().add("/opt/scripts/guest.mjs", "").add("/opt/data/input.json", "{}");
    const p = policy(fs, launch("/work/proj", ["--no-warnings", "/opt/scripts/guest.mjs", "/opt/data/input.json"]));
    expect(targets(p)).toContain("/opt/scripts");
    expect(targets(p)).not.toContain("/opt/data");
  });

  it("takes no script after an option that puts the program on the command line (--eval, -e, -p, --print, -c)", () => {
    const fs = base().add("/opt/secret/.npmrc", "token");
    for (const option of ["--eval=1", "-e", "--eval", "-p", "--print=1", "-c"]) {
      expect(scriptOf([option, "/opt/secret/.npmrc"], "/work/proj", fs), option).toBeUndefined();
      expect(targets(policy(fs, launch("/work/proj", [option, "/opt/secret/.npmrc"]))), option).not.toContain("/opt/secret");
    }
    expect(scriptOf(["/opt/secret/.npmrc"], "/work/proj", fs)).toBe("/opt/secret/.npmrc");
  });

  it("does not follow a script that is a link leading out of its directory", () => {
    const fs = base()
      .add("/work/proj/guest.mjs", "->/etc/secret.mjs")
      .add("/etc/secret.mjs", "")
      .add("/work/proj/ok.mjs", "->lib/real.mjs");
    fs.add("/work/proj/lib/real.mjs", "");
    expect(scriptOf(["guest.mjs"], "/work/proj", fs)).toBeUndefined();
    expect(targets(policy(fs, launch("/work/proj", ["guest.mjs"])))).not.toContain("/etc");
    expect(scriptOf(["ok.mjs"], "/work/proj", fs)).toBe("/work/proj/ok.mjs");
  });

  it("finds nothing by itself with discover: false (runCode names every path)", () => {
    const fs = base().add("/opt/scripts/guest.mjs", "").add("/work/proj/node_modules/", "").add("/work/package.json", "{}");
    const p = policy(fs, launch("/work/proj", ["/opt/scripts/guest.mjs"], { discover: false }));
    expect(targets(p)).toEqual(["/work/proj"]);
  });

  it("shows Node's lookups above the working directory and the script: node_modules and package.json of each ancestor", () => {
    const fs = base()
      .add("/work/node_modules/", "")
      .add("/work/package.json", "{}")
      .add("/work/proj/node_modules/", "")
      .add("/work/other/", "");
    const t = targets(policy(fs, launch("/work/proj")));
    expect(t).toEqual(expect.arrayContaining(["/work/node_modules", "/work/package.json", "/work/proj/node_modules"]));
    expect(t).not.toContain("/work");
    expect(t).not.toContain("/work/other");
  });

  it("shows the script's own package when it can import itself (name and exports), not otherwise", () => {
    const fs = base()
      .add("/opt/pkg/package.json", JSON.stringify({ name: "p", exports: "./x.js" }))
      .add("/opt/pkg/src/guest.mjs", "");
    expect(targets(policy(fs, launch("/work/proj", ["/opt/pkg/src/guest.mjs"])))).toContain("/opt/pkg");
    fs.add("/opt/pkg/package.json", JSON.stringify({ name: "p" }));
    expect(targets(policy(fs, launch("/work/proj", ["/opt/pkg/src/guest.mjs"])))).not.toContain("/opt/pkg");
  });
});

describe("links a guest could have planted never widen a later run", () => {
  const planted: [string, string][] = [
    ["/work/proj/node_modules", "->/"],
    ["/work/proj/node_modules", "->/root"],
    ["/work/proj/package.json", "->/etc/shadow"],
    ["/work/proj/node_modules/x", "->/root"],
    ["/work/proj/node_modules/@scope/y", "->/home/alice"],
    ["/work/proj/node_modules/z", "->../../secret"],
  ];
  it.each(planted)("%s %s is not followed out of the directory it was found in", (path, link) => {
    const fs = base().add("/etc/shadow", "x").add("/work/secret/", "").add(path, link);
    const p = policy(fs, launch("/work/proj"));
    for (const bind of p.binds)
      expect(within("/work/proj", bind.source) || bind.source === "/usr/bin/node", `${bind.source} is shown`).toBe(true);
  });

  it("follows a link that stays inside (a workspace package linked from node_modules)", () => {
    const fs = base().add("/work/proj/packages/lib/", "").add("/work/proj/node_modules/@s/lib", "->../../packages/lib");
    expect(shown(policy(fs, launch("/work/proj")))).toContain("/work/proj/packages/lib -> /work/proj/packages/lib");
  });

  it("does not follow a planted package.json when looking for the script's package", () => {
    const fs = base().add("/opt/pkg/guest.mjs", "").add("/opt/pkg/package.json", "->/etc/manifest.json");
    fs.add("/etc/manifest.json", JSON.stringify({ name: "x", exports: "./x" }));
    expect(targets(policy(fs, launch("/work/proj", ["/opt/pkg/guest.mjs"])))).not.toContain("/etc");
  });
});

describe("too broad to show", () => {
  const broad = ["/", "/root", "/home/alice", "/home", "/tmp"];
  it.each(broad)("refuses %s as the working directory, a readable or a writable path, unless allowBroadPaths", (path) => {
    const fs = base();
    expect(() => policy(fs, launch(path))).toThrow(/too broad/);
    expect(() => policy(fs, launch("/work/proj"), { readable: [path] })).toThrow(/too broad/);
    expect(() => policy(fs, launch("/work/proj"), { writable: [path] })).toThrow(/allowBroadPaths/);
    const allowed = policy(fs, launch("/work/proj"), { readable: [path], allowBroadPaths: true, showSecrets: true });
    expect(targets(allowed)).toContain(path);
  });

  it("refuses a broad path reached through a link, and a script directly in a broad directory", () => {
    const fs = base().add("/work/proj/up", "->/").add("/tmp/guest.mjs", "");
    expect(() => policy(fs, launch("/work/proj"), { readable: ["up"] })).toThrow(/its real path/);
    expect(() => policy(fs, launch("/work/proj", ["/tmp/guest.mjs"]))).toThrow(/the script's directory "\/tmp" would show/);
  });

  it("allows a directory inside a home or the temporary root", () => {
    const fs = base().add("/root/proj/", "").add("/tmp/run-1/", "");
    expect(targets(policy(fs, launch("/root/proj")))).toContain("/root/proj");
    expect(targets(policy(fs, launch("/work/proj"), { readable: ["/tmp/run-1"] }))).toContain("/tmp/run-1");
  });
});

describe("secrets inside shown directories", () => {
  it("masks each listed name in the working directory, files as files and directories as directories", () => {
    const fs = base();
    const files = [
      ".env",
      ".env.local",
      ".envrc",
      ".npmrc",
      ".netrc",
      ".pypirc",
      ".git-credentials",
      "server.pem",
      "tls.key",
      "id_ed25519",
    ];
    for (const name of files) fs.add(`/work/proj/${name}`, "secret");
    for (const name of [".git", ".ssh", ".aws"]) fs.add(`/work/proj/${name}/config`, "secret");
    fs.add("/work/proj/readme.md", "hello").add("/work/proj/keys.ts", "code");
    const p = policy(fs, launch("/work/proj"));
    const masks = new Map(p.masks.map((m) => [m.path, m.kind]));
    for (const name of files) expect(masks.get(`/work/proj/${name}`), name).toBe("file");
    for (const name of [".git", ".ssh", ".aws"]) expect(masks.get(`/work/proj/${name}`), name).toBe("directory");
    expect(masks.has("/work/proj/readme.md")).toBe(false);
    expect(masks.has("/work/proj/keys.ts")).toBe(false);
    expect(masks.has("/work/proj/.git/config")).toBe(false); // the directory is masked whole
  });

  it("masks inside subdirectories at every depth, not inside node_modules", () => {
    const fs = base().add("/work/proj/config/.env", "x").add("/work/proj/a/b/.env", "x").add("/work/proj/a/b/c/.env", "x");
    fs.add("/work/proj/a/b/c/d/.env", "x").add("/work/proj/a/b/c/d/e/f/.claude/.credentials.json", "x");
    fs.add("/work/proj/node_modules/pkg/.env", "x");
    const masked = policy(fs, launch("/work/proj")).masks.map((m) => m.path);
    expect(masked).toEqual(
      expect.arrayContaining([
        "/work/proj/config/.env",
        "/work/proj/a/b/.env",
        "/work/proj/a/b/c/.env",
        "/work/proj/a/b/c/d/.env",
        "/work/proj/a/b/c/d/e/f/.claude/.credentials.json",
      ]),
    );
    expect(masked).not.toContain("/work/proj/node_modules/pkg/.env");
  });

  it("masks in the script's directory and in readable and writable paths too, but never a path the host named", () => {
    const fs = base().add("/opt/s/guest.mjs", "").add("/opt/s/.env", "x").add("/data/r/.npmrc", "x").add("/data/w/.git/", "");
    fs.add("/data/named/.env", "x");
    const p = policy(fs, launch("/work/proj", ["/opt/s/guest.mjs"]), { readable: ["/data/r", "/data/named/.env"], writable: ["/data/w"] });
    const masked = p.masks.map((m) => m.path);
    expect(masked).toEqual(expect.arrayContaining(["/opt/s/.env", "/data/r/.npmrc", "/data/w/.git"]));
    expect(masked).not.toContain("/data/named/.env");
  });

  it("does not mask a directory that holds a path the host named (the mask would hide it)", () => {
    const fs = base().add("/work/proj/.git/config", "x").add("/work/proj/.ssh/id_rsa", "k");
    const p = policy(fs, launch("/work/proj"), { readable: ["/work/proj/.git/config"] });
    expect(p.masks.map((m) => m.path)).toEqual(["/work/proj/.ssh"]);
  });

  it("masks nothing with showSecrets: true", () => {
    const fs = base().add("/work/proj/.env", "x");
    expect(policy(fs, launch("/work/proj"), { showSecrets: true }).masks).toEqual([]);
  });

  it("refuses a tree too large to check rather than showing it unmasked", () => {
    const fs = base();
    for (let i = 0; i <= MASK_BUDGET; i++) fs.add(`/work/proj/f${i}`, "");
    expect(() => policy(fs, launch("/work/proj"))).toThrow(/too many to check for secrets/);
    expect(policy(fs, launch("/work/proj"), { showSecrets: true }).masks).toEqual([]);
  });

  it("reuses a walk while no walked directory changed, walks again when one did or was changed just before the walk", () => {
    const fs = base().add("/work/proj/a/.env", "x").add("/work/proj/b/", "");
    let lists = 0;
    const counting = Object.assign(Object.create(fs) as FakeFileSystem, {
      list: (path: string) => {
        lists++;
        return fs.list(path);
      },
    });
    const cache = new MaskCache();
    const walk = () => {
      lists = 0;
      return sandboxPolicy(launch("/work/proj"), {}, counting, places, cache).masks.map((m) => m.path);
    };
    // The tree was made at time 0; walking "now" (well past RACY_MS) may be remembered.
    fs.now = Date.now() - 10 * RACY_MS;
    expect(walk()).toEqual(["/work/proj/a/.env"]);
    expect(lists).toBeGreaterThan(0);
    expect(walk()).toEqual(["/work/proj/a/.env"]);
    expect(lists).toBe(0);
    // A secret added later changes its directory's time: the next run walks again and masks it.
    fs.add("/work/proj/b/.npmrc", "x");
    expect(walk()).toEqual(["/work/proj/a/.env", "/work/proj/b/.npmrc"]);
    expect(lists).toBeGreaterThan(0);
    // A directory changed within RACY_MS before the walk is never trusted.
    fs.now = Date.now();
    fs.add("/work/proj/c/", "");
    walk();
    expect(walk()).toEqual(["/work/proj/a/.env", "/work/proj/b/.npmrc"]);
    expect(lists).toBeGreaterThan(0);
    // A removed secret is gone from the masks; a named path is shown even when the walk is reused.
    fs.now = Date.now() - 5 * RACY_MS;
    fs.remove("/work/proj/a/.env");
    expect(walk()).toEqual(["/work/proj/b/.npmrc"]);
    expect(sandboxPolicy(launch("/work/proj"), { readable: ["b/.npmrc"] }, counting, places, cache).masks).toEqual([]);
  });

  it("matches names exactly or by their wildcards (fast-check)", () => {
    // Issue 41's credential files, each by its name (and the directories named above it).
    const more: [string, string[]][] = [
      [".my.cnf", []],
      ["client_secret_1234.apps.googleusercontent.com.json", []],
      ["token.json", []],
      ["my-app-firebase-adminsdk-ab12c-0123456789.json", []],
      [".credentials.json", [".claude"]],
      ["auth.json", [".codex"]],
      ["hosts.json", [".config", "github-copilot"]],
      ["appsettings.Production.json", []],
      ["wp-config.php", []],
      ["config.yaml", [".config", "doctl"]],
      ["id_ed25519_sk", []],
      ["id_ecdsa_sk", []],
      ["auth.json", [".vercel"]],
    ];
    for (const [name, parents] of more) expect(isSecretName(name, secretNames(), parents), name).toBe(true);
    expect(isSecretName("hosts.json", secretNames(), ["github-copilot"])).toBe(false);
    expect(isSecretName("-firebase-adminsdk-.json", secretNames())).toBe(false);
    expect(isSecretName("appsettings.json", secretNames())).toBe(false);
    expect(isSecretName(".env", secretNames())).toBe(true);
    expect(isSecretName(".env.production", secretNames())).toBe(true);
    expect(isSecretName(".env.", secretNames())).toBe(false);
    expect(isSecretName("env", secretNames())).toBe(false);
    expect(isSecretName("a.pem", secretNames())).toBe(true);
    expect(isSecretName(".pem", secretNames())).toBe(false);
    expect(isSecretName("x.pem.txt", secretNames())).toBe(false);
    // docs/host.md lists the same names, each in backticks.
    const docs = readFileSync(new URL("../../../docs/host.md", import.meta.url), "utf8");
    for (const pattern of secretNames()) expect(docs, pattern).toContain(`\`${pattern}\``);
    // Issue 28.8's credential files, each masked by its name (and the directories named above it).
    const issue: [string, string[]][] = [
      ["secrets.json", []],
      ["secrets.yaml", []],
      ["secrets.yml", []],
      ["prod.tfvars", []],
      ["gha-creds-1a2b3c.json", []],
      ["hosts.yml", [".config", "gh"]],
      ["gcloud", [".config"]],
      ["application_default_credentials.json", []],
      ["credentials.toml", [".cargo"]],
      [".terraform.d", []],
      ["kubeconfig", []],
      [".s3cfg", []],
      [".boto", []],
      ["service-account.json", []],
      ["local.settings.json", []],
      ["putty.ppk", []],
      ["vault.kdbx", []],
      ["settings.xml", [".m2"]],
      ["credentials", [".gem"]],
      [".bash_history", []],
      ["deploy_ed25519", []],
    ];
    for (const [name, parents] of issue) {
      const masked =
        isSecretName(name, secretNames(), parents) || parents.some((_, i) => isSecretName(parents[i]!, secretNames(), parents.slice(0, i)));
      expect(masked, [...parents, name].join("/")).toBe(true);
    }
    // A pattern with directories matches only under them, nearest last; case does not matter.
    expect(isSecretName("settings.xml", secretNames(), [".m2"])).toBe(true);
    expect(isSecretName("SETTINGS.XML", secretNames(), ["home", ".M2"])).toBe(true);
    expect(isSecretName("settings.xml", secretNames(), [])).toBe(false);
    expect(isSecretName("settings.xml", secretNames(), [".m2", "x"])).toBe(false);
    expect(isSecretName("credentials", secretNames(), ["src"])).toBe(false);
    expect(isSecretName("gh", secretNames(), [".config"])).toBe(true);
    expect(isSecretName("gh", secretNames(), ["config"])).toBe(false);
    expect(isSecretName("kubeconfig.ts", secretNames())).toBe(false);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,8}$/), (stem) => {
        expect(isSecretName(`${stem}.key`, secretNames())).toBe(true);
        expect(isSecretName(`${stem}.keys`, secretNames())).toBe(false);
        expect(isSecretName(stem, secretNames())).toBe(false);
      }),
      { seed: 21, numRuns: 100 },
    );
  });
});

describe("the guest's environment and program", () => {
  it("is PATH, HOME, LANG, PWD, TZ when the host has it, and the names asked for; nothing else of the host's (fast-check)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.stringMatching(/^[A-Z][A-Z0-9_]{0,8}$/), fc.string({ maxLength: 5 })), (hostEnv) => {
        const env: Record<string, string> = { ...hostEnv, PATH: "/usr/bin" };
        const p = policy(base(), launch("/work/proj", [], { env }));
        const expected = ["PATH", "HOME", "LANG", "PWD", ...(env.TZ === undefined ? [] : ["TZ"])];
        expect(Object.keys(p.env).sort()).toEqual(expected.sort());
        expect(p.env.HOME).toBe("/tmp/home");
        expect(p.env.PWD).toBe("/work/proj");
        expect(p.env.LANG).toBe(env.LANG ?? "C.UTF-8");
      }),
      { seed: 22, numRuns: 100 },
    );
    const asked = policy(base(), launch("/work/proj", [], { env: { PATH: "/usr/bin", KEEP: "k", SECRET: "s" } }), {
      env: ["KEEP", "NEW=v=w", "ABSENT"],
    });
    expect(asked.env).toMatchObject({ KEEP: "k", NEW: "v=w" });
    expect(asked.env).not.toHaveProperty("SECRET");
    expect(asked.env).not.toHaveProperty("ABSENT");
  });

  it("puts the interpreter's directory first on PATH when it is not a system one", () => {
    const fs = base().add("/opt/node/bin/node", NODE);
    expect(policy(fs, launch("/work/proj", [], { command: "/opt/node/bin/node" })).env.PATH).toBe(
      "/opt/node/bin:/usr/local/bin:/usr/bin:/bin",
    );
    expect(policy(fs, launch("/work/proj")).env.PATH).toBe("/usr/local/bin:/usr/bin:/bin");
  });

  it("finds the command on PATH or from the working directory, binds it at its real path, and refuses one that is not there", () => {
    const fs = base().add("/opt/node/bin/node", NODE).add("/usr/local/bin/nodelink", "->/opt/node/bin/node").add("/work/proj/run.sh", NODE);
    const p = policy(fs, launch("/work/proj", [], { command: "nodelink", env: { PATH: "relative:/usr/local/bin" } }));
    expect(p.executable).toBe("/usr/local/bin/nodelink");
    expect(p.executableBinds).toEqual([
      { source: "/opt/node/bin/node", target: "/usr/local/bin/nodelink", writable: false },
      { source: "/opt/node/bin/node", target: "/opt/node/bin/node", writable: false },
    ]);
    expect(policy(fs, launch("/work/proj", [], { command: "./run.sh" })).executable).toBe("/work/proj/run.sh");
    expect(() => policy(fs, launch("/work/proj", [], { command: "missing" }))).toThrow(CommandNotFoundError);
    fs.add("/usr/bin/plain", "not executable");
    expect(() => policy(fs, launch("/work/proj", [], { command: "plain" }))).toThrow(/spawn plain ENOENT/);
  });

  it("keeps the network off unless asked, and the arguments as given", () => {
    expect(policy(base(), launch("/work/proj", ["a", "-b"])).network).toBe(false);
    expect(policy(base(), launch("/work/proj", ["a", "-b"]), { network: true }).network).toBe(true);
    expect(policy(base(), launch("/work/proj", ["a", "-b"])).args).toEqual(["a", "-b"]);
  });
});

describe("the policy's smaller rules, one by one", () => {
  it("within: a path is within itself and below, not beside; everything is within /", () => {
    expect(within("/a", "/a")).toBe(true);
    expect(within("/a", "/a/b")).toBe(true);
    expect(within("/a", "/ab")).toBe(false);
    expect(within("/a/b", "/a")).toBe(false);
    expect(within("/", "/x/y")).toBe(true);
  });

  it("takes no link that leads to a directory, and no directory, as the script", () => {
    const fs = base().add("/work/proj/dirlink", "->lib").add("/work/proj/lib/x.mjs", "");
    expect(scriptOf(["dirlink"], "/work/proj", fs)).toBeUndefined();
    expect(scriptOf(["lib"], "/work/proj", fs)).toBeUndefined();
    expect(scriptOf(["missing.mjs"], "/work/proj", fs)).toBeUndefined();
    expect(scriptOf(["--flag", "lib/x.mjs"], "/work/proj", fs)).toBe("/work/proj/lib/x.mjs");
  });

  it("shows Node's lookups above the script's directory too, when the script lies elsewhere", () => {
    const fs = base().add("/opt/tool/node_modules/", "").add("/opt/tool/bin/guest.mjs", "");
    expect(targets(policy(fs, launch("/work/proj", ["/opt/tool/bin/guest.mjs"])))).toContain("/opt/tool/node_modules");
  });

  it("finds linked packages one level deep, and one more only under an @scope directory", () => {
    const fs = base().add("/work/proj/shared/a/", "").add("/work/proj/shared/b/", "").add("/work/proj/shared/c/", "");
    fs.add("/work/proj/node_modules/a", "->../shared/a").add("/work/proj/node_modules/@s/b", "->../../shared/b");
    fs.add("/work/proj/node_modules/pkg/c", "->../../shared/c");
    const shownAt = shown(policy(fs, launch("/work/proj")));
    expect(shownAt).toEqual(
      expect.arrayContaining(["/work/proj/shared/a -> /work/proj/shared/a", "/work/proj/shared/b -> /work/proj/shared/b"]),
    );
    expect(shownAt).not.toContain("/work/proj/shared/c -> /work/proj/shared/c");
  });

  it("passes TZ when the host has it, and only then", () => {
    expect(policy(base(), launch("/work/proj", [], { env: { PATH: "/usr/bin", TZ: "UTC" } })).env.TZ).toBe("UTC");
    expect(policy(base(), launch("/work/proj", [], { env: { PATH: "/usr/bin" } })).env).not.toHaveProperty("TZ");
  });

  it("walks exactly MASK_BUDGET entries, and refuses one more", () => {
    const fs = base();
    for (let i = 1; i < MASK_BUDGET; i++) fs.add(`/work/proj/f${i}`, "");
    fs.add("/work/proj/.env", "x");
    expect(policy(fs, launch("/work/proj")).masks.map((m) => m.path)).toEqual(["/work/proj/.env"]);
    fs.add("/work/proj/one-more", "");
    expect(() => policy(fs, launch("/work/proj"))).toThrow(SandboxPathError);
  });

  it("says 'its real path' only for a path that went through a link", () => {
    const fs = base();
    expect(() => policy(fs, launch("/work/proj"), { readable: ["/tmp"] })).toThrow(
      'sandbox.readable path "/tmp" would show /tmp, which is too broad ' +
        "(the root, a home directory, the temporary directory or an ancestor of one); " +
        "name a directory of its own, or pass sandbox.allowBroadPaths: true",
    );
  });

  it("names every problem of an options object, and takes a good one", () => {
    expect(() => checkSandboxOptions({ readable: ["ok", ""] }, "f")).toThrow(
      "f: options.sandbox.readable must be an array of non-empty strings",
    );
    expect(() => checkSandboxOptions({ env: ["GOOD", "1BAD=x"] }, "f")).toThrow(
      'f: options.sandbox.env entry "1BAD=x" is not NAME or NAME=value',
    );
    expect(() => checkSandboxOptions({ env: ["A", "B=c", "_D="], readable: ["x"], showSecrets: true }, "f")).not.toThrow();
    expect(envEntryProblem("NAME=a=b")).toBeUndefined();
    expect(envEntryProblem("A-B=c")).toMatch(/is not NAME or NAME=value/);
    expect(envEntryProblem("AB\n")).toMatch(/is not NAME/);
  });
});
