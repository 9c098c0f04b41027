/**
 * JSON Schema as a contract's schema: the tools people already have (MCP servers, HTTP APIs) describe
 * their arguments and results in JSON Schema, not in zod. `jsonSchema(schema)` wraps one so that
 * `defineCapabilities` takes it like any Standard Schema, and `describe()` and `declarations()` type it.
 */
import type { StandardSchemaV1 } from "./contract.js";

/** The vendor name of a {@link jsonSchema} wrapper; `declarations()` prints what it cannot type as `Json` with a comment. */
export const JSON_SCHEMA_VENDOR = "json-schema";

/** A JSON Schema (any draft the printer reads: draft-07 and 2020-12 keywords), or `true`/`false`. */
export type JsonSchema = Record<string, unknown> | boolean;

/**
 * Wraps a JSON Schema as a Standard Schema for `defineCapabilities`. Its `~standard.jsonSchema` gives
 * the schema back (a copy) for `describe()` and `declarations()`. Its `validate` accepts every value
 * unchanged: this package carries no JSON Schema validator, and the schema's owner (an MCP server, an
 * HTTP API) checks what it receives and answers a failure the body can read. Use it for typing, not
 * for guarding a handler of your own (give that a zod schema). Throws a TypeError for a value that is
 * not an object or boolean.
 */
export function jsonSchema(schema: JsonSchema): StandardSchemaV1<unknown, unknown> {
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    throw new TypeError("jsonSchema: expected a JSON Schema (an object, or true/false)");
  }
  // A copy taken now: the caller's object may change later; every reader gets its own copy again.
  const text = JSON.stringify(schema);
  const copy = () => (typeof schema === "boolean" ? { ...(schema ? {} : { not: {} }) } : (JSON.parse(text) as Record<string, unknown>));
  return Object.freeze({
    "~standard": Object.freeze({
      version: 1 as const,
      vendor: JSON_SCHEMA_VENDOR,
      validate: (value: unknown) => ({ value }),
      jsonSchema: Object.freeze({ input: copy, output: copy }),
    }),
  });
}

/** True for a schema made by {@link jsonSchema}. */
export function isJsonSchemaWrapper(schema: StandardSchemaV1 | undefined): boolean {
  return schema?.["~standard"]?.vendor === JSON_SCHEMA_VENDOR;
}
