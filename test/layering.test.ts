// The layers of src/ (CONTRIBUTING.md, "Layout"): protocol ← wires ← guest ← transcripts, testing, openseek ← cli, and
// protocol ← wires ← host (which starts guest programs by path, never imports them) ← code-tool ← cli, frameworks.
// Every import of every src file is parsed and checked against the layers its folder may use, in the spirit
// of the MCP SDK's layering test: a lower layer importing a higher one fails here, naming the file and line.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const src = resolve(import.meta.dirname, "../src");

/** What each layer may import besides itself. The root files are the package's entry points. */
const allowed: Record<string, readonly string[]> = {
  protocol: [],
  wires: ["protocol"],
  contract: ["protocol"],
  guest: ["protocol", "wires", "contract"],
  // Not guest: the host starts guest programs (the code runner) by path, and never runs guest code itself.
  host: ["protocol", "wires", "contract"],
  transcripts: ["protocol", "wires", "contract", "guest", "host"],
  openseek: ["protocol"],
  testing: ["protocol", "wires", "contract", "guest", "host", "transcripts", "openseek"],
  // The code tool's core: one description, one set of defaults, one result shape, for every adapter of it.
  "code-tool": ["protocol", "wires", "contract", "host"],
  cli: ["protocol", "wires", "contract", "guest", "host", "transcripts", "code-tool"],
  // The framework adapters (@posoco/ears/ai, /openai-agents): code tools over the code-tool core; nothing imports them.
  frameworks: ["protocol", "wires", "contract", "host", "code-tool"],
  "index.ts": ["protocol", "wires", "contract", "guest"],
  // The @posoco/ears/host entry: it re-exports the transcripts' recorder and replay beside the host's own
  // API (recording production runs needs no test kit); no module of the host imports them.
  [join("host", "index.ts")]: ["protocol", "wires", "contract", "transcripts"],
  "schemas.ts": ["protocol"],
};

/** The layer of a path inside src/: its first folder, or the file name for a root file. */
function layerOf(path: string): string {
  return path.split(sep)[0]!;
}

/** Relative module specifiers in `text` with their line numbers: static imports and re-exports, and import(). */
export function importsOf(text: string): { specifier: string; line: number }[] {
  const found: { specifier: string; line: number }[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s*)(["'])(\.{1,2}\/[^"']+)\1/gm;
  for (const match of text.matchAll(pattern)) {
    found.push({ specifier: match[2]!, line: text.slice(0, match.index).split("\n").length });
  }
  return found;
}

/** Every import in `files` (paths relative to src/ and their text) that crosses the layers the wrong way. */
export function layerViolations(files: ReadonlyMap<string, string>): string[] {
  const violations: string[] = [];
  for (const [file, text] of files) {
    const from = layerOf(file);
    const may = allowed[file] ?? allowed[from];
    if (may === undefined) {
      violations.push(`${file}: folder ${from} has no place in the layers (add it to this test and the layout in CONTRIBUTING.md)`);
      continue;
    }
    for (const { specifier, line } of importsOf(text)) {
      const target = relative(src, resolve(src, dirname(file), specifier));
      if (target.startsWith("..")) {
        violations.push(`${file}:${line}: imports ${specifier}, outside src/`);
        continue;
      }
      const to = layerOf(target);
      if (to !== from && !may.includes(to)) violations.push(`${file}:${line}: ${from} imports ${to} (${specifier})`);
    }
  }
  return violations;
}

/** An import cycle through `start` (the files, start first), or undefined: every import counts, type-only ones too. */
export function cycleThrough(files: ReadonlyMap<string, string>, start: string): string[] | undefined {
  const edges = new Map<string, string[]>();
  for (const [file, text] of files) {
    edges.set(
      file,
      importsOf(text).map(({ specifier }) => relative(src, resolve(src, dirname(file), specifier)).replace(/\.js$/, ".ts")),
    );
  }
  // Breadth first from start's imports back to start: the shortest cycle.
  const before = new Map<string, string>([[start, ""]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of edges.get(file) ?? []) {
      if (next === start) {
        const path = [file];
        while (path[0] !== start) path.unshift(before.get(path[0]!)!);
        return path;
      }
      if (!before.has(next)) {
        before.set(next, file);
        queue.push(next);
      }
    }
  }
  return undefined;
}

function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const file of readdirSync(src, { recursive: true, encoding: "utf8" })) {
    if (file.endsWith(".ts")) files.set(file, readFileSync(join(src, file), "utf8"));
  }
  return files;
}

