/**
 * `contract.declarations()`: ambient TypeScript declarations of what a code body has in scope (`ears`,
 * `input`, `Outcome`), for a model's prompt and for `runCode({ typecheck: true })`. Types come from each
 * schema's Standard JSON Schema, printed by the small printer below. It is written here rather than
 * taken from json-schema-to-typescript, which pulls in prettier, a $ref parser and more, for the few
 * keywords zod's JSON Schema output uses: type, properties/required, additionalProperties, items,
 * prefixItems, enum, const, anyOf/oneOf/allOf, $ref into $defs (recursion included) and description.
 * A keyword the printer does not know widens the type (never narrows it): the host still checks every
 * call against the schema itself.
 */
import { escapeUnsafeText, safeQuoted } from "../protocol/text.js";
import type { CapabilitySpec, StandardSchemaV1 } from "./contract.js";
import { isJsonSchemaWrapper } from "./json-schema.js";

/** Options for {@link Contract.declarations}. */
export interface DeclarationOptions {
  /** The schema of the body's `input` (its output type is what the body sees); without it, `input` is any JSON. */
  input?: StandardSchemaV1;
  /**
   * The capability names the run allows (runGuest's and runCode's `allowed`): only these are declared, so
   * a prompt never offers a tool the host will refuse. Each must be one the contract declares. Default:
   * every capability of the contract.
   */
  allowed?: readonly string[];
}

type Schema = Record<string, unknown> | boolean;

const PRELUDE = `/** Any JSON value. */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
/** A capability's answer that worked. */
interface Success { readonly status: "success"; readonly content: string; readonly structured?: Json }
/** A capability's answer that failed: a value to branch on, not an exception. */
interface Failure { readonly status: "failure"; readonly code: string; readonly content: string; readonly structured?: Json }
/** What a call resolves to, and what a body may return as it is. */
type Outcome = Success | Failure;
/**
 * What a capability with no declared result type resolves to. Check \`status\` first. Its answer is the text
 * in \`content\`; \`structured\`, when it sent one, is JSON of a shape nobody declared: check a field before using it.
 */
type UntypedResult = { readonly status: "success"; readonly content: string; readonly structured?: any } | Failure;
/** A success whose \`structured\` was checked against the capability's declared type. */
interface TypedSuccess<T> { readonly status: "success"; readonly content: string; readonly structured: T }
/** Options of one call. */
interface CallOptions {
  /** Aborting it rejects the call with the signal's reason. */
  signal?: AbortSignal;
  /** Rejects the call with a TimeoutError after this many milliseconds. */
  timeoutMs?: number;
}
/** Builds outcomes to return; \`isError\` tells a failure apart. */
declare const Outcome: {
  success(content?: string, structured?: Json): Success;
  failure(code: string, content?: string, structured?: Json): Failure;
  isError<O extends { readonly status: "success" | "failure" }>(outcome: O): outcome is Extract<O, { readonly status: "failure" }>;
};
`;

/** The declaration text of a contract's specs. Throws a TypeError naming a schema without Standard JSON Schema. */
export function declarationsOf(specs: Record<string, CapabilitySpec>, options: DeclarationOptions = {}): string {
  if (typeof options !== "object" || options === null) throw new TypeError("declarations: options must be an object { input?, allowed? }");
  const aliases: string[] = [];
  const offered = offeredSpecs(specs, options.allowed);
  const entries = offered.map(([name, spec], index) => {
    const doc = spec.description === undefined ? "" : docComment(spec.description, "  ");
    const args =
      spec.arguments === undefined
        ? "Json | undefined"
        : printRoot(
            jsonSchemaOf(name, "arguments", spec.arguments, "input"),
            `Arguments${index}`,
            aliases,
            "  ",
            untypedOf(spec.arguments),
          );
    const structured = (schema: StandardSchemaV1) =>
      printRoot(jsonSchemaOf(name, "structured", schema, "output"), `Structured${index}`, aliases, "  ", untypedOf(schema));
    const result = spec.structured === undefined ? "UntypedResult" : `TypedSuccess<${structured(spec.structured)}> | Failure`;
    const key = IDENTIFIER.test(name) ? name : safeQuoted(name);
    return `${doc}  ${key}: { args: ${args}; result: ${result} };`;
  });
  const input =
    options.input === undefined
      ? "Json"
      : printRoot(jsonSchemaOf("input", "schema", options.input, "output"), "Input", aliases, "", untypedOf(options.input));
  return render(entries.join("\n"), aliases.join(""), input);
}

