// The documentation's code blocks and a strict nodenext type check of them, shared by
// test/docs/examples.test.ts (against this repository's build) and test/package/pack.test.ts (in a consumer
// created from `npm pack`, with the project's TypeScript and with a TypeScript 5.x release).
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

export interface Block {
  file: string;
  line: number;
  language: "js" | "ts";
  code: string;
  /**
   * Not type-checked with the others: the contract sample itself (checked as test-d/sample by `tsc -p
   * test-d`), or a block marked `<!-- fragment: why -->` (see {@link Block.fragment}).
   */
  checkedElsewhere: boolean;
  /** The reason a `<!-- fragment: why -->` marker gives: a block that is not a program (an excerpt of output, a snippet of a signature). */
  fragment?: string;
  /** The HTML comments right above the fence (`run`, `example: name`, `code-example: name`, `fragment: why`). */
  markers: string[];
}

export const sampleNames = ["contract", "guest", "host"] as const;

/** The files whose blocks are checked: README.md and every Markdown file under docs/, at any depth, in a stable order. */
export function documentationFiles(root: string): string[] {
  const docs = (readdirSync(join(root, "docs"), { recursive: true }) as string[])
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name.split(sep).join("/")}`)
    .sort();
  return ["README.md", ...docs];
}

/** Fences of JavaScript and TypeScript, whatever the info string says (`js`, `mjs`, `javascript`, `ts`, `mts`, `typescript`). */
const FENCE = /^( {0,3})```\s*(js|mjs|cjs|javascript|ts|mts|cts|typescript)\b[^`]*$/;

/**
 * Every JavaScript and TypeScript block of README.md and docs/**\/*.md under `root`, with the markers right
 * above it. A block is a program a strict nodenext consumer could compile, unless marked
 * `<!-- fragment: why -->` with the reason (test/docs/examples.test.ts requires one).
 */
export function documentationBlocks(root: string): Block[] {
  const sample = sampleNames.map((name) => readFileSync(join(root, "test-d/sample", `${name}.ts`), "utf8")).join("\n");
  const blocks: Block[] = [];
  for (const file of documentationFiles(root)) {
    const lines = readFileSync(join(root, file), "utf8").split("\n");
    for (let at = 0; at < lines.length; at++) {
      const fence = FENCE.exec(lines[at]!);
      if (fence === null) continue;
      const indent = fence[1]!.length;
      const markers: string[] = [];
      for (let above = at - 1; above >= 0; above--) {
        const marker = /^\s*<!--\s*(.*?)\s*-->\s*$/.exec(lines[above]!);
        if (marker === null) break;
        markers.unshift(marker[1]!);
      }
      const body: string[] = [];
      let end = at + 1;
      for (; end < lines.length && !/^\s*```\s*$/.test(lines[end]!); end++)
        body.push(lines[end]!.slice(Math.min(indent, /^ */.exec(lines[end]!)![0].length)));
      const code = body.length === 0 ? "" : `${body.join("\n")}\n`;
      const fragment = markers.map((marker) => /^fragment:\s*(.*)$/.exec(marker)?.[1]).find((reason) => reason !== undefined);
      blocks.push({
        file,
        // The line of the fence: an error on the block's line N is reported at fence + N.
        line: at + 1,
        language: /^(ts|mts|cts|typescript)$/.test(fence[2]!) ? "ts" : "js",
        code,
        checkedElsewhere: fragment !== undefined || code === sample,
        ...(fragment === undefined ? {} : { fragment }),
        markers,
      });
      at = end;
    }
  }
  return blocks;
}

/**
 * Files the documentation's programs import that are the reader's own (`import { model } from "./model.js"; // yours`),
 * as declarations with their types, for a type check of the blocks beside them.
 */
export const documentationCompanions: Record<string, string> = {
  "model.ts": 'import type { LanguageModel } from "ai";\nexport declare const model: LanguageModel;\n',
  "agents-model.ts": 'import type { Model } from "@openai/agents";\nexport declare const model: Model;\n',
};

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
