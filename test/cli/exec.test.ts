/**
 * `ears exec` (issue 12), spawned as a real process: a code body with every `ears run` option, the same
 * output and exit statuses, and 2 for a body that does not compile.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ears } from "../helpers/spawn-ears.js";

describe("ears exec", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-exec-"));
    writeFileSync(join(dir, "notes.txt"), "hello notes");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs a TypeScript --code body with --allow and --input: prints the result, streams logs, exits 0", async () => {
    const run = await ears(
      [
        "exec",
        "--allow",
        "read",
        "--input",
        '{"path":"notes.txt"}',
        "--code",
        'const r = await ears.call("read", { path: input.path as string });\nif (r.status === "failure") return r;\n' +
          'console.log("read it");\nreturn { length: r.content.length };',
      ],
      { cwd: dir },
    );
    expect(run.stderr).toContain("[info] read it");
    expect(JSON.parse(run.stdout)).toEqual({ length: 11 });
    expect(run.code).toBe(0);
  });

  it("reads --code-file (a byte order mark does not shift the first line) and prints --json", async () => {
    writeFileSync(join(dir, "body.ts"), "\uFEFFconst n: number = 2; null!.x;");
    const run = await ears(["exec", "--code-file", "body.ts", "--json", "--no-sandbox"], { cwd: dir });
    const report = JSON.parse(run.stdout);
    expect(report.outcome).toEqual({
      status: "failure",
      code: "GuestFailed",
      content: "Cannot read properties of null (reading 'x') (at code.ts:1:28)",
    });
    expect(report.logs[0].content).toBe("TypeError: Cannot read properties of null (reading 'x')\n    at code.ts:1:28");
    expect(run.code).toBe(1);
  });

  it("exits 2 with CompileError naming line:column for a body that does not compile", async () => {
    const run = await ears(["exec", "--code", "const a = 1;\nconst b: = 2;"], { cwd: dir });
    expect(run.stderr).toContain("ears: the session failed: CompileError: the code was not run: code.ts:2:10:");
    // The line is quoted under the note, with a caret under the column, as the message has it.
    expect(run.stderr).toContain("\nears:   | const b: = 2;\nears:   |          ^\n");
    expect(run.stdout).toBe("");
    expect(run.code).toBe(2);
  });

  it("--typecheck fails a type error as CompileError (exit 2); without it the body runs", async () => {
    const body = "const n: number = 'text';\nreturn n;";
    const checked = await ears(["exec", "--typecheck", "--code", body], { cwd: dir });
    expect(checked.stderr).toContain("code.ts:1:7: Type 'string' is not assignable to type 'number'.");
    expect(checked.code).toBe(2);
    const unchecked = await ears(["exec", "--code", body], { cwd: dir });
    expect(JSON.parse(unchecked.stdout)).toBe("text");
    expect(unchecked.code).toBe(0);
  });

  it("--record writes the transcript and --timeout stops a body that never returns (exit 2, naming --timeout)", async () => {
    const record = join(dir, "run.ndjson");
    const run = await ears(
      ["exec", "--timeout", "1", "--record", record, "--code", "await new Promise(() => setInterval(() => {}, 1000));"],
      { cwd: dir },
    );
    expect(run.stderr).toMatch(/RunTimeout.*--timeout/);
    expect(run.code).toBe(2);
    const entries = readFileSync(record, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { frame?: { type: string }; report?: { failure?: { code: string } } });
    const frames = entries.flatMap((entry) => (entry.frame === undefined ? [] : [entry.frame.type]));
    // The deadline counts from the runner's start: on a loaded CPU it can pass before the runner says hello.
    expect(["hello", "invoke"].slice(0, frames.length)).toEqual(frames.slice(0, 2));
    expect(entries.at(-1)?.report?.failure?.code).toBe("RunTimeout");
  });

  it("--capabilities adds handlers the body calls", async () => {
    writeFileSync(join(dir, "caps.mjs"), "export const add = ({ a, b }) => ({ sum: a + b });\n");
    const run = await ears(
      [
        "exec",
        "--capabilities",
        "./caps.mjs",
        "--allow",
        "add",
        "--code",
        'const r = await ears.call("add", { a: 2, b: 3 });\nreturn r.structured;',
      ],
      { cwd: dir },
    );
    expect(JSON.parse(run.stdout)).toEqual({ sum: 5 });
    expect(run.code).toBe(0);
  });

  it.runIf(process.platform === "linux")(
    "the sandbox options reach the body: a file outside is unreadable until --sandbox-read names it",
    async () => {
      const outside = mkdtempSync(join(tmpdir(), "ears-exec-outside-"));
      try {
        writeFileSync(join(outside, "data.txt"), "outside data");
        const outsideFile = JSON.stringify(join(outside, "data.txt"));
        const body =
          `const fs = process.getBuiltinModule("node:fs");\n` +
          `try { return fs.readFileSync(${outsideFile}, "utf8"); } catch (e) { return (e as { code: string }).code; }`;
        const hidden = await ears(["exec", "--sandbox", "--code", body], { cwd: dir });
        expect(JSON.parse(hidden.stdout)).toBe("ENOENT");
        const shown = await ears(["exec", "--sandbox-read", outside, "--code", body], { cwd: dir });
        expect(JSON.parse(shown.stdout)).toBe("outside data");
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
    },
  );

  it("usage errors exit 64: no body, both forms, a command after --, an unreadable file", async () => {
    const cases: [string[], RegExp][] = [
      [["exec"], /no code body; give it with --code/],
      [["exec", "--code", "1", "--code-file", "x.ts"], /--code or --code-file, not both/],
      [["exec", "--code", "1", "--", "node", "x.mjs"], /runs a code body, not a command/],
      [["exec", "--code-file", "missing.ts"], /cannot read --code-file missing.ts/],
      [["exec", "--code"], /--code needs a value/],
    ];
    for (const [args, message] of cases) {
      const run = await ears(args, { cwd: dir });
      expect(run.stderr, args.join(" ")).toMatch(message);
      expect(run.code, args.join(" ")).toBe(64);
    }
  });
});
