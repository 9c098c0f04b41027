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
