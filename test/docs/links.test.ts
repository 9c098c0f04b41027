/**
 * The documentation is read in the installed package too (node_modules/@posoco/ears), where the repository's
 * tests, sources and CONTRIBUTING.md are not: every Markdown link of README.md and docs/**\/*.md leads to a file
 * the package ships (and that exists, with the heading an anchor names), to the web, or is marked as a link into
 * the repository ("the repository's [CONTRIBUTING.md](...)"). The guides and the README's user path name a
 * repository path (`test/…`, `src/…`, `fixtures/…`) as the repository's, not as a path the package has.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { documentationFiles } from "../helpers/doc-blocks.js";

const root = resolve(import.meta.dirname, "../..");
const packaged = [
  ...(JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { files: string[] }).files,
  "LICENSE",
  "package.json",
];

/**
 * Pages another piece of work writes, linked before they exist here: the link is checked once the page is
 * there (the deploy recipes, docs/deploy.md, from the work on sessions without root).
 */
const WRITTEN_ELSEWHERE = new Set(["docs/deploy.md"]);

/** Folders of the repository that the package does not ship. */
const REPOSITORY_PATH = /(?<![\w/.-])(?:\.\/)?((?:test|test-d|src|fixtures|scripts|bench|tools|\.ci)\/[\w./*{}-]*)/g;

/** Marks a link or a path as the repository's: "the repository's", just before it (past a backtick or bracket). */
const MARKED = /(?:the repository's|in the repository|repository file)\s*[`[]*$/i;

/**
 * The text whose repository paths must be marked: the guides, and the README's path for a user (its sections
 * for working on the repository, "The two commands" and "Dependencies, and why", are about a clone).
 */
function userText(file: string): string | undefined {
  const text = readFileSync(join(root, file), "utf8").replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, " "));
  if (file.startsWith("docs/guides/")) return text;
  if (file !== "README.md") return undefined;
  // Sections for a clone are blanked, keeping the line count.
  return text.replace(/^## (The two commands|Dependencies, and why)\n[\s\S]*?(?=^## |(?![\s\S]))/gm, (section) =>
    section.replace(/[^\n]/g, " "),
  );
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(path: string): Set<string> {
  const text = readFileSync(path, "utf8").replace(/```[\s\S]*?```/g, "");
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
  before: string;
}

function linksOf(file: string): Link[] {
  const text = readFileSync(join(root, file), "utf8").replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, " "));
  return [...text.matchAll(/\[[^\]\n]*\]\(([^)\s]+)\)/g)].map((match) => ({
    file,
    line: text.slice(0, match.index).split("\n").length,
    target: match[1]!,
    before: text.slice(Math.max(0, match.index - 40), match.index),
  }));
}

/** Why `link` does not hold in the package, or undefined when it does. */
function problemOf(link: Link): string | undefined {
  if (/^[a-z]+:/i.test(link.target)) return undefined;
  const [path, anchor] = link.target.split("#") as [string, string | undefined];
  const target = path === "" ? link.file : normalize(relative(root, resolve(root, dirname(link.file), path))).replace(/\\/g, "/");
  if (target.startsWith("..")) return `leads outside the repository (${link.target})`;
  const shipped = packaged.some((entry) => target === entry || target.startsWith(`${entry}/`) || `${target}/` === `${entry}/`);
  if (!shipped)
    return MARKED.test(link.before) ? undefined : `${target} is not in the package: mark it as the repository's, or link the web`;
  if (!existsSync(join(root, target))) return WRITTEN_ELSEWHERE.has(target) ? undefined : `${target} does not exist`;
  if (anchor === undefined || statSync(join(root, target)).isDirectory() || !target.endsWith(".md")) return undefined;
  return anchorsOf(join(root, target)).has(anchor) ? undefined : `${target} has no heading #${anchor}`;
}

describe("documentation links in the package", () => {
  const files = documentationFiles(root);

  it("every link of README.md and docs/**/*.md leads to a file the package ships, to the web, or is marked as the repository's", () => {
    const problems = files.flatMap(linksOf).flatMap((link) => {
      const problem = problemOf(link);
      return problem === undefined ? [] : [`${link.file}:${link.line}: ${link.target}: ${problem}`];
    });
    expect(problems).toEqual([]);
  });

  it("the README's user path and the guides name repository paths as the repository's", () => {
    const unmarked = files.flatMap((file) => {
      const text = userText(file);
      if (text === undefined) return [];
      return [...text.matchAll(REPOSITORY_PATH)]
        .filter((match) => !MARKED.test(text.slice(Math.max(0, match.index - 40), match.index)))
        .map((match) => `${file}:${text.slice(0, match.index).split("\n").length}: ${match[1]}`);
    });
    expect(unmarked).toEqual([]);
  });

  it("the README links a guide per task, the deploy recipes included, before the reference", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const guides = ["code-mode", "sessions", "approvals", "mcp", "frameworks"].map((name) => `docs/guides/${name}.md`);
    for (const guide of [...guides, "docs/deploy.md"]) expect(readme, guide).toContain(`](${guide})`);
    for (const guide of guides) {
      const text = readFileSync(join(root, guide), "utf8");
      // Short, and the limits that bite come first, before any code.
      expect(text.length, guide).toBeLessThan(6000);
      expect(text.indexOf("## The limits that bite"), guide).toBeGreaterThan(0);
      expect(text.indexOf("## The limits that bite"), guide).toBeLessThan(text.indexOf("```"));
    }
  });

  it("catches what it is for: a path the package lacks, an unmarked one, a missing heading", () => {
    const link = (target: string, before = "see ") => problemOf({ file: "docs/guides/x.md", line: 1, target, before });
    expect(link("../../test/host/record.test.ts")).toMatch(/test\/host\/record\.test\.ts is not in the package/);
    expect(link("../../CONTRIBUTING.md", "the repository's ")).toBeUndefined();
    expect(link("../host.md#no-such-heading")).toMatch(/has no heading #no-such-heading/);
    expect(link("../host.md#sessions-a-workspace-that-lasts-between-runs")).toBeUndefined();
    expect(link("../nope.md")).toMatch(/does not exist/);
    expect(link("https://example.com/x")).toBeUndefined();
    expect(slug("`ears mcp [options]`")).toBe("ears-mcp-options");
  });
});
