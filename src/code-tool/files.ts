/**
 * The files a code body names in its result (docs/cli.md, "Sessions in ears mcp"; docs/frameworks.md,
 * "Sessions"): a string of the result that is exactly the workspace-relative path of a regular file of the
 * session's workspace names that file, and an image is known by its first bytes, never its name. Every
 * code tool hands such files back the way its framework expects (MCP content, AI SDK content parts).
 */
import { readSessionFile, relativePath, type Session } from "../host/workspace/index.js";

/** Values of a result the walk for names looks at, at most (every array, object, string, number...). */
export const MAX_WALK_VALUES = 10_000;
/** Strings that could be paths the walk checks against the workspace, at most. */
export const MAX_CANDIDATES = 100;
/** The longest string taken for a path (Linux's PATH_MAX). */
const MAX_PATH_CHARS = 4096;

/** The image type of bytes by their signature (PNG, JPEG, GIF, WebP), or undefined. */
export function imageType(bytes: Uint8Array): string | undefined {
  const starts = (signature: number[], at = 0) => signature.every((byte, i) => bytes[at + i] === byte);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (starts([0xff, 0xd8, 0xff])) return "image/jpeg";
  if (starts([0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return "image/gif";
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "image/webp";
  return undefined;
}

/**
 * The strings of a result that could name a workspace file, in order and without repeats: the content,
 * then the strings of `structured` depth first. Bounded: {@link MAX_WALK_VALUES} values looked at and
 * {@link MAX_CANDIDATES} strings kept; each kept one is its normal relative form.
 */
export function namedPaths(content: string, structured: unknown): string[] {
  const found = new Set<string>();
  let visited = 0;
  const consider = (text: string) => {
    if (text === "" || text.length > MAX_PATH_CHARS) return;
    let path: string;
    try {
      path = relativePath(text, "name");
    } catch {
      return; // absolute, climbing out with .., or holding NUL: never a name
    }
    if (path !== "") found.add(path);
  };
  consider(content);
  // An explicit stack: a deeply nested result must not overflow the call stack.
  const stack: unknown[] = [structured];
  while (stack.length > 0 && visited < MAX_WALK_VALUES && found.size < MAX_CANDIDATES) {
    const value = stack.pop();
    visited++;
    if (typeof value === "string") consider(value);
    else if (Array.isArray(value)) for (let i = value.length - 1; i >= 0; i--) stack.push(value[i]);
    else if (typeof value === "object" && value !== null) {
      const values = Object.values(value);
      for (let i = values.length - 1; i >= 0; i--) stack.push(values[i]);
    }
  }
  return [...found].slice(0, MAX_CANDIDATES);
}

/** Images handed back with one result, at most. */
export const MAX_IMAGES = 20;

/**
 * The images a result names in `session`'s workspace, read whole while their base64 fits in `budget`
 * bytes (in the result's order; one that does not fit, changed while read, or is no regular file is left
 * out: the host can still read it with `session.readFile`).
 */
export async function namedImages(
  session: Session,
  content: string,
  structured: unknown,
  budget: number,
): Promise<{ path: string; mediaType: string; data: string }[]> {
  const images: { path: string; mediaType: string; data: string }[] = [];
  let left = budget;
  for (const path of namedPaths(content, structured)) {
    if (images.length >= MAX_IMAGES) break;
    const head = await readSessionFile(session, path, 0).catch(() => undefined);
    if (head === undefined) continue;
    const mediaType = imageType(head.complete ? head.bytes : head.head);
    if (mediaType === undefined || 4 * Math.ceil(head.size / 3) > left) continue;
    const read = await readSessionFile(session, path, head.size).catch(() => undefined);
    if (read?.complete !== true || imageType(read.bytes) !== mediaType) continue;
    const data = read.bytes.toString("base64");
    images.push({ path, mediaType, data });
    left -= data.length;
  }
  return images;
}