describe("layering of src/", () => {
  it("no layer imports a higher one", () => {
    const files = sourceFiles();
    expect(files.size).toBeGreaterThan(50);
    expect(layerViolations(files)).toEqual([]);
  });

  it("the wires neither build nor read frames: from the frame module they take only the size cap", () => {
    const codecUse: string[] = [];
    for (const [file, text] of sourceFiles()) {
      if (layerOf(file) !== "wires") continue;
      for (const match of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*["']\.\.\/protocol\/frames\.js["']/g)) {
        const names = match[1]!
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name !== "" && name !== "DEFAULT_MAX_FRAME_BYTES");
        if (names.length > 0) codecUse.push(`${file}: ${names.join(", ")}`);
      }
      if (/["']\{"type":/.test(text)) codecUse.push(`${file}: looks at frame text`);
    }
    expect(codecUse).toEqual([]);
  });

  it("only the host entry imports the transcripts from the host, and nothing imports the host entry back (no cycle)", () => {
    const files = sourceFiles();
    const crossing: string[] = [];
    for (const [file, text] of files) {
      for (const { specifier, line } of importsOf(text)) {
        const target = relative(src, resolve(src, dirname(file), specifier));
        if (layerOf(file) === "host" && layerOf(target) === "transcripts" && file !== join("host", "index.ts"))
          crossing.push(`${file}:${line}`);
        if (layerOf(file) === "transcripts" && target === join("host", "index.js")) crossing.push(`${file}:${line}`);
      }
    }
    expect(crossing).toEqual([]);
    const violating = new Map([[join("host", "run-guest.ts"), 'import { recordTo } from "../transcripts/transcript.js";']]);
    expect(layerViolations(violating)).toEqual([
      `${join("host", "run-guest.ts")}:1: host imports transcripts (../transcripts/transcript.js)`,
    ]);
  });

  it("finds the imports of a file: named, type-only, side-effect, re-exports and import()", () => {
    const text = [
      'import { a } from "./a.js";',
      'import type { B } from "../b.js";',
      'import "./side.js";',
      'export { c } from "./c.js";',
      "export * from './d.js';",
      'const e = await import("../e.js");',
      'import { readFileSync } from "node:fs";',
    ].join("\n");
    expect(importsOf(text)).toEqual([
      { specifier: "./a.js", line: 1 },
      { specifier: "../b.js", line: 2 },
      { specifier: "./side.js", line: 3 },
      { specifier: "./c.js", line: 4 },
      { specifier: "./d.js", line: 5 },
      { specifier: "../e.js", line: 6 },
    ]);
  });

  it("fails when a lower layer imports a higher one, naming the file, line and layers", () => {
    const files = sourceFiles();
    const json = join("protocol", "json.ts");
    files.set(json, `${files.get(json)}\nimport type { RunReport } from "../host/types.js";\n`);
    const line = files.get(json)!.split("\n").length - 1;
    expect(layerViolations(files)).toEqual([`${json}:${line}: protocol imports host (../host/types.js)`]);
  });

  it("fails when the host imports the guest runtime (the host starts guest programs by path only)", () => {
    const files = new Map([[join("host", "code", "run-code.ts"), 'import { serve } from "../../guest/serve.js";']]);
    expect(layerViolations(files)).toEqual([`${join("host", "code", "run-code.ts")}:1: host imports guest (../../guest/serve.js)`]);
  });

  it("the host's public types (host/api/) are in no import cycle and import nothing of the engine or the report", () => {
    const files = sourceFiles();
    const api = [...files.keys()].filter((file) => file.startsWith(join("host", "api") + sep));
    expect(api.length).toBeGreaterThan(0);
    for (const file of api) {
      expect(cycleThrough(files, file), file).toBeUndefined();
      for (const { specifier } of importsOf(files.get(file)!)) {
        const target = relative(src, resolve(src, dirname(file), specifier));
        expect(target.startsWith(join("host", "engine")) || target.startsWith(join("host", "report")), `${file}: ${specifier}`).toBe(false);
      }
    }
  });

  it("finds an import cycle, type-only imports included, and none where there is none", () => {
    const files = new Map([
      [join("host", "api", "types.ts"), 'import type { RunAdmission } from "../engine/admission.js";'],
      [join("host", "engine", "admission.ts"), 'import * as failures from "../report/failures.js";'],
      [join("host", "report", "failures.ts"), 'import type { HostFailure } from "../api/types.js";'],
      [join("host", "index.ts"), 'export * from "./api/types.js";'],
    ]);
    expect(cycleThrough(files, join("host", "api", "types.ts"))).toEqual([
      join("host", "api", "types.ts"),
      join("host", "engine", "admission.ts"),
      join("host", "report", "failures.ts"),
    ]);
    expect(cycleThrough(files, join("host", "index.ts"))).toBeUndefined();
  });

  it("fails when the CLI imports the test kit, or a file sits in a folder with no layer", () => {
    const files = new Map([
      [join("cli", "replay-command.ts"), 'import { replay } from "../testing/replay.js";'],
      [join("misc", "helper.ts"), ""],
      [join("wires", "stdio.ts"), 'import { serve } from "../guest/serve.js";\nimport { x } from "../../test/x.js";'],
    ]);
    expect(layerViolations(files)).toEqual([
      `${join("cli", "replay-command.ts")}:1: cli imports testing (../testing/replay.js)`,
      `${join("misc", "helper.ts")}: folder misc has no place in the layers (add it to this test and the layout in CONTRIBUTING.md)`,
      `${join("wires", "stdio.ts")}:1: wires imports guest (../guest/serve.js)`,
      `${join("wires", "stdio.ts")}:2: imports ../../test/x.js, outside src/`,
    ]);
  });
});
