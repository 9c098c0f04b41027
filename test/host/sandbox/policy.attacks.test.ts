/**
 * Attacks on the sandbox policy (issue 17), in-process on a file system given as data. Each test names
 * its attack. The ones marked "Was a hole" got through when this suite was written and were fixed after
 * (each failed on the code before its fix); the spawned proofs are in test/host/confine/attacks.test.ts.
 */
import { describe, expect, it } from "vitest";
import { bubblewrapArgs, type SystemLayout } from "../../../src/host/sandbox/bubblewrap.js";
import { MASK_BUDGET, MASK_DEPTH, SandboxPathError, WALK_BUDGET, type SandboxPolicy } from "../../../src/host/sandbox/policy.js";
import { FakeFileSystem } from "./fake-file-system.js";
import { base, launch, policy } from "./policy-fixture.js";

const layout: SystemLayout = { dirs: [{ path: "/usr", kind: "directory" }], etc: [], proc: [] };

/**
 * The paths at which the guest sees one of `secrets` (real host paths) without a mask over it: each bind
 * shows its source at its target, and a mask covers exactly the path it is mounted at.
 */
function unmasked(p: SandboxPolicy, secrets: string[]): string[] {
  const masked = new Set(p.masks.map((mask) => mask.path));
  const seen: string[] = [];
  for (const bind of p.binds) {
    for (const secret of secrets) {
      if (secret !== bind.source && !secret.startsWith(`${bind.source}/`)) continue;
      const where = bind.target + secret.slice(bind.source.length);
      if (!masked.has(where)) seen.push(where);
    }
  }
  return seen;
}

describe("secrets the policy leaves unmasked", () => {
  // Was a hole (fixed): a working directory given through a link is bound twice (real path and given path,
  // policy.ts:258 `bind(cwd, resolve(launch.cwd))`), but the masks are computed on real paths only
  // (secretsIn walks `walked`, real paths): the given path, the guest's own cwd, shows .env.
  it("a working directory given through a link: .env is masked where the guest sees it", () => {
    const fs = base().add("/data/app/.env", "KEY=1").add("/work/app", "->/data/app");
    const p = policy(fs, launch("/work/app"));
    expect(unmasked(p, ["/data/app/.env"])).toEqual([]);
  });

  // Was a hole (fixed): the same for a readable path named through a link (policy.ts addNamed, `bind(real, given, …)`).
  it("a readable path given through a link: .env is masked at the given path too", () => {
    const fs = base().add("/data/shared/.env", "KEY=1").add("/srv/shared", "->/data/shared");
    const p = policy(fs, launch("/work/proj"), { readable: ["/srv/shared"] });
    expect(unmasked(p, ["/data/shared/.env"])).toEqual([]);
  });

  // Was a hole (fixed): linked packages are added with walk=false (policy.ts:274 `addFound(linked, at, false)`), so a
  // workspace package's .env, .npmrc, .git are shown unmasked to any guest run from a sibling package.
  it("a workspace package linked from an ancestor's node_modules has its secrets masked", () => {
    const fs = base()
      .add("/repo/package.json", "{}")
      .add("/repo/packages/web/", "")
      .add("/repo/packages/lib/.env", "DB=1")
      .add("/repo/packages/lib/.git/config", "")
      .add("/repo/node_modules/@me/lib", "->../../packages/lib");
    const p = policy(fs, launch("/repo/packages/web"));
    expect(p.binds.map((b) => b.target)).toContain("/repo/packages/lib");
    expect(unmasked(p, ["/repo/packages/lib/.env", "/repo/packages/lib/.git"])).toEqual([]);
  });

  // Was a hole (fixed): "shown only when no link on the way leads out of the directory it was found in" is checked
  // with `within(root, real)` (policy.ts addFound), and every path is within "/": a link in /node_modules
  // (a container image whose WORKDIR was /) shows whatever it points at, /etc included.
  it("a link in /node_modules (found at the root) leads anywhere: /node_modules/x -> /etc", () => {
    const fs = base().add("/node_modules/x", "->/etc").add("/etc/shadow", "root:x");
    const p = policy(fs, launch("/work/proj"));
    expect(p.binds.map((b) => b.source)).not.toContain("/etc");
  });

  // Was a hole (fixed): roots inside another are walked only from the outermost one (policy.ts secretsIn, `outermost`), to
  // MASK_DEPTH levels from there: naming a parent (readable or writable) un-masks secrets in the working
  // directory that were masked without it. Asking for more access must not show the cwd's secrets.
  it("naming a parent directory readable un-masks a secret two levels down in the working directory", () => {
    const fs = base().add("/work/proj/a/b/.env", "K=1");
    expect(unmasked(policy(fs, launch("/work/proj")), ["/work/proj/a/b/.env"])).toEqual([]); // masked alone
    expect(unmasked(policy(fs, launch("/work/proj"), { readable: ["/work"] }), ["/work/proj/a/b/.env"])).toEqual([]);
  });

  // Was a hole (fixed): isSecretName (policy.ts) compares case-sensitively: key files exported from Windows or macOS tools
  // (SERVER.PEM, tls.KEY, cert.PFX, ID_RSA) and an `.ENV` are shown in full.
  it("secret names in another case (.ENV, SERVER.PEM, tls.KEY, cert.PFX, ID_RSA) are masked", () => {
    const names = [".ENV", "SERVER.PEM", "tls.KEY", "cert.PFX", "ID_RSA"];
    const fs = base();
    for (const name of names) fs.add(`/work/proj/${name}`, "secret");
    const p = policy(fs, launch("/work/proj"));
    expect(
      unmasked(
        p,
        names.map((name) => `/work/proj/${name}`),
      ),
    ).toEqual([]);
  });

  // Was a hole (fixed): files that hold credentials in ordinary projects are not on
  // the list: Terraform state, Streamlit and Wrangler secrets, Java keystores, a Vault token, a
  // `.env-production`, a Google service-account `credentials.json`.
  it("common project secret files beyond the list (terraform.tfstate, .dev.vars, *.jks, .vault-token, …) are masked", () => {
    const names = [
      "terraform.tfstate",
      ".streamlit/secrets.toml",
      ".dev.vars",
      "release.jks",
      "app.keystore",
      ".vault-token",
      ".env-production",
      "credentials.json",
    ];
    const fs = base();
    for (const name of names) fs.add(`/work/proj/${name}`, "secret");
    const p = policy(fs, launch("/work/proj"));
    expect(
      unmasked(
        p,
        names.map((name) => `/work/proj/${name}`),
      ),
    ).toEqual([]);
  });

  it("a secret-named link is not masked, but what it leads to is masked or hidden on its own", () => {
    const fs = base()
      .add("/work/proj/.env", "->/root/.env")
      .add("/root/.env", "K=1")
      .add("/work/proj/.ssh", "->keys")
      .add("/work/proj/keys/id_ed25519", "k");
    const p = policy(fs, launch("/work/proj"));
    expect(p.binds.map((b) => b.source)).not.toContain("/root");
    expect(unmasked(p, ["/work/proj/keys/id_ed25519"])).toEqual([]);
  });
});

