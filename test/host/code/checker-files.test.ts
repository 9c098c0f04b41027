/**
 * The type checker never touches the host's file system for a body's imports (issue 28, item 2): a body
 * naming host paths (`import("/etc/shadow")`, a relative path climbing out, a package name) makes the
 * checker look at no file outside the TypeScript package's own, and a module that exists only on the host
 * fails exactly as one that exists nowhere. Before the fix the checker `stat`ed `/etc/shadow.ts`,
 * `/etc/shadow.d.ts`, ... on the host. In process (the checkers themselves, their lookups observed) and
 * through the warm checker process.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { looseDeclarations } from "../../../src/contract/declarations.js";
import { javascriptChecker, nativeChecker, type NativeApiClass, type TsModule } from "../../../src/host/code/checkers.js";
import { typecheckBody } from "../../../src/host/code/typecheck.js";
import { installedTypeScript, useCheckerSettingsForTests } from "../../../src/host/code/warm-checker.js";
import { typeScript5 } from "../../helpers/typescript5.js";

/** A directory with a module only the host has. */
const hostOnly = mkdtempSync(join(tmpdir(), "ears-host-only-"));
writeFileSync(join(hostOnly, "secret.ts"), 'export const secret: "found" = "found";\n');
writeFileSync(join(hostOnly, "secret.d.ts"), 'export declare const secret: "found";\n');
const missing = join(hostOnly, "nowhere");

afterAll(async () => {
  rmSync(hostOnly, { recursive: true, force: true });
  await useCheckerSettingsForTests({});
});

/** A body (wrapped as typecheck.ts wraps it) naming host paths every way a type can. */
function hostileBody(module: string): string {
  return (
    "async function __earsBody() {" +
    `type A = typeof import("${module}"); const a: A = null!; const s: "found" = a.secret;\n` +
    'type B = typeof import("/etc/shadow"); type C = typeof import("../../../../../etc/passwd");\n' +
    'type D = typeof import("node:fs"); type E = typeof import("left-pad"); type F = import("/root/.ssh/id_rsa").Key;\n' +
    "return [s];\n}\nexport {};\n"
  );
}

const typescript7 = installedTypeScript()!;
const typescript5 = typeScript5();

describe.runIf(process.platform === "linux")("the checker and the host's files", () => {
  it("TypeScript 5.9: the file system is asked about the TypeScript package's files only", async () => {
    const ts = createRequire(join(typescript5, "package.json"))(typescript5) as TsModule & { sys: Record<string, unknown> };
    const library = `${resolve(typescript5)}/`;
    const asked: string[] = [];
    const sys = ts.sys as Record<string, (...args: unknown[]) => unknown>;
    const saved = { ...sys };
    for (const name of ["fileExists", "readFile", "directoryExists", "realpath", "getDirectories", "readDirectory", "getModifiedTime"]) {
      const original = sys[name];
      if (typeof original !== "function") continue;
      sys[name] = (...args: unknown[]) => {
        asked.push(String(args[0]));
        return original.apply(ts.sys, args);
      };
    }
    try {
      const check = javascriptChecker(ts, library);
      const found = await check(looseDeclarations(), hostileBody(join(hostOnly, "secret")));
      const nowhere = await check(looseDeclarations(), hostileBody(missing));
      expect(asked.filter((path) => !`${path}/`.startsWith(library))).toEqual([]);
      expect(JSON.stringify(found).replaceAll(join(hostOnly, "secret"), "M")).toBe(JSON.stringify(nowhere).replaceAll(missing, "M"));
      expect(found.errors.map((error) => error.code)).toContain(2307);
    } finally {
      Object.assign(sys, saved);
    }
  }, 60_000);

  it("TypeScript 7: the native compiler reads from disk only its own packages' files", async () => {
    const manifest = createRequire(join(typescript7, "package.json"))("./package.json") as { exports: Record<string, string> };
    const { API } = (await import(pathToFileURL(join(typescript7, manifest.exports["./unstable/async"]!)).href)) as { API: NativeApiClass };
    const exe = ((await import(pathToFileURL(join(typescript7, "lib", "getExePath.js")).href)) as { default: () => string }).default();
    const libraries = [`${resolve(typescript7)}/`, `${dirname(exe)}/`];
    const fromDisk: string[] = [];
    // Every lookup the checker hands back to the compiler (undefined: "read the real file system") is observed.
    class Observed extends (API as unknown as new (options: { cwd: string; fs: Record<string, (name: string) => unknown> }) => object) {
      constructor(options: { cwd: string; fs: Record<string, (name: string) => unknown> }) {
        const fs = Object.fromEntries(
          Object.entries(options.fs).map(([name, lookup]) => [
            name,
            (path: string) => {
              const answer = lookup(path);
              if (answer === undefined) fromDisk.push(path);
              return answer;
            },
          ]),
        );
        super({ ...options, fs });
      }
    }
    const check = nativeChecker(Observed as unknown as NativeApiClass, libraries);
    const found = await check(looseDeclarations(), hostileBody(join(hostOnly, "secret")));
    const nowhere = await check(looseDeclarations(), hostileBody(missing));
    expect(fromDisk.filter((path) => !libraries.some((library) => path.startsWith(library)))).toEqual([]);
    expect(JSON.stringify(found).replaceAll(join(hostOnly, "secret"), "M")).toBe(JSON.stringify(nowhere).replaceAll(missing, "M"));
    expect(found.errors.map((error) => error.code)).toContain(2307);
  }, 60_000);

  {
    it("through the warm checker: a module only the host has fails as one that does not exist", async () => {
      await useCheckerSettingsForTests({ typescript: typescript7 });
      const body = (module: string) => `type A = typeof import("${module}");\nconst a: A = null!;\nconst s: "found" = a.secret;\nreturn s;`;
      const found = await typecheckBody(body(join(hostOnly, "secret")), looseDeclarations(), undefined);
      const nowhere = await typecheckBody(body(missing), looseDeclarations(), undefined);
      expect(found).toMatch(/Cannot find module/);
      expect(found?.replaceAll(join(hostOnly, "secret"), "M")).toBe(nowhere?.replaceAll(missing, "M"));
    }, 60_000);
  }
});