/** The specs to declare: all of them, or those `allowed` names, in the contract's order. */
function offeredSpecs(specs: Record<string, CapabilitySpec>, allowed: readonly string[] | undefined): [string, CapabilitySpec][] {
  const all = Object.entries(specs);
  if (allowed === undefined) return all;
  if (!Array.isArray(allowed) || allowed.some((name) => typeof name !== "string")) {
    throw new TypeError("declarations: options.allowed must be an array of capability names");
  }
  const unknown = allowed.filter((name) => !Object.hasOwn(specs, name));
  if (unknown.length > 0) {
    throw new TypeError(
      `declarations: options.allowed names ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which the contract does not declare`,
    );
  }
  return all.filter(([name]) => allowed.includes(name));
}

/** The declarations of an untyped guest (no contract): any name, any JSON arguments, any outcome. */
export function looseDeclarations(): string {
  return render("  [name: string]: { args: Json | undefined; result: UntypedResult };", "", "Json");
}

const CAPABILITIES_DOC = "/** The capabilities the host offers: what each takes (`args`) and what calling it resolves to (`result`). */";

/**
 * One generic `call` over a map of capabilities rather than one overload per capability: a wrong
 * argument is then reported at the argument ("Type 'number' is not assignable to type 'string'"),
 * where overloads only say "No overload matches this call" about the last one.
 */
function render(capabilities: string, aliases: string, input: string): string {
  return `${PRELUDE}${aliases}${CAPABILITIES_DOC}
interface Capabilities {
${capabilities}
}
/** What follows a capability's name in \`ears.call\`: its arguments (optional when none is required), then options. */
type CallArguments<Name extends keyof Capabilities> = undefined extends Capabilities[Name]["args"]
  ? [args?: Capabilities[Name]["args"], options?: CallOptions]
  : {} extends Capabilities[Name]["args"]
    ? [args?: Capabilities[Name]["args"], options?: CallOptions]
    : [args: Capabilities[Name]["args"], options?: CallOptions];
/** The host's capabilities: call one (a failure resolves as a value, it does not throw), log. */
declare const ears: {
  call<Name extends keyof Capabilities>(name: Name, ...rest: CallArguments<Name>): Promise<Capabilities[Name]["result"]>;
  /** Sends a log line to the host (console.* is captured the same way). */
  log(content: string, level?: "debug" | "info" | "warn" | "error"): Promise<void>;
  /** The capability names the host allows. */
  readonly allowed: readonly string[];
};
/** The run's input, from the host. */
declare const input: ${input};
`;
}

function jsonSchemaOf(name: string, field: string, schema: StandardSchemaV1, side: "input" | "output"): Schema {
  const standard = schema["~standard"];
  const convert = standard?.jsonSchema?.[side];
  if (typeof convert !== "function") {
    throw new TypeError(
      `declarations: ${JSON.stringify(name)}.${field} is a ${String(standard?.vendor)} schema without Standard JSON Schema ` +
        "(~standard.jsonSchema); use a library version that provides it (zod 4 does)",
    );
  }
  return convert.call(standard.jsonSchema, { target: "draft-2020-12" }) as Schema;
}

/**
 * How a part the printer cannot type is printed. A Standard Schema library's part (zod's) stays
 * `unknown`, as before. A JSON Schema from elsewhere (an MCP tool's) becomes `Json` with a comment
 * saying why: such a value crossed the wire as JSON, so `Json` is exact, and the comment tells the
 * model what the schema said that the type does not.
 */
interface Untyped {
  /** A part that allows any value (`true`, `{}`). */
  readonly any: string;
  /** A part with keywords the printer does not read. */
  readonly keyword: (reason: string) => string;
}

const ZOD_UNTYPED: Untyped = { any: "unknown", keyword: () => "unknown" };
const JSON_UNTYPED: Untyped = {
  any: "Json",
  // The reason holds keys from the schema's author: only plain characters, so nothing closes the
  // comment early or unbalances group()'s scan of brackets and quotes.
  keyword: (reason) => `Json /* ${reason.replace(/[^\w $#.,:-]/g, " ").slice(0, 80)} */`,
};

