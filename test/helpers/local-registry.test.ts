/**
 * The loopback registry test/cli/mcp-client-config.test.ts installs from: its tarballs are what `tar` (as
 * npm's extractor) reads back, file for file and mode for mode, without the package's own node_modules; its
 * packuments name integrity that matches the tarball served; what it lacks is a 404, kept in `missed`.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { packDirectory, startLocalRegistry } from "./local-registry.js";

const dir = mkdtempSync(join(tmpdir(), "ears-local-registry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A package `name@version` installed under `modules`, with a bin, a long path and a nested node_modules. */
function install(modules: string, name: string, version: string, extra: Record<string, unknown> = {}): string {
  const pkg = join(modules, name);
  const deep = join(pkg, "lib", "a".repeat(60), "b".repeat(60));
  mkdirSync(deep, { recursive: true });
  mkdirSync(join(pkg, "node_modules", "left-out"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version, bin: { tool: "./bin.js" }, ...extra }));
  writeFileSync(join(pkg, "bin.js"), "#!/usr/bin/env node\nconsole.log('é');\n");
  chmodSync(join(pkg, "bin.js"), 0o755);
  writeFileSync(join(deep, "deep.txt"), "x".repeat(1000));
  writeFileSync(join(pkg, "node_modules", "left-out", "package.json"), "{}");
  return pkg;
}

describe("the local registry", () => {
  it("packs an installed directory as npm does: entries under package/, modes kept, node_modules left out, long paths", () => {
    const pkg = install(join(dir, "pack", "node_modules"), "demo", "1.0.0");
    const out = join(dir, "pack-out");
    mkdirSync(out);
    writeFileSync(join(dir, "demo.tgz"), packDirectory(pkg));
    execFileSync("tar", ["-xzf", join(dir, "demo.tgz"), "-C", out]);
    const deep = join("lib", "a".repeat(60), "b".repeat(60), "deep.txt");
    expect(readFileSync(join(out, "package", deep), "utf8")).toBe("x".repeat(1000));
    expect(readFileSync(join(out, "package", "bin.js"), "utf8")).toBe("#!/usr/bin/env node\nconsole.log('é');\n");
    expect(statSync(join(out, "package", "bin.js")).mode & 0o111).not.toBe(0);
    expect(() => statSync(join(out, "package", "node_modules"))).toThrow();
  });

  it("serves packuments whose integrity is the tarball's, leaves out optional and peer packages it lacks, and 404s the rest", async () => {
    const modules = join(dir, "serve", "node_modules");
    install(modules, "@scope/lib", "2.1.0");
    install(modules, "app", "1.0.0", {
      dependencies: { "@scope/lib": "^2.0.0", "native-win32": "1.0.0" },
      optionalDependencies: { "native-win32": "1.0.0" },
      peerDependencies: { "@scope/lib": "^2", absent: "^1" },
      peerDependenciesMeta: { absent: { optional: true } },
      devDependencies: { vitest: "^4" },
    });
    const registry = await startLocalRegistry([modules]);
    try {
      const packument = (await (await fetch(`${registry.url}app`)).json()) as {
        "dist-tags": { latest: string };
        versions: Record<string, Record<string, unknown> & { dist: { tarball: string; integrity: string } }>;
      };
      expect(packument["dist-tags"].latest).toBe("1.0.0");
      const manifest = packument.versions["1.0.0"]!;
      expect(manifest).toMatchObject({
        name: "app",
        version: "1.0.0",
        dependencies: { "@scope/lib": "^2.0.0" },
        optionalDependencies: {},
        peerDependencies: { "@scope/lib": "^2" },
        peerDependenciesMeta: {},
        bin: { tool: "./bin.js" },
      });
      expect(manifest).not.toHaveProperty("devDependencies");
      const tarball = Buffer.from(await (await fetch(manifest.dist.tarball)).arrayBuffer());
      expect(manifest.dist.integrity).toBe(`sha512-${createHash("sha512").update(tarball).digest("base64")}`);
      // A scoped name as npm asks for it, its slash encoded.
      expect((await fetch(`${registry.url}@scope%2flib`)).status).toBe(200);
      expect((await fetch(`${registry.url}left-out`)).status).toBe(404);
      expect((await fetch(`${registry.url}-/tarballs/app/9.9.9.tgz`)).status).toBe(404);
      expect(registry.missed).toEqual(["left-out", "-/tarballs/app/9.9.9.tgz"]);
    } finally {
      await registry.close();
    }
  });
});
