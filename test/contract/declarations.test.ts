/**
 * contract.declarations() (issue 12): the ambient text a model is prompted with. Checked with the
 * project's tsc: each body below type-checks against the declarations exactly when the same body
 * type-checks inside a typed guest (`serve({ capabilities: tools, input, run })` against the built
 * package), and the invalid ones really are errors.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapabilities } from "../../src/index.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsc = join(root, "node_modules/typescript/bin/tsc");

const Tree: z.ZodType<{ name: string; children: { name: string; children: unknown[] }[] }> = z.object({
  name: z.string(),
  get children() {
    return z.array(Tree);
  },
}) as never;
const tools = defineCapabilities({
  read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string().describe("Path under the root") }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
  pick: {
    arguments: z.object({
      mode: z.enum(["a", "b"]),
      count: z.literal(3),
      label: z.string().nullable(),
      pair: z.tuple([z.string(), z.number()]),
      flags: z.record(z.string(), z.boolean()),
      note: z.string().optional(),
    }),
    structured: z.union([
      z.object({ kind: z.literal("one"), value: z.number() }),
      z.object({ kind: z.literal("many"), values: z.array(z.number()) }),
    ]),
  },
  loose: { description: "Takes any JSON" },
});
const inputSchema = z.object({ path: z.string(), depth: z.number().int().optional() });

/** How the union-result bodies start: a "pick" call whose failure they return. */
const PICK_CALL =
  'const r = await ears.call("pick", { mode: "b", count: 3, label: "l", pair: ["x", 1], flags: {} });\n' +
  'if (r.status === "failure") return r;';

/** [name, body, valid] */
const bodies: [string, string, boolean][] = [
  [
    "the issue's body",
    'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;',
    true,
  ],
  [
    "read with input",
    'const t = await ears.call("read", { path: input.path });\nif (Outcome.isError(t)) return t;\n' +
      "return t.content.length + (input.depth ?? 0);",
    true,
  ],
  ["wrong argument type", 'await ears.call("read", { path: 1 });', false],
  ["unknown capability", 'await ears.call("nope", {});', false],
  ["missing argument", 'await ears.call("add", { a: 1 });', false],
  ["unknown key in arguments", 'await ears.call("read", { path: "x", extra: 1 });', false],
  ["unknown input field", "return input.nope;", false],
  [
    "structured used as the wrong type",
    'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "success") { const s: string = r.structured.sum; return s; }',
    false,
  ],
  ["structured before narrowing", 'const r = await ears.call("add", { a: 1, b: 2 });\nreturn r.structured.sum;', false],
  [
    "enum, literal, nullable, tuple, record, optional",
    'await ears.call("pick", { mode: "a", count: 3, label: null, pair: ["x", 1], flags: { on: true } });',
    true,
  ],
  ["a value outside the enum", 'await ears.call("pick", { mode: "c", count: 3, label: null, pair: ["x", 1], flags: {} });', false],
  ["a wrong tuple", 'await ears.call("pick", { mode: "a", count: 3, label: "l", pair: [1, "x"], flags: {} });', false],
  [
    "a union result narrowed on its tag",
    `${PICK_CALL}\nreturn r.structured.kind === "one" ? r.structured.value : r.structured.values.length;`,
    true,
  ],
  ["a union result read without narrowing", `${PICK_CALL}\nreturn r.structured.value;`, false],
  [
    "a loose capability with JSON",
    'const r = await ears.call("loose", { any: [1, "two", null] });\nreturn r.status === "success" ? r.structured : r.code;',
    true,
  ],
  ["a loose capability with a Map", 'await ears.call("loose", new Map());', false],
  ["logging", 'await ears.log("hello", "warn");\nreturn ears.allowed.length;', true],
  ["logging a number", "await ears.log(1);", false],
  ["a call with options", 'await ears.call("read", { path: "p" }, { timeoutMs: 5 });', true],
];

/** tsc over a directory; the files with errors (by base name) and the full output. */
function typecheck(
  dir: string,
  project: string,
  files: string[],
  compilerOptions: Record<string, unknown>,
): Promise<{ failing: Set<string>; output: string }> {
  const config = join(dir, `tsconfig.${project}.json`);
  writeFileSync(
    config,
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true, skipLibCheck: true, target: "ES2022", ...compilerOptions }, files }),
  );
  return new Promise((resolve) => {
    execFile(process.execPath, [tsc, "-p", config, "--pretty", "false"], { cwd: dir }, (_error, stdout) => {
      const failing = new Set([...stdout.matchAll(/^([\w.-]+)\(\d+,\d+\): error/gm)].map((match) => match[1]!));
      resolve({ failing, output: stdout });
    });
  });
}

/** The zod schemas of the contract's "pick" capability, as source text. */
const PICK_ARGUMENTS =
  'z.object({ mode: z.enum(["a", "b"]), count: z.literal(3), label: z.string().nullable(), pair: z.tuple([z.string(), z.number()]), ' +
  "flags: z.record(z.string(), z.boolean()), note: z.string().optional() })";
