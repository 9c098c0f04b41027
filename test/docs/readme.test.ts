// The README's examples are code users copy: the runnable ones run as written, in a folder holding only
// the README's guest.mjs and a README.md, where the package name resolves to this package's build; the
// OpenSeek ones are the very blocks that test/openseek/docs.test.ts runs from docs/openseek.md.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const scratch = join(root, ".readme-examples");

function blocks(text: string, marker: RegExp): { name: string; code: string }[] {
  const found: { name: string; code: string }[] = [];
  const pattern = new RegExp(`${marker.source}\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``, "g");
  for (const match of text.matchAll(pattern)) found.push({ name: match[1] ?? `run-${found.length + 1}`, code: match[2] ?? match[1]! });
  return found;
}

describe("README examples", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const runnable = [...readme.matchAll(/<!-- run -->\n```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
  it("has runnable examples", () => expect(runnable.length).toBeGreaterThanOrEqual(2));

  // The README's own guest, the file the host example runs: the examples need nothing the package lacks.
  const guest = /```js\n(\/\/ guest\.mjs\n[\s\S]*?)```/.exec(readme)?.[1];
  it("has the guest the host example runs", () => expect(guest).toBeDefined());

  runnable.forEach((code, index) => {
    it(`runnable example ${index + 1} runs and exits 0 in a folder with only the README's guest.mjs and a README.md`, () => {
      // Inside the repository, so "@posoco/ears" resolves to this package's build through its own "exports".
      rmSync(scratch, { recursive: true, force: true });
      mkdirSync(scratch, { recursive: true });
      writeFileSync(join(scratch, "guest.mjs"), guest ?? "");
      writeFileSync(join(scratch, "README.md"), readme);
      const file = join(scratch, `example-${index + 1}.mjs`);
      writeFileSync(file, code);
      const out = execFileSync(process.execPath, [file], { cwd: scratch, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      expect(out.length).toBeGreaterThan(0);
    });
  });

  it("shows the OpenSeek examples exactly as docs/openseek.md, where they are run", () => {
    const docs = readFileSync(join(root, "docs/openseek.md"), "utf8");
    const named = blocks(readme, /<!-- example: ([\w-]+) -->/);
    expect(named.map((b) => b.name)).toEqual(["ptc-call", "fix-warnings", "mcp-search-call"]);
    const inDocs = new Map(blocks(docs, /<!-- example: ([\w-]+) -->/).map((b) => [b.name, b.code]));
    for (const { name, code } of named) expect(code, name).toBe(inDocs.get(name));
  });
});
