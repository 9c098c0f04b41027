// `ears --help` is read by users of the published package: every file of this repository it names must be
// one they have, i.e. inside package.json "files" (issue 22, item 9: it named fixtures/guests/demo.mjs).
// Names of files that are not in the repository (guest.mjs, run.ndjson) are the user's own, as examples.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, normalize, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const cli = join(root, "dist/cli/main.js");
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { files: string[] };
// npm always packs these, whatever "files" says.
const published = [...packageJson.files, "package.json", "LICENSE"];

/** Whether a path relative to the repository root is in the published package. */
function isPublished(path: string): boolean {
  const relative = normalize(path).replace(/^\.\//, "");
  return published.some((entry) => relative === entry || relative.startsWith(`${entry}/`));
}

/**
 * Every word of `text` that names a file or folder of this repository. A bare dot-name (`.git/`, `.env`)
 * names a kind of file the sandbox masks, in any directory, not this repository's.
 */
function repositoryPaths(text: string): string[] {
  const words = text.match(/[\w@.][\w@./-]*/g) ?? [];
  return [...new Set(words.map((word) => word.replace(/[.,:;]+$/, "")))].filter(
    (word) => word !== "" && word !== "." && /[/.]/.test(word) && !/^\.[^/]+\/?$/.test(word) && existsSync(join(root, word)),
  );
}

describe("ears --help names only files the published package has", () => {
  it("the check sees a repository file outside the package", () => {
    expect(repositoryPaths("node fixtures/guests/demo.mjs")).toEqual(["fixtures/guests/demo.mjs"]);
    expect(repositoryPaths("masks .git/ and .env")).toEqual([]);
    expect(isPublished("fixtures/guests/demo.mjs")).toBe(false);
    expect(isPublished("docs/cli.md")).toBe(true);
  });

  const help = (args: string[]) => execFileSync(process.execPath, [cli, ...args], { encoding: "utf8" });
  // Every command's help that the main help points to ("Run "ears run --help", …"), and the main help itself.
  const commands = [...help(["--help"]).matchAll(/"ears (\w+) --help"/g)].map((match) => match[1]!);

  it("finds the commands' helps through the main help", () => expect(commands).toEqual(expect.arrayContaining(["run", "exec", "replay"])));

  for (const args of [["--help"], ...commands.map((command) => [command, "--help"])]) {
    it(`ears ${args.join(" ")}`, () => {
      const text = help(args);
      expect(text.length).toBeGreaterThan(100);
      const outside = repositoryPaths(text).filter((path) => !isPublished(path));
      expect(outside).toEqual([]);
    });
  }
});
