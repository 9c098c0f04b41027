/**
 * Where a CompileError points (issue 17, "positions inside the code"; issue 22, item 7): every
 * `code.ts:LINE:COLUMN` names a character of the submitted body, whatever fragments of the wrapper's own
 * syntax (closing braces, open comments and strings) the body holds; a syntax error quotes its line with a
 * caret; `import` and `require` are told the way in. In process: compiling starts no child.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileBody } from "../../../src/host/code/compile.js";
import { runCode } from "../../../src/host/index.js";

/** The character offset of a 1-based line and column in `body`, counting line ends as JavaScript does. */
function offsetOf(body: string, line: number, column: number): number {
  const ends = [...body.matchAll(/\r\n|[\n\r\u2028\u2029]/g)];
  if (line === 1) return column - 1;
  const end = ends[line - 2];
  return end === undefined ? Number.POSITIVE_INFINITY : end.index + end[0].length + column - 1;
}

/** Every `code.ts:L:C` in a message, as numbers. */
function positions(message: string): { line: number; column: number }[] {
  return [...message.matchAll(/code\.ts:(\d+):(\d+)/g)].map(([, line, column]) => ({ line: Number(line), column: Number(column) }));
}

// Pieces of the text around a body: what closes the async arrow or opens what swallows its end.
const fragment = fc.constantFrom(
  "return 1",
  "}",
  "})",
  "})(",
  "{",
  "/*",
  "*/",
  "/* */",
  "//",
  "`",
  "'",
  '"',
  "(",
  ")",
  ";",
  " ",
  "\n",
  "\r\n",
  "\u2028",
  "let a = ",
  "const x: number = 1",
  "=>",
  "async () => {",
  "中",
  "\t",
);

describe("CompileError positions", () => {
  it("the issue's body `return 1 /* */ }) /*` is refused at the end of the code, not at a line it does not have", async () => {
    const compiled = await compileBody("return 1 /* */ }) /*");
    expect(compiled).toEqual({ ok: false, message: "code.ts (at the end of the code): Unterminated block comment" });
  });

  it("a stray closing brace is refused at the end of the code", async () => {
    expect(await compileBody("return 1 }\n//")).toEqual({ ok: false, message: "code.ts (at the end of the code): Expected ',', got '}'" });
  });

  it("every code.ts:LINE:COLUMN names a character of the body, for bodies built from wrapper-closing fragments (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fragment, { maxLength: 8 }), async (pieces) => {
        const body = pieces.join("");
        const compiled = await compileBody(body);
        if (compiled.ok) return;
        for (const { line, column } of positions(compiled.message)) {
          expect(column, compiled.message).toBeGreaterThanOrEqual(1);
          expect(offsetOf(body, line, column), compiled.message).toBeLessThan(body.length);
        }
      }),
      { seed: 1722, numRuns: 400 },
    );
  });

  it("quotes the offending line with a caret under the column, tabs kept so it lines up", async () => {
    expect(await compileBody("const a = 1;\n\tlet b = ;")).toEqual({
      ok: false,
      message: "code.ts:2:10: Expression expected\n  | \tlet b = ;\n  | \t        ^",
    });
  });

  it("cuts a long line around the column, the caret still under it", async () => {
    const body = `const s = "${"a".repeat(300)}"; let b = ;`;
    const compiled = await compileBody(body);
    expect(compiled.ok).toBe(false);
    const [head, shown, caret] = (compiled as { message: string }).message.split("\n");
    expect(head).toBe(`code.ts:1:${body.indexOf(";", 320) + 1}: Expression expected`);
    expect(shown!.startsWith("  | …")).toBe(true);
    expect(shown!.length).toBeLessThan(120);
    expect(shown![caret!.indexOf("^")]).toBe(";");
  });

  it("tells a body that imports how to reach Node's built-ins instead", async () => {
    const compiled = await compileBody('import { readFileSync } from "node:fs";\nreturn 1;');
    expect(compiled.ok).toBe(false);
    expect((compiled as { message: string }).message).toContain(
      "code.ts:1:1: 'import', and 'export' cannot be used outside of module code: a code body cannot import or require modules; " +
        'use Node\'s built-ins through process.getBuiltinModule("node:fs")',
    );
  });

  it("tells a body that calls require or import() the same, at run time (a real child)", async () => {
    const required = await runCode({ code: 'const fs = require("node:fs");\nreturn 1;', sandbox: false });
    expect(required.outcome?.status).toBe("failure");
    expect(required.outcome?.content).toMatch(/^require is not defined \(at code\.ts:1:12\): .*process\.getBuiltinModule\("node:fs"\)/);
    const imported = await runCode({ code: 'const fs = await import("node:fs");\nreturn 1;', sandbox: false });
    expect(imported.outcome?.content).toMatch(/\(at code\.ts:1:12\): .*process\.getBuiltinModule\("node:fs"\)/);
    const builtin = await runCode({ code: 'return typeof process.getBuiltinModule("node:fs").readFileSync;', sandbox: false });
    expect(builtin.outcome?.structured).toBe("function");
  });
});