function untypedOf(schema: StandardSchemaV1): Untyped {
  return isJsonSchemaWrapper(schema) ? JSON_UNTYPED : ZOD_UNTYPED;
}

/** Prints a root schema; its $defs (and the root itself, when referenced as "#") become type aliases named from `base`. */
function printRoot(root: Schema, base: string, aliases: string[], indent = "", untyped: Untyped = ZOD_UNTYPED): string {
  const defs =
    typeof root === "object" && typeof root.$defs === "object" && root.$defs !== null ? (root.$defs as Record<string, Schema>) : {};
  const defNames = new Map(Object.keys(defs).map((key, i) => [key, `${base}_${i}`]));
  let rootReferenced = false;
  const printer: Printer = {
    untyped,
    ref(ref) {
      if (ref === "#") {
        rootReferenced = true;
        return base;
      }
      const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
      const key = match === null ? undefined : decodeURIComponent(match[1]!).replaceAll("~1", "/").replaceAll("~0", "~");
      return key !== undefined && defNames.has(key) ? defNames.get(key)! : untyped.keyword(`unresolved ref ${ref}`);
    },
  };
  for (const [key, alias] of defNames) aliases.push(`type ${alias} = ${print(defs[key]!, printer, "")};\n`);
  const text = print(root, printer, indent);
  if (!rootReferenced) return text;
  aliases.push(`type ${base} = ${text};\n`);
  return base;
}

interface Printer {
  ref(ref: string): string;
  readonly untyped: Untyped;
}

/** Keywords that say nothing about a value's type: a schema of only these allows any value. */
const ANNOTATIONS = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
]);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** One schema as a TypeScript type; `indent` is the indentation of the line it starts on. */
function print(schema: Schema, printer: Printer, indent: string): string {
  if (schema === true) return printer.untyped.any;
  if (schema === false) return "never";
  if (typeof schema !== "object" || schema === null) return printer.untyped.keyword("not a schema");
  if (typeof schema.$ref === "string") return printer.ref(schema.$ref);
  if ("const" in schema) return literal(schema.const, printer);
  if (Array.isArray(schema.enum))
    return schema.enum.length === 0 ? "never" : schema.enum.map((value) => literal(value, printer)).join(" | ");
  for (const key of ["anyOf", "oneOf"] as const) {
    const list = schema[key];
    if (Array.isArray(list))
      return list.length === 0 ? "never" : list.map((item) => group(print(item as Schema, printer, indent))).join(" | ");
  }
  if (Array.isArray(schema.allOf))
    return schema.allOf.length === 0 ? "unknown" : schema.allOf.map((item) => group(print(item as Schema, printer, indent))).join(" & ");
  if (typeof schema.not === "object" && schema.not !== null && Object.keys(schema.not).length === 0) return "never";
  const types = Array.isArray(schema.type) ? schema.type : typeof schema.type === "string" ? [schema.type] : [];
  if (types.length === 0) {
    if ("properties" in schema) return printObject(schema, printer, indent);
    const keywords = Object.keys(schema).filter((key) => !ANNOTATIONS.has(key));
    return keywords.length === 0 ? printer.untyped.any : printer.untyped.keyword(`untyped: ${keywords.slice(0, 3).join(", ")}`);
  }
  return types.map((type) => group(printType(String(type), schema, printer, indent))).join(" | ");
}

function printType(type: string, schema: Record<string, unknown>, printer: Printer, indent: string): string {
  switch (type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return printArray(schema, printer, indent);
    case "object":
      return printObject(schema, printer, indent);
    default:
      return printer.untyped.keyword(`unknown type ${type}`);
  }
}

function printArray(schema: Record<string, unknown>, printer: Printer, indent: string): string {
  const items = schema.items as Schema | undefined;
  if (Array.isArray(schema.prefixItems)) {
    const fixed = schema.prefixItems.map((item) => print(item as Schema, printer, indent));
    const rest = items === undefined || items === false ? [] : [`...${group(print(items, printer, indent))}[]`];
    return `[${[...fixed, ...rest].join(", ")}]`;
  }
  return `${group(print(items ?? true, printer, indent))}[]`;
}

