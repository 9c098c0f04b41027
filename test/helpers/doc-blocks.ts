// The documentation's code blocks and a strict nodenext type check of them, shared by
// test/docs/examples.test.ts (against this repository's build) and test/package/pack.test.ts (in a consumer
// created from `npm pack`, with the project's TypeScript and with a TypeScript 5.x release).
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

export interface Block {
  file: string;
  line: number;
  language: "js" | "ts";
  code: string;
  /** Marked `<!-- run -->`, `<!-- example: name -->` or `<!-- code-example: name -->` (a test runs it), or the contract sample itself. */
  checkedElsewhere: boolean;
}

export const sampleNames = ["contract", "guest", "host"] as const;

/** Every ```js and ```ts block of README.md and docs/*.md under `root`. */
export function documentationBlocks(root: string): Block[] {
  const sample = sampleNames.map((name) => readFileSync(join(root, "test-d/sample", `${name}.ts`), "utf8")).join("\n");
  const files = [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name}`),
  ];
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

export const strictNodeNext = {
  target: "ES2022",
  module: "NodeNext",
  moduleResolution: "NodeNext",
  lib: ["ES2023"],
  types: ["node"],
  strict: true,
  // Plain JavaScript has no annotations to give: .js blocks are checked with checkJs, implicit any allowed.
  noImplicitAny: false,
  allowJs: true,
  checkJs: true,
  noEmit: true,
  skipLibCheck: true,
};

/**
 * Writes `blocks` (and `extra` files, by relative path) into `folder`, which must be empty or absent and sit
 * where their imports resolve, type-checks them with the compiler at `tsc`, and returns the errors, each
 * named by its documentation file and line (or by the extra file's path) so the fix is easy to find.
 * `options` are compiler options on top of {@link strictNodeNext}.
 */
export function typeCheckBlocks(
  folder: string,
  tsc: string,
  blocks: Block[],
  extra: Record<string, string> = {},
  options: object = {},
): string[] {
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  const names = new Map<string, Block>();
  for (const block of blocks) {
    const name = `${block.file.replace(/\W/g, "-")}-L${block.line}.${block.language === "js" ? "mjs" : "mts"}`;
    names.set(name, block);
    writeFileSync(join(folder, name), block.code);
  }
  for (const [path, text] of Object.entries(extra)) {
    mkdirSync(join(folder, path, ".."), { recursive: true });
    writeFileSync(join(folder, path), text);
  }
  const include = ["*.mts", "*.mjs", ...Object.keys(extra)];
  writeFileSync(
    join(folder, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { ...strictNodeNext, rootDir: ".", ...options }, include }),
  );
  let output = "";
  try {
    execFileSync(process.execPath, [tsc, "-p", join(folder, "tsconfig.json")], {
      cwd: folder,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    // Anything the compiler prints is a failure; a compiler that failed silently is one too.
    output = `${failed.stdout ?? ""}${failed.stderr ?? ""}`.trim() || String(error);
  }
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const [, file, at, message] = /^(.+?)\((\d+),\d+\): (.*)$/.exec(line) ?? [];
      const block = names.get(relative(folder, join(folder, file ?? "")));
      return block === undefined ? line : `${block.file}:${block.line + Number(at)}: ${message}`;
    });
}