describe("links that loop or chain", () => {
  it("a working directory that loops or chains past 40 links is refused with a SandboxPathError naming it", () => {
    const fs = base().add("/work/a", "->/work/b").add("/work/b", "->/work/a");
    expect(() => policy(fs, launch("/work/a"))).toThrow(SandboxPathError);
    expect(() => policy(fs, launch("/work/a"))).toThrow(/the working directory "\/work\/a".*ELOOP/);
    const chain = base().add("/work/proj/target/", "");
    for (let i = 0; i < 45; i++) chain.add(`/work/proj/l${i}`, i === 0 ? "->target" : `->l${i - 1}`);
    expect(() => policy(chain, launch("/work/proj"), { readable: ["l44"] })).toThrow(/sandbox\.readable path "l44".*ELOOP/);
  });

  it("looping node_modules, linked packages, @scope directories and package.json are skipped, not followed or fatal", () => {
    const fs = base()
      .add("/work/proj/node_modules/a", "->a")
      .add("/work/proj/node_modules/@s", "->@s")
      .add("/work/proj/node_modules/@t/self", "->../@t/self")
      .add("/work/proj/package.json", "->package.json")
      .add("/work/node_modules", "->node_modules");
    const p = policy(fs, launch("/work/proj"));
    expect(p.binds.map((b) => b.target)).toEqual(["/work/proj", "/work/proj/node_modules"]);
  });

  it("a script that is a chain of links leading out is not followed; one that stays inside is", () => {
    const fs = base()
      .add("/opt/secret/run.mjs", "")
      .add("/work/proj/c", "->/opt/secret/run.mjs")
      .add("/work/proj/b", "->c")
      .add("/work/proj/a", "->b");
    expect(policy(fs, launch("/work/proj", ["a"])).binds.map((b) => b.source)).not.toContain("/opt/secret");
  });
});

