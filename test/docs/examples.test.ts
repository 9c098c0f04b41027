// Every JavaScript and TypeScript block in README.md and docs/*.md is checked: the ones marked
// `<!-- run -->` or `<!-- example: name -->` run in test/docs/readme.test.ts and test/openseek/docs.test.ts,
// `<!-- code-example: name -->` in test/code/docs.test.ts,
// the typed-contract example is test-d/sample (test/docs/contract-sample.test.ts), and every other one
// is type-checked here against the built package, as a strict nodenext consumer would: .ts blocks as
// TypeScript, .js blocks as JavaScript with checkJs (strict, except implicit any: plain JavaScript has no
// annotations to give).
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const scratch = join(root, ".doc-examples");
const tsc = join(root, "node_modules/typescript/bin/tsc");

interface Block {
  file: string;
  line: number;
  language: "js" | "ts";
  code: string;
  checkedElsewhere: boolean;
}

function blocks(): Block[] {
  const sample = ["contract", "guest", "host"].map((name) => readFileSync(join(root, "test-d/sample", `${name}.ts`), "utf8")).join("\n");
  const files = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];
  return files.flatMap((file) => {
    const text = readFileSync(join(root, file), "utf8");
    return [...text.matchAll(/(<!-- (?:run|(?:code-)?example: [\w-]+) -->\n)?```(js|ts)\n([\s\S]*?)```/g)].map((match) => ({
      file,
      line: text.slice(0, match.index + (match[1]?.length ?? 0)).split("\n").length,
      language: match[2] as "js" | "ts",
      code: match[3]!,
      checkedElsewhere: match[1] !== undefined || match[3] === sample,
    }));
  });
}

describe("documentation examples", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("every block not run elsewhere type-checks in strict nodenext against the built package", () => {
    const found = blocks();
    const checked = found.filter((block) => !block.checkedElsewhere);
    expect(found.length).toBeGreaterThan(20);
    expect(checked.length).toBeGreaterThan(8);
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    const names = new Map<string, Block>();
    for (const block of checked) {
      const name = `${block.file.replace(/\W/g, "-")}-L${block.line}.${block.language === "js" ? "mjs" : "mts"}`;
      names.set(name, block);
      writeFileSync(join(scratch, name), block.code);
    }
    const compilerOptions = {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023"],
      types: ["node"],
      strict: true,
      noImplicitAny: false,
      allowJs: true,
      checkJs: true,
      noEmit: true,
      skipLibCheck: true,
      rootDir: ".",
    };
    writeFileSync(join(scratch, "tsconfig.json"), JSON.stringify({ compilerOptions, include: ["*.mts", "*.mjs"] }));
    let output = "";
    try {
      execFileSync(process.execPath, [tsc, "-p", join(scratch, "tsconfig.json")], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    // Name each error by its documentation file and line, so the fix is easy to find.
    const errors = output
      .split("\n")
      .filter((line) => line.startsWith(".doc-examples/"))
      .map((line) => {
        const [, name, at, message] = /^\.doc-examples\/([^(]+)\((\d+),\d+\): (.*)$/.exec(line) ?? [];
        const block = names.get(name ?? "");
        return block === undefined ? line : `${block.file}:${block.line + Number(at)}: ${message}`;
      });
    expect(errors).toEqual([]);
  });
});
