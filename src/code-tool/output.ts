/**
 * What a model reads from a code tool has no control characters in it: a body's result, a tool's failure
 * text and the log lines can hold raw ESC, BEL or a bidirectional override (a body that printed a file, an
 * upstream server's text), which a terminal, a log viewer or a chat UI showing the tool result would act
 * on. Every string of the output (object keys too) gets each such character as the text `\uXXXX`.
 */
import type { Json } from "../protocol/json.js";

/**
 * C0 controls but tab and line feed, DEL, C1 controls, and the bidirectional marks, embeddings, overrides
 * and isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069).
 */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with each control character written as `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A JSON value with every string in it (keys included) escaped by {@link escapeControls}. */
export function escapeJson(value: Json): Json {
  if (typeof value === "string") return escapeControls(value);
  if (Array.isArray(value)) return value.map(escapeJson);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, Json> = {};
    for (const [key, item] of Object.entries(value)) out[escapeControls(key)] = escapeJson(item);
    return out;
  }
  return value;
}
