/**
 * Cutting text for messages. Reasons and messages quote text the other side sent, which may be megabytes
 * long: every place cuts it the same way, here. Lengths are in UTF-16 code units, as `String.length`.
 */

/** `text`, or its first `max` characters, "…" and the full length when it is longer. */
export function excerpt(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** {@link excerpt} with the kept part JSON-quoted, so control characters show. */
export function quotedExcerpt(text: string, max: number): string {
  return text.length > max ? `${JSON.stringify(text.slice(0, max))}… (${text.length} characters)` : JSON.stringify(text);
}

/** `text`, or its first `max` characters and "…" when it is longer (no length: a part of a longer sentence). */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * A byte count as people read it: "10 bytes", "512 KiB", "1 MiB", "6.2 MiB" (powers of 1024, at most one
 * decimal, none when it is whole).
 */
export function byteSize(bytes: number): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  const units = ["KiB", "MiB", "GiB", "TiB"];
  if (Math.abs(bytes) < 1024) return `${bytes} ${bytes === 1 ? "byte" : "bytes"}`;
  let value = bytes / 1024;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const rounded = Math.round(value * 10) / 10;
  return `${Number.isInteger(rounded) ? rounded.toFixed(0) : rounded.toFixed(1)} ${units[unit]}`;
}

/**
 * The characters no text from another party may carry raw to a person or a model: C0 controls (ESC, BEL,
 * NUL, BS, CR, ...), DEL, C1 controls (among them U+009B, a one-character CSI), the bidirectional
 * overrides, embeddings, isolates and marks (U+202A to U+202E, U+2066 to U+2069, U+200E, U+200F,
 * U+061C), which make a terminal or an editor show text in another order than it is read, and the line
 * and paragraph separators U+2028 and U+2029 (line terminators in JavaScript source).
 */
export const UNSAFE_CHARACTER = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_CHARACTERS = new RegExp(UNSAFE_CHARACTER.source, "g");
const UNSAFE_ABOVE_C0 = /[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every {@link UNSAFE_CHARACTER} written as an escape a person can read: `\xHH` up to U+00FF,
 * `\uHHHH` above (lower-case hex). `keepLineBreaks` keeps newline and tab (a multi-line description).
 * For text that is shown, not parsed back (a description, a name in a message).
 */
export function escapeUnsafeText(text: string, options: { keepLineBreaks?: boolean } = {}): string {
  const keep = options.keepLineBreaks === true;
  return text.replace(UNSAFE_CHARACTERS, (char) => (keep && (char === "\n" || char === "\t") ? char : unsafeEscape(char)));
}

/**
 * JSON text with every {@link UNSAFE_CHARACTER} left raw by `JSON.stringify` (DEL, C1, the bidirectional
 * characters, U+2028/U+2029) written as a `\uHHHH` escape, which parses back to the same string: the value
 * is unchanged. Outside strings JSON text is ASCII, so only string contents change form.
 */
export function escapeUnsafeJson(json: string): string {
  // C0 controls are left alone: JSON.stringify escapes them inside strings, and outside them they are its own layout (newlines).
  return json.replace(UNSAFE_ABOVE_C0, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `text` as a JSON (and JavaScript) string literal with no {@link UNSAFE_CHARACTER} in it raw. */
export function safeQuoted(text: string): string {
  return escapeUnsafeJson(JSON.stringify(text));
}

/** The escape of one unsafe character: `\xHH` or `\uHHHH`. */
export function unsafeEscape(char: string): string {
  const code = char.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}