function printObject(schema: Record<string, unknown>, printer: Printer, indent: string): string {
  const properties = (typeof schema.properties === "object" && schema.properties !== null ? schema.properties : {}) as Record<
    string,
    Schema
  >;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const inner = `${indent}  `;
  const lines: string[] = [];
  for (const [key, value] of Object.entries(properties)) {
    const text = fieldDoc(value);
    const description = text === "" ? "" : docComment(text, inner);
    const name = IDENTIFIER.test(key) ? key : safeQuoted(key);
    lines.push(`${description}${inner}${name}${required.has(key) ? "" : "?"}: ${print(value, printer, inner)};`);
  }
  const extra = schema.additionalProperties;
  // An index signature only when other keys are declared (a record, a loose object). Absent
  // additionalProperties (zod's input side of a plain object) prints no signature: that is zod's own
  // TypeScript type, so an object literal with an unknown key is an error here as in a typed guest.
  if (extra !== undefined && extra !== false) {
    const value = extra === true ? printer.untyped.any : print(extra as Schema, printer, inner);
    const known = Object.keys(properties).length === 0 ? value : printer.untyped.any;
    lines.push(`${inner}[key: string]: ${known};`);
  }
  if (lines.length === 0) return "{}";
  return `{\n${lines.join("\n")}\n${indent}}`;
}

function literal(value: unknown, printer: Printer): string {
  return value === null || ["string", "number", "boolean"].includes(typeof value)
    ? safeQuotedJson(value)
    : printer.untyped.keyword("an object or array constant");
}

/**
 * A field's doc comment: its description, then what its schema says besides its type, in words and
 * numerals (bounds, lengths, pattern or format, integer, multiple, item counts, default, what each allowed
 * value means), so a model learns them before its call is refused with `InvalidArguments`.
 */
function fieldDoc(schema: Schema): string {
  if (typeof schema !== "object") return "";
  const description = typeof schema.description === "string" ? schema.description : "";
  const said = constraintsOf(schema);
  if (said.length === 0) return description;
  return description === "" ? said.join(", ") : `${description} (${said.join(", ")})`;
}

/** zod's `int()` says these bounds; they are what "integer" means in JavaScript, so they go unsaid. */
const SAFE_BOUNDS = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);
const PATTERN_CHARS = 200;
const VALUE_CHARS = 100;

/** What `schema` (one field's) says besides its type; for a nullable field (`anyOf: [X, null]`), what X says. */
function constraintsOf(schema: Record<string, unknown>): string[] {
  const said: string[] = [];
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (alternatives !== undefined) {
    const values = alternatives.filter(
      (item): item is Record<string, unknown> => typeof item === "object" && item !== null && "const" in item,
    );
    if (values.length === alternatives.length && values.some((item) => typeof item.description === "string")) {
      said.push(`one of: ${values.map((item) => meaning(item.const, item.description)).join("; ")}`);
    }
    const typed = alternatives.filter(
      (item): item is Record<string, unknown> => typeof item === "object" && item !== null && item.type !== "null",
    );
    if (typed.length === 1 && typed.length < alternatives.length) said.push(...constraintsOf(typed[0]!));
  }
  const number = (key: string) => (typeof schema[key] === "number" && Number.isFinite(schema[key]) ? (schema[key] as number) : undefined);
  if (schema.type === "integer" || (Array.isArray(schema.type) && schema.type.includes("integer"))) said.push("integer");
  const minimum = number("minimum");
  const maximum = number("maximum");
  if (minimum !== undefined && !SAFE_BOUNDS.has(minimum)) said.push(`at least ${minimum}`);
  if (number("exclusiveMinimum") !== undefined) said.push(`greater than ${number("exclusiveMinimum")}`);
  if (maximum !== undefined && !SAFE_BOUNDS.has(maximum)) said.push(`at most ${maximum}`);
  if (number("exclusiveMaximum") !== undefined) said.push(`less than ${number("exclusiveMaximum")}`);
  if (number("multipleOf") !== undefined) said.push(`a multiple of ${number("multipleOf")}`);
  said.push(...counted(number("minLength"), number("maxLength"), "character"));
  said.push(...counted(number("minItems"), number("maxItems"), "item"));
  said.push(...counted(number("minProperties"), number("maxProperties"), "property"));
  if (schema.uniqueItems === true) said.push("items unique");
  // A format says in one word what its pattern spells out at length (zod gives both for email, uuid, ...).
  if (typeof schema.format === "string") said.push(`format ${docText(schema.format, VALUE_CHARS)}`);
  else if (typeof schema.pattern === "string") said.push(`matching /${docText(schema.pattern, PATTERN_CHARS)}/`);
  const described = Array.isArray(schema.enumDescriptions) ? schema.enumDescriptions : schema["x-enumDescriptions"];
  if (Array.isArray(schema.enum) && Array.isArray(described) && described.some((text) => typeof text === "string")) {
    said.push(`one of: ${schema.enum.map((value, index) => meaning(value, described[index])).join("; ")}`);
  }
  if ("default" in schema && schema.default !== undefined)
    said.push(`default ${docText(JSON.stringify(schema.default) ?? "", VALUE_CHARS)}`);
  return said;
}

