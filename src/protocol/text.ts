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
