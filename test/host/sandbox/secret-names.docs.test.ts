/**
 * The secret names docs/host.md promises are masked ("Secrets masked": the files that cannot be opened and the
 * directories that are empty), each checked as a user would: a file or directory of that name (a `*` filled
 * in, a `/` pattern under its directories) in a shown directory, masked by the policy. policy.test.ts checks
 * the other direction (every name the code has is in the docs); together the docs' list is the code's.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { sandboxPolicy, secretNames } from "../../../src/host/sandbox/policy.js";
import { FakeFileSystem } from "./fake-file-system.js";

const docs = readFileSync(new URL("../../../docs/host.md", import.meta.url), "utf8");
/** The backticked names of the docs' text between `from` and `to`. */
const namesBetween = (from: string, to: string): string[] => {
  const start = docs.indexOf(from);
  const end = docs.indexOf(to, start);
  if (start < 0 || end < 0) throw new Error(`docs/host.md no longer says ${JSON.stringify(start < 0 ? from : to)}`);
  return [...docs.slice(start + from.length, end).matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
};
const files = namesBetween("Files named ", "cannot be opened");
const directories = namesBetween("directories named", "are empty and read-only");

describe("the secret names docs/host.md lists", () => {
  it("are the code's, no more and no fewer", () => {
    expect(files.length).toBeGreaterThan(80);
    expect(directories).toContain(".ssh");
    expect([...new Set([...files, ...directories])].sort()).toEqual([...secretNames()].sort());
  });

  it("are each masked in a shown directory, as a file or as a directory, whatever their case", () => {
    const fs = new FakeFileSystem({ "/usr/bin/node": { kind: "file", executable: true }, "/work/proj/": "" });
    const expected: string[] = [];
    for (const [i, pattern] of [...files, ...directories].entries()) {
      // Each in a directory of its own, so that a mask of one never hides another.
      const path = `/work/proj/n${i}/${pattern.replace("*", "stem")}`;
      const asDirectory = directories.includes(pattern);
      fs.add(
        i % 2 === 0 ? path : path.toUpperCase().replace("/WORK/PROJ/N", "/work/proj/n"),
        asDirectory ? { kind: "directory" } : "secret",
      );
      expected.push(i % 2 === 0 ? path : path.toUpperCase().replace("/WORK/PROJ/N", "/work/proj/n"));
    }
    const policy = sandboxPolicy({ command: "node", args: [], cwd: "/work/proj", env: { PATH: "/usr/bin" } }, {}, fs, {
      homes: ["/root"],
      temporaryRoots: ["/tmp"],
    });
    const masked = new Map(policy.masks.map((mask) => [mask.path, mask.kind]));
    for (const path of expected) expect(masked.has(path), path).toBe(true);
    for (const [i, pattern] of directories.entries()) {
      const at = files.length + i;
      expect(masked.get(expected[at]!), pattern).toBe("directory");
    }
  });
});
