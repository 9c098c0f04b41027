/**
 * jsonSchema() and declarations from JSON Schema (issue 19): an MCP tool's inputSchema/outputSchema types
 * a body as precisely as zod does (objects, enums, optional and required, arrays, descriptions as TSDoc),
 * and what the printer cannot type is `Json` with a comment. Bodies are checked with the project's tsc.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineCapabilities, jsonSchema } from "../../src/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsc = join(root, "node_modules/typescript/bin/tsc");

/** Tools as an MCP server lists them (draft-07, as the SDK's servers write them). */
const tools = defineCapabilities({
  "github.search": {
    description: "Search issues",
    arguments: jsonSchema({
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: {
        query: { type: "string", description: "Search text" },
        state: { type: "string", enum: ["open", "closed"] },
        labels: { type: "array", items: { type: "string" } },
        limit: { type: "integer", default: 10 },
        since: { type: "string", format: "date-time" },
        extra: { not: { type: "null" } },
      },
      required: ["query"],
      additionalProperties: false,
    }),
    structured: jsonSchema({
      type: "object",
      properties: {
        total: { type: "number" },
        items: {
          type: "array",
          items: { type: "object", properties: { id: { type: "number" }, title: { type: "string" } }, required: ["id"] },
        },
      },
      required: ["total", "items"],
    }),
  },
  "github.anything": { arguments: jsonSchema(true) },
});

/** [name, body, valid] */
const bodies: [string, string, boolean][] = [
  [
    "a valid search using the typed result",
    'const r = await ears.call("github.search", { query: "bug", state: "open", labels: ["x"] });\n' +
      'if (r.status === "failure") return r;\nreturn r.structured.items.map((item) => item.id + (item.title ?? "").length);',
    true,
  ],
  ["a missing required argument", 'await ears.call("github.search", { state: "open" });', false],
  ["a value outside the enum", 'await ears.call("github.search", { query: "q", state: "merged" });', false],
  ["a wrong array item", 'await ears.call("github.search", { query: "q", labels: [1] });', false],
  ["an unknown argument", 'await ears.call("github.search", { query: "q", nope: 1 });', false],
  ["an untyped keyword takes any JSON", 'await ears.call("github.search", { query: "q", extra: { a: [1] } });', true],
  ["an unnarrowed result", 'const r = await ears.call("github.search", { query: "q" });\nreturn r.structured.total;', false],
  [
    "an optional item field used as required",
    'const r = await ears.call("github.search", { query: "q" });\nif (r.status === "failure") return r;\n' +
      "return r.structured.items[0]!.title.length;",
    false,
  ],
  ["a schema of true takes any JSON", 'await ears.call("github.anything", { a: 1 });\nawait ears.call("github.anything", [1, "x"]);', true],
  ["an undeclared tool", 'await ears.call("github.other", {});', false],
];

describe("jsonSchema() in a contract", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(root, ".json-schema-declarations-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("prints descriptions as TSDoc, enums as unions, optional and required, and Json with a comment for what it cannot type", () => {
    const text = tools.declarations();
    expect(text).toContain(`  /** Search issues */
  "github.search": { args: {
    /** Search text */
    query: string;
    state?: "open" | "closed";
    labels?: string[];
    /** integer, default 10 */
    limit?: number;
    /** format date-time */
    since?: string;
    extra?: Json /* untyped: not */;
  }; result: TypedSuccess<{
    total: number;
    items: {
      id: number;
      title?: string;
    }[];
  }> | Failure };`);
    expect(text).toContain('  "github.anything": { args: Json; result: UntypedResult };');
  });

  it("type-checks a valid body and refuses each invalid one", async () => {
    writeFileSync(join(dir, "ears.d.ts"), tools.declarations());
    const files = bodies.map(([, body], index) => {
      const file = `body${index}.ts`;
      writeFileSync(join(dir, file), `export {};\nasync function body() {\n${body}\n}\nvoid body;\n`);
      return file;
    });
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: "ES2023", lib: ["ES2023", "DOM"], types: [] },
        files: ["ears.d.ts", ...files],
      }),
    );
    const output = await new Promise<string>((resolve) =>
      execFile(process.execPath, [tsc, "-p", join(dir, "tsconfig.json"), "--pretty", "false"], { cwd: dir }, (_e, stdout) =>
        resolve(stdout),
      ),
    );
    expect(output).not.toMatch(/ears\.d\.ts/);
    const failing = new Set([...output.matchAll(/^body(\d+)\.ts\(\d+,\d+\): error/gm)].map((match) => Number(match[1])));
    expect(bodies.map(([name], index) => [name, !failing.has(index)])).toEqual(bodies.map(([name, , valid]) => [name, valid]));
  });

  it("validates nothing itself (the schema's owner does) and gives a copy of the schema to describe()", async () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const wrapped = jsonSchema(schema);
    schema.properties.a.type = "number";
    expect(await wrapped["~standard"].validate(42)).toEqual({ value: 42 });
    expect(defineCapabilities({ t: { arguments: wrapped } }).describe()[0]!.inputSchema).toEqual({
      type: "object",
      properties: { a: { type: "string" } },
    });
    expect(() => jsonSchema(null as never)).toThrow(/expected a JSON Schema/);
    expect(() => jsonSchema([] as never)).toThrow(/expected a JSON Schema/);
  });

  it("keeps a hostile keyword name from closing the comment or breaking the printed type", () => {
    const hostile = defineCapabilities({
      t: { arguments: jsonSchema({ type: "object", properties: { a: { '*/ | "x': 1 } }, required: ["a"] }) },
    });
    expect(hostile.declarations()).toMatch(/ {2}a: Json \/\* untyped: +x \*\/;\n/);
  });
});
