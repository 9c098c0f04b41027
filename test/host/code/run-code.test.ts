/**
 * runCode (issue 12): code bodies in TypeScript and JavaScript run as real sandboxed guests; errors are
 * reported at the body's own line:column; a body that does not compile starts no process.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapabilities, Outcome } from "../../../src/index.js";
import { HostFailureCode, runCode, type LogEntry } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

const tools = defineCapabilities({
  read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string() }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const capabilities = tools.implement({ read: ({ path }) => `contents of ${path}`, add: ({ a, b }) => ({ sum: a + b }) });

describe("runCode", () => {
  it("runs the issue's TypeScript body: calls a typed capability and returns a value", async () => {
    const report = await runCode({
      code:
        'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\n' +
        "return (r.structured as { sum: number }).sum * 2;",
      capabilities,
    });
    expect(report.failure).toBeUndefined();
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toBe(6);
    expect(report.calls.map((call) => call.name)).toEqual(["add"]);
  });

  it("runs a JavaScript body that logs (ears.log and console) and sees its input", async () => {
    const logs: LogEntry[] = [];
    const report = await runCode({
      code:
        'await ears.log("from ears", "warn");\nconsole.log("from console", input.n);\n' +
        'const text = await ears.call("read", { path: input.path });\nreturn { text: text.content };',
      input: { n: 7, path: "a.txt" },
      capabilities,
      onLog: (log) => logs.push(log),
    });
    expect(report.outcome).toEqual({ status: "success", content: "", structured: { text: "contents of a.txt" } });
    expect(logs.map(({ level, content }) => [level, content])).toEqual([
      ["warn", "from ears"],
      ["info", "from console 7"],
    ]);
  });

  it("returns an Outcome as it is: one from a call and one made with Outcome in scope", async () => {
    const denied = await runCode({ code: 'return await ears.call("read", { path: 1 });', capabilities });
    expect(denied.outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
    const made = await runCode({ code: 'return Outcome.failure("NotFound", "no such file");' });
    expect(made.ok).toBe(false);
    expect(made.outcome).toEqual({ status: "failure", code: "NotFound", content: "no such file" });
    const none = await runCode({ code: "const unused: string = 'x';" });
    expect(none.outcome).toEqual({ status: "success", content: "" });
  });

  it("refuses a return value JSON would alter, as serve does", async () => {
    const report = await runCode({ code: "return new Map();" });
    expect(report.outcome).toMatchObject({ status: "failure", code: "GuestFailed" });
  });

  it("names a runtime error's place in the body as code.ts:LINE:COLUMN, in the result and in the logged stack", async () => {
    const code = "const s: string = 'x';\nlet n = 1;\n   (null as any).boom;\n";
    const report = await runCode({ code });
    expect(report.outcome).toEqual({
      status: "failure",
      code: "GuestFailed",
      content: "Cannot read properties of null (reading 'boom') (at code.ts:3:18)",
    });
    expect(report.logs.find((log) => log.level === "error")?.content).toContain("at code.ts:3:18");
    const thrown = await runCode({ code: 'throw new Error("first line")' });
    expect(thrown.outcome?.content).toBe("first line (at code.ts:1:7)");
  });

  it("keeps every line:column of a thrown error the body's own, types or not (fast-check)", async () => {
    // A throw after some typed lines and a typed prefix on its own line: the reported place is where `throw` stands.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("let a: number = 1;", "const b = 2 as number;", "type T = { x: string };", "", "// c"), { maxLength: 4 }),
        fc.nat(6),
        fc.boolean(),
        async (lines, indent, typed) => {
          const prefix = typed ? "const v: string = 'q'; " : "";
          const body = [...lines, `${" ".repeat(indent)}${prefix}throw new Error("x");`].join("\n");
          const report = await runCode({ code: body, sandbox: false });
          expect(report.outcome?.content).toBe(`x (at code.ts:${lines.length + 1}:${indent + prefix.length + 7})`);
        },
      ),
      { seed: 12, numRuns: 6 },
    );
  });

  it("fails a syntax error as CompileError at the body's line:column, before any process starts", async () => {
    const report = await runCode({ code: "const a: number = 1;\nlet b = ;" });
    expect(report.ok).toBe(false);
    expect(report.failure).toEqual({
      code: HostFailureCode.CompileError,
      message: "the code was not run: code.ts:2:9: Expression expected\n  | let b = ;\n  |         ^",
    });
    expect(report.pid).toBeUndefined();
    const first = await runCode({ code: "return 1 2;" });
    expect(first.failure?.message).toBe(
      "the code was not run: code.ts:1:10: Expected ';', got 'numeric literal'\n  | return 1 2;\n  |          ^",
    );
  });

  const columnsInUtf16Units =
    "counts a syntax error's column in UTF-16 units, as the stack and editors do, whatever the script before it (fast-check)";
  it(columnsInUtf16Units, async () => {
    const piece = fc.constantFrom("a", " ", "é", "中", "😀", "e\u0301", "\u200b", "🇫🇷", "ß", "\t", "ab", "ｱ");
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { maxLength: 6 }), fc.nat(2), fc.boolean(), async (pieces, lineIndex, typed) => {
        const text = pieces.join("");
        const lead = `${typed ? 'const t: string = "' : 'const t = "'}${text}"; `;
        // One error amaro's parser finds, one only V8 finds (a redeclared let).
        const parser = [...Array.from({ length: lineIndex }, (_, i) => `let ok${i} = 1;`), `${lead}let b = ;`];
        const v8 = [...Array.from({ length: lineIndex }, (_, i) => `let ok${i} = 1;`), `${lead}let t = 2;`];
        const [parsed, compiled] = await Promise.all([runCode({ code: parser.join("\n") }), runCode({ code: v8.join("\r\n") })]);
        expect(parsed.failure?.message.split("\n")[0]).toBe(
          `the code was not run: code.ts:${lineIndex + 1}:${lead.length + 9}: Expression expected`,
        );
        expect(compiled.failure?.message.split("\n")[0]).toBe(
          `the code was not run: code.ts:${lineIndex + 1}:${lead.length + 5}: Identifier 't' has already been declared`,
        );
      }),
      { seed: 44, numRuns: 80 },
    );
  });

  it("fails what only V8 refuses (a redeclared let) with its position, and a body that closes its function early", async () => {
    const redeclared = await runCode({ code: "let a = 1;\n  let a = 2;" });
    expect(redeclared.failure).toEqual({
      code: "CompileError",
      message: "the code was not run: code.ts:2:7: Identifier 'a' has already been declared\n  |   let a = 2;\n  |       ^",
    });
    const escaped = await runCode({ code: '}); console.log("outside"); (async () => {' });
    expect(escaped.failure?.code).toBe("CompileError");
    expect(escaped.pid).toBeUndefined();
  });

  it("refuses TypeScript that needs more than stripping (enum) with the stripper's reason", async () => {
    const report = await runCode({ code: "\nenum E { A }\nreturn E.A;" });
    expect(report.failure?.code).toBe("CompileError");
    expect(report.failure?.message).toMatch(/^the code was not run: code\.ts:2:1: .*enum/);
  });

  it("throws synchronously for bad options, as runGuest does", () => {
    expect(() => runCode({ code: 1 as unknown as string })).toThrow(TypeError);
    expect(() => runCode({ code: "", limits: { runTimeoutMs: -1 } })).toThrow(/runCode/);
    expect(() => runCode({ code: "", sandbox: "maybe" as never })).toThrow(/runCode: options.sandbox/);
    expect(() => runCode({ code: "", onStderr: "log" as never })).toThrow(/runCode: options.onStderr must be a function/);
    expect(() => runCode({ code: "", command: "node" } as never)).toThrow(/command and options.args are runGuest's/);
    expect(() => runCode({ code: "", typecheck: true, contract: { specs: {} } as never })).toThrow(/options.contract must be a contract/);
    expect(() => runCode({ code: "", typecheck: true, inputSchema: z.string() })).toThrow(/needs options.contract/);
    const noJsonSchema = defineCapabilities({
      odd: { arguments: { "~standard": { version: 1, vendor: "custom", validate: (value: unknown) => ({ value }) } } },
    });
    expect(() => runCode({ code: "", typecheck: true, contract: noJsonSchema })).toThrow(
      /"odd"\.arguments is a custom schema without Standard JSON Schema/,
    );
  });

  describe.runIf(process.platform === "linux")("sandboxed by default", () => {
    let secretDir: string;
    beforeAll(() => {
      secretDir = mkdtempSync(join(tmpdir(), "ears-code-secret-"));
      writeFileSync(join(secretDir, "secret.txt"), "s3cret");
    });
    afterAll(() => rmSync(secretDir, { recursive: true, force: true }));

    const readSecret = (path: string) => `const fs = process.getBuiltinModule?.("node:fs");
try { return { read: (fs ?? (await ears.call("never", {}))).readFileSync(${JSON.stringify(path)}, "utf8") }; }
catch (error) { return { refused: String((error as Error).message) }; }`;

    it("cannot read a file outside its paths; the same body unconfined can, so the test can fail", async () => {
      // process.getBuiltinModule is Node >= 20.16; the body has no import().
      const secret = join(secretDir, "secret.txt");
      const confined = await runCode({ code: readSecret(secret) });
      expect(confined.sandbox?.mechanism).toBe("bubblewrap");
      expect(confined.outcome?.structured).toMatchObject({ refused: expect.stringContaining("ENOENT") });
      const open = await runCode({ code: readSecret(secret), sandbox: false });
      expect(open.outcome?.structured).toEqual({ read: "s3cret" });
    });

    it("gets its body in a frame, not a file, works in a private empty writable directory, and it is gone after the run", async () => {
      const report = await runCode({
        code:
          'const fs = process.getBuiltinModule("node:fs");\nconst cwd = process.cwd();\nconst entries = fs.readdirSync(cwd);\n' +
          'fs.writeFileSync("note.txt", "mine");\n' +
          'return { cwd, entries, args: process.argv.slice(2), wrote: fs.readFileSync("note.txt", "utf8") };',
      });
      const { cwd, entries, args, wrote } = report.outcome?.structured as { cwd: string; entries: string[]; args: string[]; wrote: string };
      expect({ entries, args, wrote }).toEqual({ entries: [], args: [], wrote: "mine" });
      expect(report.sandbox?.writable).toContain(cwd);
      expect(report.sandbox?.readable.some((path) => path.includes("ears-code-"))).toBe(false);
      const fs = await import("node:fs");
      expect(fs.existsSync(join(cwd, ".."))).toBe(false);
    });
  });

  it("removes the temporary directory after an unconfined run too, whatever the body did", async () => {
    const report = await runCode({ code: "return process.cwd();", sandbox: false });
    const fs = await import("node:fs");
    expect(typeof report.outcome?.structured).toBe("string");
    expect(fs.existsSync(report.outcome?.structured as string)).toBe(false);
  });

  it("delivers a body larger than one argument or variable may be (128 KiB on Linux), sandboxed", async () => {
    const filler = "x".repeat(1024 * 1024);
    // Past the default maxCodeBytes (256 KiB), which a host may raise.
    const report = await runCode({ code: `// ${filler}\nconst s: string = "${filler}";\nreturn s.length;`, maxCodeBytes: 3 * 1024 * 1024 });
    expect(report.outcome?.structured).toBe(1024 * 1024);
  });

  it("runs bodies side by side, each with its own directory, input and result, and leaves no directory behind", async () => {
    const fs = await import("node:fs");
    const reports = await Promise.all(
      Array.from({ length: 6 }, (_, n) =>
        runCode({ code: "await new Promise((r) => setTimeout(r, 20));\nreturn { n: input, file: process.cwd() };", input: n }),
      ),
    );
    const results = reports.map((report) => report.outcome?.structured as { n: number; file: string });
    expect(results.map((result) => result.n)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(results.map((result) => result.file)).size).toBe(6);
    // A run reported at its result removes its directory while its runner is being killed (run-guest.ts,
    // removeScratch): gone soon after, not necessarily by the time runCode resolves on a loaded CPU.
    const left = () => results.filter((result) => fs.existsSync(join(result.file, "..")));
    for (const until = Date.now() + 60_000; left().length > 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 20));
    expect(left()).toEqual([]);
  });

  it("ends its runner with the result: a timer the body left running does not keep it alive until it is stopped", async () => {
    const report = await runCode({ code: "setInterval(() => {}, 1000);\nreturn 'left a timer';", sandbox: false, killGraceMs: 200 });
    // Ended at its result, which is not a forced stop: by the host (SIGKILL: it has nothing to clean up), or by
    // itself first (the runner exits once its session is over, whatever the body left): which comes first is the
    // scheduler's (on Node 22 and 24 the runner's own exit often does).
    expect(report).toMatchObject({ ok: true, outcome: { structured: "left a timer" } });
    expect([
      { code: null, signal: "SIGKILL" },
      { code: 0, signal: null },
    ]).toContainEqual(report.exit);
    expect(report.forcedStop).toBeUndefined();
  });

  it("uses Outcome.isError from scope to narrow", async () => {
    const report = await runCode({
      code: 'const r = await ears.call("nope", {});\nif (Outcome.isError(r)) return r.code;\nreturn "no";',
      capabilities,
    });
    expect(report.outcome?.structured).toBe("CapabilityDenied");
    expect(Outcome.isError(report.outcome!)).toBe(false);
  });

  describe("typecheck: true", () => {
    it("fails a wrong argument type as CompileError at the body's line:column, and starts no process", async () => {
      const report = await runCode({
        code: 'const n: number = 1;\nawait ears.call("read", { path: n });',
        capabilities,
        contract: tools,
        typecheck: true,
      });
      expect(report.failure?.code).toBe("CompileError");
      expect(report.failure?.message).toMatch(
        /^the code was not run: type errors: code\.ts:2:27: Type 'number' is not assignable to type 'string'\. \(TS2322\)$/,
      );
      expect(report.pid).toBeUndefined();
      // Without typecheck the same body runs, and the host's contract check answers InvalidArguments.
      const unchecked = await runCode({
        code: 'const n: number = 1;\nreturn await ears.call("read", { path: n });',
        capabilities,
        sandbox: false,
      });
      expect(unchecked.outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
    });

    it("counts columns on the first line from the body's own start, and checks input against its schema", async () => {
      const report = await runCode({
        code: "return input.nope;",
        contract: tools,
        inputSchema: z.object({ path: z.string() }),
        input: { path: "p" },
        typecheck: true,
        capabilities,
      });
      expect(report.failure?.message).toMatch(/code\.ts:1:14: Property 'nope' does not exist/);
    });

    it("with allowed, a call to a capability the run would refuse is a type error; an allowed one checks", async () => {
      const refused = await runCode({
        code: 'const r = await ears.call("add", { a: 1, b: 2 });\nreturn r.status;',
        capabilities,
        contract: tools,
        allowed: ["read"],
        typecheck: true,
      });
      expect(refused.failure?.code).toBe("CompileError");
      expect(refused.failure?.message).toMatch(/code\.ts:1:27: Argument of type '"add"' is not assignable to parameter of type '"read"'/);
      const allowed = await runCode({
        code: 'const r = await ears.call("read", { path: "a" });\nreturn r.content;',
        capabilities,
        contract: tools,
        allowed: ["read", "not-in-the-contract"],
        typecheck: true,
        sandbox: false,
      });
      expect(allowed.outcome?.structured).toBe("contents of a");
    });

    it("runs a body that type-checks", async () => {
      const report = await runCode({
        code: 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;',
        capabilities,
        contract: tools,
        typecheck: true,
      });
      expect(report.outcome?.structured).toBe(6);
    });

    it("an abort while tsc runs stops it and reports Aborted, not a type error; nothing is started", async () => {
      const controller = new AbortController();
      // The checker is warm by now and answers within milliseconds: abort as soon as the check is asked for.
      const running = runCode({ code: "return 1;", typecheck: true, signal: controller.signal });
      controller.abort(new Error("user stop"));
      const report = await running;
      expect(report.failure?.code).toBe("Aborted");
      expect(report.pid).toBeUndefined();
    });

    it("without a contract, checks against the loose ears (any name, JSON arguments)", async () => {
      const ok = await runCode({
        code: 'const r = await ears.call("anything", { x: 1 });\nreturn r.status;',
        typecheck: true,
        sandbox: false,
      });
      expect(ok.failure).toBeUndefined();
      const bad = await runCode({ code: 'await ears.call("anything", { f: () => 1 });', typecheck: true });
      expect(bad.failure?.code).toBe("CompileError");
    });
  });
});

for (const sandbox of [false, true] as const) {
  describe.runIf(process.platform === "linux")(`runCode under a host that is SIGKILLed (${sandbox ? "sandboxed" : "unconfined"})`, () => {
    it("leaves no ears-code-* directory behind: the watchdog removes it within 5 s", async () => {
      const scratch = mkdtempSync(join(tmpdir(), "ears-killed-host-"));
      try {
        const root = fileURLToPath(new URL("../../../", import.meta.url));
        const host = spawn(process.execPath, [`${root}fixtures/hostile/code-host.mjs`, sandbox ? "sandbox" : "unconfined"], {
          cwd: root,
          env: { ...process.env, TMPDIR: scratch },
          stdio: ["ignore", "pipe", "inherit"],
        });
        const exited = new Promise((resolve) => host.on("exit", resolve));
        await new Promise<void>((resolve, reject) => {
          host.stdout.setEncoding("utf8").on("data", (text: string) => text.includes("ready") && resolve());
          host.on("exit", (code, signal) => reject(new Error(`the host ended before the body ran (${code ?? signal})`)));
        });
        const left = () => readdirSync(scratch).filter((name) => name.startsWith("ears-code-"));
        expect(left()).toHaveLength(1); // the body's directory, while the body runs
        host.kill("SIGKILL");
        await exited;
        for (let waited = 0; waited < 5000 && left().length > 0; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(left(), "directories left 5 s after the host was killed").toEqual([]);
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    });
  });
}