const PICK_STRUCTURED =
  'z.union([z.object({ kind: z.literal("one"), value: z.number() }), z.object({ kind: z.literal("many"), values: z.array(z.number()) })])';

describe("contract.declarations()", () => {
  let dir: string;
  beforeAll(() => {
    // Inside the project, so the typed guests resolve @posoco/ears (the built package) and zod.
    dir = mkdtempSync(join(root, ".code-declarations-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("type-checks a body exactly when a typed guest with the same contract does, and rejects the invalid ones", async () => {
    const declarations = tools.declarations({ input: inputSchema });
    expect(declarations).toContain("declare const ears: {");
    expect(declarations).toContain("/** Read a UTF-8 file under the root */");
    expect(declarations).toContain("/** Path under the root */");
    expect(declarations).toContain("  add: { args: {");
    expect(declarations).toContain("declare const input: {");
    writeFileSync(join(dir, "ears.d.ts"), declarations);
    const plain: string[] = ["ears.d.ts"];
    const guests: string[] = [];
    writeFileSync(
      join(dir, "contract.ts"),
      `import { z } from "zod";\nimport { defineCapabilities } from "@posoco/ears";\n` +
        `const Tree: z.ZodType<{ name: string; children: { name: string; children: unknown[] }[] }> = ` +
        `z.object({ name: z.string(), get children() { return z.array(Tree); } }) as never;\n` +
        `export const tools = defineCapabilities({
  read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string().describe("Path under the root") }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
  pick: {
    arguments: ${PICK_ARGUMENTS},
    structured: ${PICK_STRUCTURED},
  },
  loose: { description: "Takes any JSON" },
});
export const inputSchema = z.object({ path: z.string(), depth: z.number().int().optional() });\n`,
    );
    bodies.forEach(([, body], i) => {
      // As runCode's typecheck wraps it: the body inside an async function, declarations ambient.
      writeFileSync(join(dir, `body${i}.ts`), `async function body${i}() {${body}\n}\nexport {};\n`);
      plain.push(`body${i}.ts`);
      writeFileSync(
        join(dir, `guest${i}.ts`),
        `import { Outcome, serve, stdio } from "@posoco/ears";\nimport { tools, inputSchema } from "./contract.js";\nvoid Outcome;\n` +
          `await serve({ wire: stdio(), capabilities: tools, input: inputSchema, run: async (ears, input) => {${body}\n} });\n`,
      );
      guests.push(`guest${i}.ts`);
    });
    const [againstDeclarations, inGuest] = await Promise.all([
      typecheck(dir, "declarations", plain, { module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023", "DOM"], types: [] }),
      // The typed guests in a separate project (their imports must not see the ambient declarations).
      typecheck(dir, "guests", guests, { module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2023", "DOM"], types: ["node"] }),
    ]);
    expect(againstDeclarations.failing.has("ears.d.ts"), againstDeclarations.output).toBe(false);
    const verdicts = bodies.map(([name, , valid], i) => ({
      name,
      valid,
      declarations: !againstDeclarations.failing.has(`body${i}.ts`),
      guest: !inGuest.failing.has(`guest${i}.ts`),
    }));
    expect(verdicts, `${againstDeclarations.output}\n---\n${inGuest.output}`).toEqual(
      bodies.map(([name, , valid]) => ({ name, valid, declarations: valid, guest: valid })),
    );
  });

  it("names a schema without Standard JSON Schema, and types input as JSON without a schema", () => {
    const noJsonSchema = { "~standard": { version: 1 as const, vendor: "custom", validate: (value: unknown) => ({ value }) } };
    expect(() => defineCapabilities({ odd: { arguments: noJsonSchema } }).declarations()).toThrow(
      /"odd"\.arguments is a custom schema without Standard JSON Schema/,
    );
    expect(defineCapabilities({}).declarations()).toContain("declare const input: Json;");
  });

  it("declares only the allowed capabilities, so the prompt offers no tool the run will refuse", () => {
    const all = tools.declarations();
    const readOnly = tools.declarations({ allowed: ["read"] });
    expect(all).toMatch(/^ {2}add: \{/m);
    expect(readOnly).toMatch(/^ {2}read: \{/m);
    for (const refused of ["add", "pick", "loose"]) expect(readOnly).not.toMatch(new RegExp(`^ {2}${refused}: \\{`, "m"));
    expect(tools.declarations({ allowed: [] })).not.toMatch(/^ {2}\w+: \{ args/m);
    expect(() => tools.declarations({ allowed: ["read", "nope"] })).toThrow(
      new TypeError('declarations: options.allowed names "nope", which the contract does not declare'),
    );
    expect(() => tools.declarations({ allowed: "read" as never })).toThrow(
      new TypeError("declarations: options.allowed must be an array of capability names"),
    );
  });

  it("keeps a description from closing its doc comment", () => {
    const text = defineCapabilities({ evil: { description: "ends here */ declare const x: 1; /*" } }).declarations();
    expect(text).toContain("/** ends here *\\/ declare const x: 1; /* */");
    expect(text).not.toContain("here */");
  });
});