describe("the mask walk's budget", () => {
  it(`refuses a tree of ${MASK_BUDGET + 1} entries and takes one of ${MASK_BUDGET}; node_modules' insides are not counted`, () => {
    const fs = base();
    for (let i = 0; i < MASK_BUDGET - 1; i++) fs.add(`/work/proj/f${i}`, "");
    fs.add("/work/proj/node_modules/", "");
    for (let i = 0; i < 100; i++) fs.add(`/work/proj/node_modules/p${i}/`, "");
    expect(() => policy(fs, launch("/work/proj"))).not.toThrow();
    fs.add("/work/proj/one-more", "");
    expect(() => policy(fs, launch("/work/proj"))).toThrow(new RegExp(`more than ${MASK_BUDGET} entries.*showSecrets`));
    expect(() => policy(fs, launch("/work/proj"), { showSecrets: true })).not.toThrow();
  });

  it("a tree 300 levels deep is walked to the bottom for sockets and for names", () => {
    const fs = base();
    let at = "/work/proj";
    for (let i = 0; i < 300; i++) at = `${at}/d`;
    fs.add(`${at}/.env`, "deep");
    fs.add(`${at}/app.sock`, { kind: "other" });
    fs.add("/work/proj/d/d/.env", "shallow");
    const masks = policy(fs, launch("/work/proj")).masks.map((mask) => mask.path);
    expect(masks).toEqual(["/work/proj/d/d/.env", `${at}/.env`, `${at}/app.sock`].sort());
    expect(MASK_DEPTH).toBe(Infinity);
  });

  it(`refuses a tree of more than ${WALK_BUDGET} entries in all (node_modules counted), even with showSecrets`, () => {
    // One directory of many files, listed without being stored: the walk's count is what is tested.
    let files = WALK_BUDGET - 2;
    const fs = base().add("/work/proj/node_modules/pkg/", "");
    const big = Object.assign(Object.create(fs) as FakeFileSystem, {
      list: (path: string) =>
        path === "/work/proj/node_modules/pkg"
          ? Array.from({ length: files }, (_, i) => ({ name: `f${i}`, kind: "file" as const }))
          : fs.list(path),
    });
    expect(() => policy(big, launch("/work/proj"))).not.toThrow();
    files++;
    const refused = /"\/work\/proj" has more than 200000 entries, too many to check for sockets and FIFOs .*name a smaller directory$/;
    expect(() => policy(big, launch("/work/proj"))).toThrow(refused);
    expect(() => policy(big, launch("/work/proj"), { showSecrets: true })).toThrow(refused);
    expect(() => policy(big, launch("/work/proj"))).toThrow(SandboxPathError);
  });
});

describe("paths that look like bubblewrap options", () => {
  it("a working directory, readable path and argument named --bind, with newlines and `--`, stay single argv entries", () => {
    const cwd = "/work/--bind";
    const odd = "/work/-- \n--ro-bind x";
    const fs = base().add(`${cwd}/`, "").add(`${odd}/x`, "").add(`${cwd}/--ro-bind`, "");
    const p = policy(fs, launch(cwd, ["--bind", "/", "/"]), { readable: [odd] });
    const { args } = bubblewrapArgs(p, layout);
    // Every bind is a flag followed by exactly its source and target, never "/" as a source.
    for (let i = 0; i < args.length; i++) {
      if (args[i] === "--ro-bind" || args[i] === "--bind") {
        expect(args[i + 1], `source after ${args[i]} at ${i}`).not.toBe("/");
        i += 2;
      } else if (args[i] === "--") break;
    }
    expect(args.slice(args.indexOf("--"))).toEqual(["--", "/usr/bin/node", "--bind", "/", "/"]);
    expect(args).toContain(odd);
    expect(args[args.indexOf("--chdir") + 1]).toBe(cwd);
  });
});

