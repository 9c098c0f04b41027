// Every JavaScript and TypeScript block in README.md and docs/**/*.md (any depth, whatever the fence's
// language word: js, mjs, javascript, ts, mts, typescript) is type-checked here against the built package, as a
// strict nodenext consumer would: .ts blocks as TypeScript, .js blocks as JavaScript with checkJs (strict, except
// implicit any: plain JavaScript has no annotations to give). Blocks that tests also run (`<!-- run -->` in
// test/docs/readme.test.ts, `<!-- example: name -->` in test/openseek/docs.test.ts, `<!-- code-example: name -->`
// in test/host/code/docs.test.ts and test/docs/frameworks.test.ts) are checked here too. Two kinds are not: the
// typed-contract sample, which is test-d/sample (test/docs/contract-sample.test.ts; `tsc -p test-d` checks it), and
// a block marked `<!-- fragment: why -->` on the line above its fence (or above its other markers), which must say
// why it is not a program (an excerpt of generated output, a signature). test/package/pack.test.ts checks them all
// again in a consumer made by `npm pack`.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { documentationBlocks, documentationCompanions, documentationFiles, typeCheckBlocks } from "../helpers/doc-blocks.js";

const root = resolve(import.meta.dirname, "../..");
// Inside the repository, so "@posoco/ears" resolves to this package's build through its own "exports".
const scratch = join(root, ".doc-examples");
const tsc = join(root, "node_modules/typescript/bin/tsc");

describe("documentation examples", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("every block but the contract sample and marked fragments type-checks in strict nodenext against the built package", () => {
    const found = documentationBlocks(root);
    const checked = found.filter((block) => !block.checkedElsewhere);
    expect(found.length).toBeGreaterThan(20);
    // The README's runnable quickstart and host samples are among them (they are run too, by readme.test.ts).
    expect(checked.filter((block) => block.file === "README.md" && block.markers.includes("run")).length).toBeGreaterThanOrEqual(3);
    expect(checked.length).toBeGreaterThan(found.length - 8);
    expect(typeCheckBlocks(scratch, tsc, checked, documentationCompanions)).toEqual([]);
  });

  it("a fragment says why it is not a program; the markers are ones the tests know", () => {
    const blocks = documentationBlocks(root);
    const fragments = blocks.filter((block) => block.markers.some((marker) => marker.startsWith("fragment")));
    for (const block of fragments) expect(block.fragment ?? "", `${block.file}:${block.line}`).toMatch(/\w{3,}.*\w{3,}/);
    const known = /^(run|fragment:.*|(code-)?example: [\w-]+|mcp-client-config|file: docs\/deploy\/[\w.-]+)$/;
    const unknown = blocks.flatMap((block) =>
      block.markers.filter((marker) => !known.test(marker)).map((marker) => `${block.file}:${block.line}: ${marker}`),
    );
    expect(unknown).toEqual([]);
  });

  it("finds the blocks of every Markdown file under docs/, nested ones too, and fences in any JavaScript or TypeScript spelling", () => {
    const files = documentationFiles(root);
    expect(files[0]).toBe("README.md");
    expect(files).toContain("docs/host.md");
    const dir = join(scratch, "finder");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, "docs/guides/deep"), { recursive: true });
    mkdirSync(join(dir, "test-d/sample"), { recursive: true });
    for (const name of ["contract", "guest", "host"]) writeFileSync(join(dir, "test-d/sample", `${name}.ts`), "");
    writeFileSync(join(dir, "README.md"), "```typescript\nconst a: number = 1;\n```\n");
    writeFileSync(
      join(dir, "docs/guides/deep/page.md"),
      "Text\n\n<!-- fragment: an excerpt of output -->\n<!-- code-example: x -->\n```ts\nfoo(\n```\n\n  ```mjs\n  const b = 2;\n  ```\n",
    );
    const blocks = documentationBlocks(dir);
    expect(blocks.map(({ file, line, language, code, fragment, markers }) => ({ file, line, language, code, fragment, markers }))).toEqual([
      { file: "README.md", line: 1, language: "ts", code: "const a: number = 1;\n", fragment: undefined, markers: [] },
      {
        file: "docs/guides/deep/page.md",
        line: 5,
        language: "ts",
        code: "foo(\n",
        fragment: "an excerpt of output",
        markers: ["fragment: an excerpt of output", "code-example: x"],
      },
      { file: "docs/guides/deep/page.md", line: 9, language: "js", code: "const b = 2;\n", fragment: undefined, markers: [] },
    ]);
    expect(blocks.map((block) => block.checkedElsewhere)).toEqual([false, true, false]);
  });

  it("no block names a file the package does not ship (the repository's fixtures, tests, sources or scripts)", () => {
    const packed = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).files as string[];
    const outside = documentationBlocks(root).flatMap((block) =>
      [...block.code.matchAll(/["'`](?:\.\/)?((?:fixtures|test|test-d|src|scripts|bench)\/[^"'`]*)/g)].map(
        (match) => `${block.file}:${block.line}: ${match[1]}`,
      ),
    );
    expect(packed).not.toContain("fixtures");
    expect(outside).toEqual([]);
  });

  it("names a broken block by its documentation file and line", () => {
    const broken = {
      file: "docs/api.md",
      line: 10,
      language: "ts" as const,
      code: 'import { serve } from "@posoco/ears";\nconst n: number = serve;\n',
      checkedElsewhere: false,
      markers: [],
    };
    const errors = typeCheckBlocks(scratch, tsc, [broken]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^docs\/api\.md:12: error TS2322: /);
  });
});
