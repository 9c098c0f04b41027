// Every JavaScript and TypeScript block in README.md and docs/*.md is checked: the ones marked
// `<!-- run -->` or `<!-- example: name -->` run in test/docs/readme.test.ts and test/openseek/docs.test.ts,
// `<!-- code-example: name -->` in test/host/code/docs.test.ts,
// the typed-contract example is test-d/sample (test/docs/contract-sample.test.ts), and every other one
// is type-checked here against the built package, as a strict nodenext consumer would: .ts blocks as
// TypeScript, .js blocks as JavaScript with checkJs (strict, except implicit any: plain JavaScript has no
// annotations to give). test/package/pack.test.ts checks all of them again in a consumer made by `npm pack`.
import { readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { documentationBlocks, typeCheckBlocks } from "../helpers/doc-blocks.js";

const root = resolve(import.meta.dirname, "../..");
// Inside the repository, so "@posoco/ears" resolves to this package's build through its own "exports".
const scratch = join(root, ".doc-examples");
const tsc = join(root, "node_modules/typescript/bin/tsc");

describe("documentation examples", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("every block not run elsewhere type-checks in strict nodenext against the built package", () => {
    const found = documentationBlocks(root);
    const checked = found.filter((block) => !block.checkedElsewhere);
    expect(found.length).toBeGreaterThan(20);
    expect(checked.length).toBeGreaterThan(8);
    expect(typeCheckBlocks(scratch, tsc, checked)).toEqual([]);
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
    };
    const errors = typeCheckBlocks(scratch, tsc, [broken]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^docs\/api\.md:12: error TS2322: /);
  });
});
