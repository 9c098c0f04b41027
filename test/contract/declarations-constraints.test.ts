/**
 * What declarations() says besides types: each field's constraints (zod's and a JSON Schema's) in its doc
 * comment, in numerals, so a model learns them before a call is refused; and what a capability with no
 * declared result type resolves to, in words and a type a body can use without a cast.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapabilities, jsonSchema } from "../../src/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "ears-declarations-constraints-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The doc comment line right above `name` in the declarations. */
function docOf(text: string, name: string): string | undefined {
  const lines = text.split("\n");
  const at = lines.findIndex((line) => new RegExp(`^\\s*"?${name.replace(/\./g, "\\.")}"?\\??: `).test(line));
  const above = lines[at - 1]?.trim();
  return above?.startsWith("/**") ? above : undefined;
}

describe("declarations: each field's constraints in its doc comment", () => {
  it("zod's min, max, int, length, regex, format, item counts and default, in numerals, integers said as integer", () => {
    const tools = defineCapabilities({
      search: {
        arguments: z.object({
          page: z.number().int().min(1).max(10).default(1).describe("Page of results"),
          ratio: z.number().gt(0).lt(1).multipleOf(0.25),
          query: z
            .string()
            .min(2)
            .max(80)
            .regex(/^[a-z ]+$/),
          code: z.string().length(3),
          email: z.email(),
          tags: z.array(z.string()).min(1).max(5),
          count: z.int(),
          limit: z.number().int().nullable(),
          order: z.enum(["asc", "desc"]).default("asc"),
          plain: z.string(),
        }),
      },
    });
    const text = tools.declarations();
    expect(docOf(text, "page")).toBe("/** Page of results (integer, at least 1, at most 10, default 1) */");
    expect(docOf(text, "ratio")).toBe("/** greater than 0, less than 1, a multiple of 0.25 */");
    expect(docOf(text, "query")).toBe("/** at least 2 characters, at most 80 characters, matching /^[a-z ]+$/ */");
    expect(docOf(text, "code")).toBe("/** exactly 3 characters */");
    expect(docOf(text, "email")).toBe("/** format email */");
    expect(docOf(text, "tags")).toBe("/** at least 1 item, at most 5 items */");
    // zod's int() bounds are what "integer" means in JavaScript: not said.
    expect(docOf(text, "count")).toBe("/** integer */");
    expect(docOf(text, "limit")).toBe("/** integer */");
    expect(docOf(text, "order")).toBe('/** default "asc" */');
    expect(docOf(text, "plain")).toBeUndefined();
  });

  it("a JSON Schema's (an MCP tool's) minimum, maxLength, pattern and enum descriptions, its text escaped", () => {
    const tools = defineCapabilities({
      "srv.fetch": {
        arguments: jsonSchema({
          type: "object",
          properties: {
            retries: { type: "integer", minimum: 0, maximum: 5, description: "How often to retry" },
            url: { type: "string", maxLength: 2048, pattern: "^https://[^*]+*/\u202eevil\u0007\n" },
            mode: {
              oneOf: [
                { const: "fast", description: "no checks" },
                { const: "safe", description: "checks every\nbyte */ declare const x: 1; /*" },
              ],
            },
            level: { type: "string", enum: ["low", "high"], enumDescriptions: ["quiet", "loud"] },
          },
          required: ["url"],
        }),
      },
    });
    const text = tools.declarations();
    expect(docOf(text, "retries")).toBe("/** How often to retry (integer, at least 0, at most 5) */");
    expect(docOf(text, "url")).toBe("/** at most 2048 characters, matching /^https://[^*]+*\\/\\u{202e}evil\\u{7}\\u{a}/ */");
    expect(docOf(text, "mode")).toBe('/** one of: "fast" (no checks); "safe" (checks every\\u{a}byte *\\/ declare const x: 1; /*) */');
    expect(docOf(text, "level")).toBe('/** one of: "low" (quiet); "high" (loud) */');
    // Nothing the author wrote became code: the declarations still compile, with only the declared names.
    expect(text).not.toContain("\u202e");
    expect(typeErrors(text, 'return await ears.call("srv.fetch", { url: "https://a" });')).toBe("");
  });

  it("a description's brackets and quotes do not change how a union around the object is grouped", () => {
    const tools = defineCapabilities({
      pick: { arguments: z.object({ items: z.array(z.object({ a: z.string().describe('an "open ( [ {') }).nullable()) }) },
    });
    const text = tools.declarations();
    expect(text).toMatch(/items: \(\{\n[\s\S]*\} \| null\)\[\];/);
  });
});

describe("declarations: a capability with no declared result type", () => {
  const tools = defineCapabilities({
    echo: { description: "Echo", arguments: z.object({ message: z.string() }) },
    add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
  });

  it("is declared as UntypedResult, whose doc says to check status and read content", () => {
    const text = tools.declarations();
    expect(text).toContain("  echo: { args: {\n    message: string;\n  }; result: UntypedResult };");
    expect(text).not.toMatch(/result: Outcome\b/);
    const doc = text.slice(0, text.indexOf("type UntypedResult"));
    expect(doc).toContain("Check `status` first. Its answer is the text\n * in `content`");
  });

  it("a body reads its content and its structured fields without a cast, after checking status; a typed one stays typed", () => {
    const body = [
      'const r = await ears.call("echo", { message: "hi" });',
      'if (r.status === "failure") return r.code;',
      "const text: string = r.content;",
      "const n: number = r.structured?.items?.length ?? 0;",
      'const s = await ears.call("add", { a: 1, b: 2 });',
      'if (s.status === "success") { const sum: number = s.structured.sum; void sum; }',
      "return [text, n];",
    ].join("\n");
    expect(typeErrors(tools.declarations(), body)).toBe("");
    // Without checking status, `code` is not there: the failure is still a value to branch on.
    expect(
      typeErrors(tools.declarations(), 'const r = await ears.call("echo", { message: "hi" });\nconst c: string = r.code;\nreturn c;\n'),
    ).toMatch(/TS2339/);
  });
});

let runs = 0;
/** Type-checks `body` (a code body: the body of an async function) against `declarations` with the project's tsc; "" when it compiles. */
function typeErrors(declarations: string, body: string): string {
  const dir = join(scratch, `check-${++runs}`);
  execFileSync("mkdir", ["-p", dir]);
  writeFileSync(join(dir, "declarations.d.ts"), declarations);
  writeFileSync(join(dir, "body.mts"), `export async function body() {\n${body}\n}\n`);
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        lib: ["ES2023", "DOM"],
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: [],
      },
      include: ["declarations.d.ts", "body.mts"],
    }),
  );
  try {
    execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", dir], { encoding: "utf8", stdio: "pipe" });
    return "";
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}