describe("sockets, FIFOs and devices at any depth (28.7)", () => {
  // Was a hole (28.7): the walk stopped at MASK_DEPTH levels and never entered node_modules, so a host daemon's socket at
  // a/b/c/d/app.sock or node_modules/.cache/daemon.sock was shown, and connected to from the sandbox.
  it("masks a socket four levels down, one inside node_modules, and one in a node_modules found above the working directory", () => {
    const fs = base()
      .add("/work/proj/a/b/c/d/app.sock", { kind: "other" })
      .add("/work/proj/node_modules/.cache/daemon.sock", { kind: "other" })
      .add("/work/node_modules/pkg/deep/er/still/fifo", { kind: "other" })
      .add("/work/node_modules/pkg/deep/.env", "not a secret of the user's: installed");
    const p = policy(fs, launch("/work/proj"));
    expect(p.binds.map((b) => b.target)).toContain("/work/node_modules");
    expect(p.masks).toEqual([
      { path: "/work/node_modules/pkg/deep/er/still/fifo", kind: "file" },
      { path: "/work/proj/a/b/c/d/app.sock", kind: "file" },
      { path: "/work/proj/node_modules/.cache/daemon.sock", kind: "file" },
    ]);
    // showSecrets shows secrets, not ways to host processes.
    expect(policy(fs, launch("/work/proj"), { showSecrets: true }).masks).toEqual(p.masks);
  });

  it("masks a socket inside a workspace package at any depth, and shows no package.json that is a socket", () => {
    const fs = base()
      .add("/work/proj/package.json", { kind: "other" })
      .add("/work/proj/packages/lib/x/y/z/w/run.sock", { kind: "other" })
      .add("/work/proj/node_modules/lib", "->../packages/lib")
      .add("/work/proj/app/main.mjs", "");
    const p = policy(fs, launch("/work/proj/app", ["main.mjs"]));
    expect(p.binds.map((b) => b.target)).not.toContain("/work/proj/package.json");
    expect(p.masks.map((m) => m.path)).toContain("/work/proj/packages/lib/x/y/z/w/run.sock");
    expect(unmasked(p, ["/work/proj/packages/lib/x/y/z/w/run.sock"])).toEqual([]);
  });

  it("walks a node_modules inside the working directory once, not again as a root of its own", () => {
    const fs = base().add("/work/proj/node_modules/a/b/c/d/e.sock", { kind: "other" });
    let lists = 0;
    const counting = Object.assign(Object.create(fs) as FakeFileSystem, {
      list: (path: string) => {
        if (path === "/work/proj/node_modules/a/b/c/d") lists++;
        return fs.list(path);
      },
    });
    expect(policy(counting, launch("/work/proj")).masks.map((m) => m.path)).toEqual(["/work/proj/node_modules/a/b/c/d/e.sock"]);
    expect(lists).toBe(1);
  });
});

describe("a script directory planted as a link (28.9)", () => {
  // Was a hole (28.9): a run that could write its working directory replaced src/ with a link to /victim/src, and the
  // next run of `node src/guest.mjs` showed (and ran) the victim's script: the script's directory was resolved as named.
  it("refuses a script directory inside the working directory that leads out of it through a link", () => {
    const fs = base().add("/victim/src/guest.mjs", "").add("/work/proj/src", "->/victim/src");
    const run = () => policy(fs, launch("/work/proj", ["src/guest.mjs"]));
    expect(run).toThrow(SandboxPathError);
    expect(run).toThrow(
      'the script\'s directory "/work/proj/src" is inside "/work/proj" but leads out of it through a link (to /victim/src); ' +
        "a link a run could have planted there is not followed: name the script by its real path",
    );
    // Named by its real path, it is the host's own choice.
    expect(policy(fs, launch("/work/proj", ["/victim/src/guest.mjs"])).binds.map((b) => b.target)).toContain("/victim/src");
  });

  it("refuses one inside a writable path that leads out of it; links that stay inside are followed", () => {
    const fs = base()
      .add("/victim/tools/run.mjs", "")
      .add("/work/shared/tools", "->/victim/tools")
      .add("/work/shared/lib/run.mjs", "")
      .add("/work/shared/current", "->lib")
      .add("/work/proj/src", "->lib")
      .add("/work/proj/lib/g.mjs", "");
    expect(() => policy(fs, launch("/work/proj", ["/work/shared/tools/run.mjs"]), { writable: ["/work/shared"] })).toThrow(
      /inside "\/work\/shared" but leads out of it through a link \(to \/victim\/tools\)/,
    );
    const inside = policy(fs, launch("/work/proj", ["/work/shared/current/run.mjs"]), { writable: ["/work/shared"] });
    expect(inside.binds.map((b) => b.source)).toContain("/work/shared/lib");
    expect(policy(fs, launch("/work/proj", ["src/g.mjs"])).binds.map((b) => b.source)).toContain("/work/proj"); // src -> lib stays inside
  });

  it("follows a link outside every area the run may write (the host named the path: /opt/tool -> /opt/tool-1.2)", () => {
    const fs = base().add("/opt/tool-1.2/run.mjs", "").add("/opt/tool", "->tool-1.2");
    const p = policy(fs, launch("/work/proj", ["/opt/tool/run.mjs"]));
    expect(p.binds.map((b) => b.source)).toContain("/opt/tool-1.2");
  });

  it("a working directory given through a link runs a script in it as before", () => {
    const fs = base().add("/data/app/src/g.mjs", "").add("/work/app", "->/data/app");
    const p = policy(fs, launch("/work/app", ["src/g.mjs"]));
    expect(p.binds.map((b) => b.source)).toContain("/data/app/src");
  });
});
