/**
 * Hostile bodies against type stripping (issue 28, item 1): no body throws out of runCode, poisons the
 * stripper for the bodies after it, or holds the host's thread; a body has a size bound. Before the fix,
 * 100,000 nested parentheses made runCode throw RangeError, and every runCode after it failed with
 * "memory access out of bounds"; 10 KB of `-` signs held the host's thread for 15 s.
 */
import { afterEach, describe, expect, it } from "vitest";
import { compileBody, DEFAULT_MAX_CODE_BYTES, STRIP_DEADLINE_MS, StripWorker, stripWorker } from "../../../src/host/code/compile.js";
import { runCode } from "../../../src/host/index.js";

/** Shapes that overflow the stripper's stack or trap its WebAssembly, each well under the size bound. */
const DEEP: Record<string, string> = {
  parentheses: `return ${"(".repeat(100_000)}1${")".repeat(100_000)};`,
  arrays: `return ${"[".repeat(50_000)}${"]".repeat(50_000)};`,
  objects: `return ${"{a:".repeat(20_000)}1${"}".repeat(20_000)};`,
  blocks: `${"{".repeat(50_000)}${"}".repeat(50_000)}`,
  calls: `return f${"(".repeat(50_000)}${")".repeat(50_000)};`,
  templates: `return ${"`${".repeat(20_000)}1${"}`".repeat(20_000)};`,
  arrows: `return ${"() => ".repeat(20_000)}1;`,
  "type parentheses": `let x: ${"(".repeat(50_000)}number${")".repeat(50_000)} = 1;`,
  "generic types": `let x: ${"Array<".repeat(20_000)}number${">".repeat(20_000)} = [];`,
  negations: `return ${"!".repeat(50_000)}1;`,
  "binary chain": `return 1${"+1".repeat(50_000)};`,
};

afterEach(() => {
  stripWorker.deadlineMs = STRIP_DEADLINE_MS;
});

describe("hostile bodies against type stripping", () => {
  it("100,000 nested parentheses are a CompileError report, and a normal body right after runs; again and again", async () => {
    for (let round = 0; round < 3; round++) {
      const refused = await runCode({ code: DEEP.parentheses!, sandbox: false });
      expect(refused.failure?.code).toBe("CompileError");
      expect(refused.failure?.message).toContain("nested too deeply to compile");
      expect(refused.failure?.message).toContain("write it flatter");
      const normal = await runCode({ code: "const n: number = 20;\nreturn n + 1;", sandbox: false });
      expect(normal.failure).toBeUndefined();
      expect(normal.outcome).toMatchObject({ status: "success", structured: 21 });
    }
  });

  it.each(Object.entries(DEEP))("%s nested past the stripper's stack: refused, and the next body compiles", async (_, body) => {
    const refused = await compileBody(body);
    expect(refused.ok).toBe(false);
    expect((refused as { message: string }).message).toMatch(
      /^code\.ts: (the code is nested too deeply|the type stripper failed on this code \(.*\), most likely because it is nested too)/,
    );
    expect(await compileBody("let a: number = 1;\nreturn a;")).toEqual({ ok: true, javascript: "let a         = 1;\nreturn a;" });
  });

  it("a body the stripper is slow on is refused at the deadline, without holding the host's thread, and the next compiles", async () => {
    stripWorker.deadlineMs = 300;
    // amaro is quadratic on runs of `-`: 10,000 took 15 s.
    let settled = false;
    const compiling = compileBody(`return ${"-".repeat(10_000)}1;`).finally(() => (settled = true));
    let ticks = 0;
    while (!settled) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      ticks++;
    }
    expect(ticks).toBeGreaterThan(1);
    expect(await compiling).toEqual({
      ok: false,
      message:
        "code.ts: the code took more than 0.3 s to compile (long runs of operators or nesting make it slow); write it simpler: " +
        "put parts of long expressions in variables, and build repetitive values in a loop",
    });
    expect(await compileBody("return 2;")).toEqual({ ok: true, javascript: "return 2;" });
  });

  it("compiles waiting their turn behind a hostile one all get their own verdict", async () => {
    const results = await Promise.all([
      compileBody(DEEP.parentheses!),
      compileBody("return 1;"),
      compileBody(DEEP.negations!),
      compileBody("return 2;"),
    ]);
    expect(results.map((result) => result.ok)).toEqual([false, true, false, true]);
  });

  it("a body over maxCodeBytes (UTF-8 bytes, default 256 KiB) is refused before it is compiled, saying what to do", async () => {
    const at = `return "${"a".repeat(DEFAULT_MAX_CODE_BYTES - 10)}";`;
    expect(Buffer.byteLength(at)).toBe(DEFAULT_MAX_CODE_BYTES);
    expect((await compileBody(at)).ok).toBe(true);
    const over = `return "${"中".repeat(100)}";`; // 300 bytes in 100 characters
    expect(await compileBody(over, 200)).toEqual({
      ok: false,
      message:
        "code.ts: the code is 310 bytes, more than the 200 a body may have (maxCodeBytes); write a shorter body: take data from " +
        "input or from ears.call instead of writing it into the code, and return less",
    });
    const report = await runCode({ code: `${at} `, sandbox: false });
    expect(report.failure).toEqual({
      code: "CompileError",
      message: expect.stringContaining(`the code was not run: code.ts: the code is ${DEFAULT_MAX_CODE_BYTES + 1} bytes, more than the`),
    });
  });

  it("a stripper that cannot start says so, each time, and is not blamed on the body", async () => {
    const broken = new StripWorker(() => "/nonexistent/amaro/dist/index.js");
    for (let round = 0; round < 2; round++) {
      const result = await broken.strip("let a = 1;");
      expect(result).toEqual({ unavailable: expect.stringMatching(/^the type stripper could not start: .*nonexistent/) });
    }
  });

  it("a host that is an ES module with its own flags compiles as any other (the worker takes none of them)", async () => {
    const { execFile } = await import("node:child_process");
    const script =
      'import { runCode } from "@posoco/ears/host";\n' +
      'const report = await runCode({ code: "const n: number = 1;\\nreturn n;", sandbox: false });\n' +
      "console.log(JSON.stringify(report.outcome?.structured ?? report.failure));";
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ["--input-type=module", "-e", script], (error, out) => (error ? reject(error) : resolve(out))),
    );
    expect(stdout).toBe("1\n");
  });

  it("runCode refuses a maxCodeBytes that is not a positive integer", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, "1000"]) {
      expect(() => runCode({ code: "return 1;", maxCodeBytes: bad as number })).toThrow(
        new RangeError(`runCode: options.maxCodeBytes must be a positive integer (bytes), got ${String(bad)}`),
      );
    }
  });
});