/** "at least 2 characters", "at most 5 items", "exactly 3 characters". */
function counted(least: number | undefined, most: number | undefined, unit: string): string[] {
  const of = (count: number) => `${count} ${count === 1 ? unit : unit === "property" ? "properties" : `${unit}s`}`;
  if (least !== undefined && least === most) return [`exactly ${of(least)}`];
  return [...(least !== undefined && least > 0 ? [`at least ${of(least)}`] : []), ...(most !== undefined ? [`at most ${of(most)}`] : [])];
}

/** An allowed value and what it means: `"fast" (no checks)`. */
function meaning(value: unknown, description: unknown): string {
  const shown = docText(JSON.stringify(value) ?? "", VALUE_CHARS);
  return typeof description === "string" && description !== "" ? `${shown} (${docText(description, VALUE_CHARS * 2)})` : shown;
}

/**
 * Text from a schema's author (a server's pattern, a default, a value's description) made safe for one
 * line of a doc comment: control and bidirectional-formatting characters are written as `\u{…}` escapes,
 * so nothing can break the line or reorder what a reader sees; `* /` is escaped by {@link docComment}.
 * Cut to `max` characters.
 */
function docText(text: string, max: number): string {
  const escaped = text.replace(
    /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (char) => `\\u{${char.codePointAt(0)!.toString(16)}}`,
  );
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

/** Parenthesises a top-level union or intersection, where it would bind differently (inside `T[]`, `A | B`). */
function group(type: string): string {
  let depth = 0;
  for (let i = 0; i < type.length; i++) {
    const char = type[i]!;
    // A doc comment holds an author's text (a description, a pattern): its brackets and quotes are not the type's.
    if (char === "/" && type[i + 1] === "*") {
      const end = type.indexOf("*/", i + 2);
      i = end < 0 ? type.length : end + 1;
    } else if ("{[(<".includes(char)) depth++;
    else if ("}])>".includes(char)) depth--;
    else if (char === '"') i = endOfString(type, i);
    else if (depth === 0 && (char === "|" || char === "&")) return `(${type})`;
  }
  return type;
}

/** The index of the quote that closes the JSON string literal opening at `start`. */
function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i;
  }
  return text.length;
}

/**
 * A value as JSON, every control and bidirectional character in its strings escaped (the same value in
 * TypeScript source). Text from a schema (an MCP server's) must not drive a terminal or reorder a prompt.
 */
function safeQuotedJson(value: unknown): string {
  return typeof value === "string" ? safeQuoted(value) : JSON.stringify(value);
}

/** A TSDoc comment of `text`, every control and bidirectional character in it shown escaped (`\x1b`, `\u202e`). */
function docComment(text: string, indent: string): string {
  const lines = text
    .replaceAll("*/", "*\\/")
    .split(/\r?\n/)
    .map((line) => escapeUnsafeText(line, { keepLineBreaks: true }));
  return lines.length === 1
    ? `${indent}/** ${lines[0]} */\n`
    : `${indent}/**\n${lines.map((line) => `${indent} * ${line}`).join("\n")}\n${indent} */\n`;
}
