/**
 * Each verdict compileBody gives, word for word, and the stripping worker's life (issue 28, item 1; the
 * survivors of `npm run mutate -- --mutate src/host/code/compile.ts`): positions after non-ASCII text,
 * tabs and U+2028 (JavaScript ends a line there, amaro does not), what V8 alone refuses, a body that closes
 * its function early, and a stripper that fails, traps, exits, hangs or loads slowly (a stand-in for amaro
 * given to a StripWorker of its own). In process: compiling starts no child.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { compileBody, placeInBody, SHORT_TEXT_CHARS, StripWorker, stripWorker } from "../../../src/host/code/compile.js";
import { wrapBody } from "../../../src/protocol/code-body.js";

const TOO_DEEP =
  "code.ts: the code is nested too deeply to compile (brackets, parentheses, blocks or operators inside each other hundreds of " +
  "levels deep); write it flatter: build deep values in a loop, and put parts of long expressions in variables";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("where a syntax error is, in the body's own lines and UTF-16 columns", () => {
  const cases: [string, string][] = [
    ['const s = "中文"; let b = ;', 'code.ts:1:25: Expression expected\n  | const s = "中文"; let b = ;\n  |                         ^'],
    ['const s = "中";\n\tlet b = ;', "code.ts:2:10: Expression expected\n  | \tlet b = ;\n  | \t        ^"],
    // The error is the non-ASCII character itself (the masked copy compiles): the display column walked back.
    ["return 1 + ™;", "code.ts:1:12: Expression expected\n  | return 1 + ™;\n  |            ^"],
    ["const s = '中';\nreturn 1 + ™;", "code.ts:2:12: Expression expected\n  | return 1 + ™;\n  |            ^"],
    ["return '\t中' + ™;", "code.ts:1:15: Expression expected\n  | return '\t中' + ™;\n  |         \t     ^"],
    ['return "😀" + ™;', 'code.ts:1:15: Expression expected\n  | return "😀" + ™;\n  |               ^'],
    // U+2028 and U+2029 end a line in JavaScript (and in bodyLines); amaro counts them as characters of one line.
    ["x\u2028let b = ;", "code.ts:2:9: Expression expected\n  | let b = ;\n  |         ^"],
    ["\u2028\u2028let b = ;", "code.ts:3:9: Expression expected\n  | let b = ;\n  |         ^"],
    ["let s = 1;\u2029\tlet b = ;", "code.ts:2:10: Expression expected\n  | \tlet b = ;\n  | \t        ^"],
    ["x\u2028return 1 + ™;", "code.ts:2:12: Expression expected\n  | return 1 + ™;\n  |            ^"],
    ["a;\r\nb;\u2028中;\r\n let c = ;", "code.ts:4:10: Expression expected\n  |  let c = ;\n  |          ^"],
    // A U+2028 inside a string: the masked copy fails otherwise (an open string), so the walk answers.
    ['let s = "中\u2028"; let b = ;', 'code.ts:2:12: Expression expected\n  | "; let b = ;\n  |            ^'],
  ];
  it.each(cases)("%j", async (body, message) => {
    expect(await compileBody(body)).toEqual({ ok: false, message });
  });

  it("a position before the body's first character is the start of the code, one past its end the end", () => {
    expect(placeInBody("return 1;", 1, -1)).toBe("code.ts (at the start of the code)");
    expect(placeInBody("return 1;", 0, 3)).toBe("code.ts (at the start of the code)");
    expect(placeInBody("return 1;", 1, 9)).toBe("code.ts (at the end of the code)");
    expect(placeInBody("return 1;", 2, 0)).toBe("code.ts (at the end of the code)");
    expect(placeInBody("a\nb", 1, 1)).toBe("code.ts:1:2");
    expect(placeInBody("a\nb", 1, 2)).toBe("code.ts (at the end of the code)");
    expect(placeInBody("a\nb", 2, 0)).toBe("code.ts:2:1");
  });

  it("a line of exactly 100 characters is quoted whole; one of 101 is cut around the column", async () => {
    const exact = `let b = ;${"/".repeat(2)}${"x".repeat(89)}`;
    expect(exact).toHaveLength(100);
    expect(await compileBody(exact)).toEqual({ ok: false, message: `code.ts:1:9: Expression expected\n  | ${exact}\n  |         ^` });
    const longer = `${exact}x`;
    expect(await compileBody(longer)).toEqual({
      ok: false,
      message: `code.ts:1:9: Expression expected\n  | ${longer.slice(0, 100)}…\n  |         ^`,
    });
  });
});

describe("what V8 refuses after the stripper let it through", () => {
  it("a redeclared variable is placed and quoted as a stripper's error is, on the first line and after it", async () => {
    expect(await compileBody("let a = 1;\nlet a = 2;")).toEqual({
      ok: false,
      message: "code.ts:2:5: Identifier 'a' has already been declared\n  | let a = 2;\n  |     ^",
    });
    expect(await compileBody("let a = 1; let a = 2;")).toEqual({
      ok: false,
      message: "code.ts:1:16: Identifier 'a' has already been declared\n  | let a = 1; let a = 2;\n  |                ^",
    });
  });

  it("a body that closes its function and opens another is told it must be one function body", async () => {
    expect(await compileBody("return 1; }); (async () => {")).toEqual({
      ok: false,
      message:
        "code.ts: the code must be the body of one async function, and it closes that function early: it has a `}` (or `})`) " +
        "that closes a bracket the code did not open, with more code after it; remove the extra closing brackets and write " +
        "the code as statements that end with a return (V8: Single function literal required)",
    });
  });
});

describe("compileBody's words for a stripper that did not give JavaScript", () => {
  it("a stripper that cannot start: the code was not compiled, and why", async () => {
    vi.spyOn(stripWorker, "strip").mockResolvedValueOnce({ unavailable: "the type stripper could not start: no amaro" });
    expect(await compileBody("return 1;")).toEqual({
      ok: false,
      message: "code.ts: the code was not compiled: the type stripper could not start: no amaro",
    });
  });

  it("a stripper that overflowed its stack says the code is nested too deeply; any other trap is named", async () => {
    vi.spyOn(stripWorker, "strip").mockResolvedValueOnce({ broken: { name: "RangeError", message: "Maximum call stack size exceeded" } });
    expect(await compileBody("return 1;")).toEqual({ ok: false, message: TOO_DEEP });
    vi.spyOn(stripWorker, "strip").mockResolvedValueOnce({ broken: { name: "RuntimeError", message: "memory access out of bounds" } });
    expect(await compileBody("return 1;")).toEqual({
      ok: false,
      message:
        "code.ts: the type stripper failed on this code (RuntimeError: memory access out of bounds), most likely because it is " +
        TOO_DEEP.slice("code.ts: the code is ".length),
    });
  });

  it("stripped text that changed the wrapper around the body (its length, its start or its end) is refused", async () => {
    const wrapped = wrapBody("return 1;");
    const notABody = { ok: false, message: "code.ts: the code is not a function body (it changes the text around it)" };
    for (const code of [`${wrapped} `, `[${wrapped.slice(1)}`, `${wrapped.slice(0, -1)}]`]) {
      vi.spyOn(stripWorker, "strip").mockResolvedValueOnce({ code });
      expect(await compileBody("return 1;")).toEqual(notABody);
    }
  });
});

describe("the stripping worker, with a stand-in for amaro", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-fake-amaro-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** A fake amaro: answers `text#n`, n counting the texts this worker instance stripped; some texts misbehave. */
  const fake = (name: string, loadMs = 0): string => {
    const file = join(dir, `${name}.cjs`);
    writeFileSync(
      file,
      `"use strict";
const until = Date.now() + ${loadMs};
while (Date.now() < until);
let stripped = 0;
exports.transformSync = (text) => {
  stripped++;
  if (text.startsWith("hang")) for (;;);
  // Held until the test opens the gate (a file beside this one): the worker is busy with it until then.
  if (text.startsWith("hold")) {
    const cell = new Int32Array(new SharedArrayBuffer(4));
    while (!require("node:fs").existsSync(__filename + ".gate")) Atomics.wait(cell, 0, 0, 10);
  }
  if (text === "exit") process.exit(3);
  if (text === "trap") throw new TypeError("wasm trapped");
  if (text === "position") throw Object.assign(new Error("Expression expected"), { startLine: 2, startColumn: 7 });
  if (text === "escape") throw { get startLine() { throw new URIError("escaped the handler"); } };
  return { code: text + "#" + stripped };
};
`,
    );
    return file;
  };

  it("keeps one warm worker between texts, and passes a positioned error through", async () => {
    const worker = new StripWorker(() => fake("warm"));
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
    expect(await worker.strip("b")).toEqual({ code: "b#2" });
    expect(await worker.strip("position")).toEqual({ error: { message: "Expression expected", startLine: 2, startColumn: 7 } });
    expect(await worker.strip("c")).toEqual({ code: "c#4" });
  });

  it("a text that traps, exits the worker or escapes its handler fails alone: the next text gets a fresh worker", async () => {
    const worker = new StripWorker(() => fake("failing"));
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
    expect(await worker.strip("trap")).toEqual({ broken: { name: "TypeError", message: "wasm trapped" } });
    expect(await worker.strip("b")).toEqual({ code: "b#1" });
    expect(await worker.strip("exit")).toEqual({ broken: { name: "Error", message: "the type stripper's worker exited with code 3" } });
    expect(await worker.strip("c")).toEqual({ code: "c#1" });
    expect(await worker.strip("escape")).toEqual({ broken: { name: "URIError", message: expect.stringContaining("escaped the handler") } });
    expect(await worker.strip("d")).toEqual({ code: "d#1" });
  });

  it("a text past the deadline is answered slow and its worker ended: the text after it is stripped by a fresh one", async () => {
    const worker = new StripWorker(() => fake("hanging"));
    worker.deadlineMs = 300;
    expect(await worker.strip("hang")).toEqual({ slow: true });
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
  });

  it("the deadline counts from the moment amaro is loaded: a slow load is not the body's time", async () => {
    const worker = new StripWorker(() => fake("slow-load", 1500));
    worker.deadlineMs = 500;
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
  });

  it("a short text is stripped while long ones hold every worker that takes them: it never waits behind them", async () => {
    const stripper = fake("gated");
    const worker = new StripWorker(() => stripper);
    worker.deadlineMs = 120_000;
    const long = (n: number) => `hold${n}${" ".repeat(SHORT_TEXT_CHARS)}`;
    const settled: number[] = [];
    const held = [1, 2, 3, 4].map((n) => worker.strip(long(n)).finally(() => settled.push(n)));
    // The gate is shut: no long text can finish before the short one is answered.
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
    expect(await worker.strip("b")).toEqual({ code: "b#2" });
    expect(settled).toEqual([]);
    writeFileSync(`${stripper}.gate`, "");
    const results = await Promise.all(held);
    expect(results.map((result) => ("code" in result ? result.code.slice(0, 5) : result))).toEqual(["hold1", "hold2", "hold3", "hold4"]);
  });

  it("a long text past the deadline fails alone, in every worker at once; a short one is answered, then a long one", async () => {
    const worker = new StripWorker(() => fake("hanging-long"));
    worker.deadlineMs = 300;
    const long = (name: string) => `${name}${" ".repeat(SHORT_TEXT_CHARS)}`;
    const hung = [worker.strip(long("hang1")), worker.strip(long("hang2")), worker.strip(long("hang3"))];
    expect(await worker.strip("a")).toEqual({ code: "a#1" });
    expect(await Promise.all(hung)).toEqual([{ slow: true }, { slow: true }, { slow: true }]);
    expect(await worker.strip(long("next"))).toEqual({ code: `${long("next")}#1` });
  });

  it("many texts through one worker leave no listeners behind (no MaxListenersExceededWarning)", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const worker = new StripWorker(() => fake("many"));
      for (let n = 1; n <= 15; n++) expect(await worker.strip("t")).toEqual({ code: `t#${n}` });
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  });
});
