/**
 * Query ranking of catalog tools: BM25 over each tool's server, name, description, and the property names
 * and descriptions in its schemas at every depth, all in one bag of words (no field weights).
 */
import { rankBm25 } from "./bm25.js";
import type { McpTool } from "./catalog.js";
import { tokenize } from "./tokens.js";

/**
 * Keys whose values are data, not schemas: a `description` key inside an `enum` value or a `default`
 * is not a schema description, so it is not searched.
 */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples", "example"]);

/** The searchable words of a tool, in the order they appear. */
export function toolDocument(tool: McpTool): string[] {
  const words = [...tokenize(tool.server), ...tokenize(tool.name), ...tokenize(tool.description)];
  collectSchemaWords(tool.inputSchema, words);
  if (tool.outputSchema !== undefined) collectSchemaWords(tool.outputSchema, words);
  return words;
}

/**
 * Ranks `tools` against `query` with BM25 (IDF over exactly these tools) and returns the matching tools,
 * best first; ties keep the given order, and tools that share no word with the query are left out.
 */
export function rankTools<T extends McpTool>(tools: readonly T[], query: string): T[] {
  const ranked = rankBm25(tools.map(cachedDocument), tokenize(query));
  return ranked.map(({ index }) => tools[index]!);
}

/**
 * Documents of the cached catalog's tools, which never change, so later searches skip re-tokenising
 * (the bulk of a query search's time). Keyed weakly: a dropped catalog frees its documents.
 */
const documents = new WeakMap<McpTool, string[]>();

function cachedDocument(tool: McpTool): string[] {
  let document = documents.get(tool);
  if (document === undefined) {
    document = toolDocument(tool);
    documents.set(tool, document);
  }
  return document;
}

/** Adds property names and descriptions found anywhere in `schema`. Iterative: deep schemas cannot overflow the stack. */
function collectSchemaWords(schema: unknown, words: string[]): void {
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    if (typeof node !== "object" || node === null) continue;
    const object = node as Record<string, unknown>;
    const description = object["description"];
    if (typeof description === "string") words.push(...tokenize(description));
    // Word order does not matter to BM25, so nested schemas are visited in whatever order the stack gives.
    for (const [key, value] of Object.entries(object)) {
      if (key === "description" || DATA_KEYWORDS.has(key)) continue;
      if (key === "properties" && typeof value === "object" && value !== null && !Array.isArray(value)) {
        for (const [property, propertySchema] of Object.entries(value)) {
          words.push(...tokenize(property));
          pending.push(propertySchema);
        }
      } else if (typeof value === "object" && value !== null) {
        pending.push(value);
      }
    }
  }
}
