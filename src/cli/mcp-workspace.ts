/**
 * `ears mcp`'s session files (issue 32): the files a body names in its result go back to the client, images
 * as MCP image content and other files as `resource_link`s, which `resources/read` serves from the
 * session's workspace; `resources/list` lists the workspace. docs/cli.md, "Sessions in ears mcp", is the
 * contract this file implements:
 *
 * - A file is **named** when a string of the result (the outcome's content, then every string of its
 *   `structured` value, depth first, in order) is exactly the workspace-relative path of a regular file of
 *   the workspace after the run (`chart.png`, `./out/chart.png`). Absolute paths and paths climbing out
 *   with `..` are never names; the walk looks at {@link MAX_WALK_VALUES} values and
 *   {@link MAX_CANDIDATES} strings that could be paths, and attaches at most {@link MAX_ATTACHED} files.
 * - An **image** is a file whose first bytes are PNG's, JPEG's, GIF's or WebP's signature (never its name).
 *   Images go inline while they and the text fit `--max-result` together (counted as their base64); one
 *   that does not is linked instead, and the text says so.
 * - Reads never follow a link (the workspace is sanitized after every run, and each read refuses one) and
 *   are bounded: {@link MAX_RESOURCE_BYTES} for `resources/read`.
 */
import { byteSize } from "../protocol/text.js";
import { readSessionFile, type Session } from "../host/workspace/index.js";
import { imageType, MAX_CANDIDATES, MAX_WALK_VALUES, namedPaths } from "../code-tool/files.js";

// Which strings of a result name files, and what an image is, are every code tool's: src/code-tool/files.ts.
export { imageType, MAX_CANDIDATES, MAX_WALK_VALUES, namedPaths };
/** Files attached to one result, at most (images and links together). */
export const MAX_ATTACHED = 20;
/** The largest file `resources/read` sends (as base64 it stays well within one MCP message, 8 MiB). */
export const MAX_RESOURCE_BYTES = 4 * 1024 * 1024;
/** Files `resources/list` gives in one page. */
export const LIST_PAGE = 500;
/** The scheme of a session file's URI: `ears-workspace:///out/chart.png`. */
export const WORKSPACE_URI_PREFIX = "ears-workspace:///";

/** A session file's URI: its relative path, each segment percent-encoded. */
export function workspaceUri(path: string): string {
  return WORKSPACE_URI_PREFIX + path.split("/").map(encodeURIComponent).join("/");
}

/** The relative path a URI of {@link workspaceUri}'s names, or undefined for a URI that is not one (another scheme, bad escapes). */
export function pathOfUri(uri: string): string | undefined {
  if (!uri.startsWith(WORKSPACE_URI_PREFIX)) return undefined;
  try {
    return uri.slice(WORKSPACE_URI_PREFIX.length).split("/").map(decodeURIComponent).join("/");
  } catch {
    return undefined;
  }
}

/** The MIME type a resource is sent with: an image's by its bytes, else text/plain for UTF-8 text, else octet-stream. */
function mimeTypeOf(bytes: Buffer): string {
  return imageType(bytes) ?? (isUtf8Text(bytes) ? "text/plain" : "application/octet-stream");
}

function isUtf8Text(bytes: Buffer): boolean {
  return !bytes.includes(0) && Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes);
}

/** An MCP content item `ears mcp` adds to a tool result. */
export type FileContent =
  { type: "image"; data: string; mimeType: string } | { type: "resource_link"; uri: string; name: string; mimeType?: string; size: number };

/** base64's length for `bytes` bytes. */
function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/**
 * The content items for the files a result names (see the file's comment), and the sentences for the text
 * about what was not sent inline and why. `budget` is what `--max-result` leaves after the text (bytes).
 */
export async function attachmentsOf(
  session: Session,
  content: string,
  structured: unknown,
  budget: number,
  maxResultBytes: number,
): Promise<{ items: FileContent[]; notes: string[] }> {
  const items: FileContent[] = [];
  const notes: string[] = [];
  let left = Math.max(0, budget);
  let more = 0;
  for (const path of namedPaths(content, structured)) {
    // The first bytes say what the file is; a name that is no regular file of the workspace is just a string.
    const head = await readSessionFile(session, path, 0).catch(() => undefined);
    if (head === undefined) continue;
    if (items.length >= MAX_ATTACHED) {
      more++;
      continue;
    }
    const firstBytes = head.complete ? head.bytes : head.head;
    const link: FileContent = { type: "resource_link", uri: workspaceUri(path), name: path, size: head.size };
    const linkBytes = JSON.stringify(link).length;
    const image = imageType(firstBytes);
    if (image !== undefined) {
      if (base64Length(head.size) <= left) {
        const read = await readSessionFile(session, path, Math.floor((left / 4) * 3)).catch(() => undefined);
        if (read?.complete === true && imageType(read.bytes) === image) {
          items.push({ type: "image", data: read.bytes.toString("base64"), mimeType: image });
          left -= base64Length(read.size);
          continue;
        }
        if (read?.complete === false && read.grew) {
          notes.push(`${path} was not attached: it changed while it was read.`);
          continue;
        }
        if (read === undefined) continue;
      }
      notes.push(
        `${path} (${image}, ${byteSize(head.size)}) was not sent as an image: with the rest of the result it passes ` +
          `the ${byteSize(maxResultBytes)} of --max-result; it is linked as ${link.uri} instead (resources/read).`,
      );
    }
    if (linkBytes > left) {
      notes.push(`${path} was not linked: the result has no room left within --max-result (${byteSize(maxResultBytes)}).`);
      continue;
    }
    items.push(image === undefined ? link : { ...link, mimeType: image });
    left -= linkBytes;
  }
  if (more > 0) notes.push(`${more} more named ${more === 1 ? "file was" : "files were"} not attached (at most ${MAX_ATTACHED} a result).`);
  return { items, notes };
}

/** Why a resources/read was refused: the message and the JSON-RPC code (MCP's -32002 "resource not found", or invalid params). */
export class ResourceRefusal extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}
const RESOURCE_NOT_FOUND = -32002;
const INVALID_PARAMS = -32602;

/** `resources/read` of a session file: text for UTF-8, else a base64 blob. Throws {@link ResourceRefusal}. */
export async function readResource(
  session: Session,
  uri: string,
): Promise<{ contents: ({ uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string })[] }> {
  const path = pathOfUri(uri);
  if (path === undefined) {
    throw new ResourceRefusal(`${JSON.stringify(uri)} is not a session file; its URIs start with ${WORKSPACE_URI_PREFIX}`, INVALID_PARAMS);
  }
  let read;
  try {
    read = await readSessionFile(session, path, MAX_RESOURCE_BYTES);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR")
      throw new ResourceRefusal(`${uri}: no such file in the session's workspace`, RESOURCE_NOT_FOUND);
    // A path outside the workspace, a link, a directory or a special file: session.readFile's own words.
    throw new ResourceRefusal(`${uri}: ${(error as Error).message.replace(/^session\.readFile: /, "")}`, INVALID_PARAMS);
  }
  if (!read.complete) {
    throw new ResourceRefusal(
      read.grew
        ? `${uri}: the file changed while it was read; read it again when the body writing it is done`
        : `${uri} is ${byteSize(read.size)}, over the ${byteSize(MAX_RESOURCE_BYTES)} ears mcp sends in one resources/read; ` +
            "have a body write a smaller file (a summary, a part, a compressed copy)",
      INVALID_PARAMS,
    );
  }
  const mimeType = mimeTypeOf(read.bytes);
  return {
    contents: [
      mimeType === "text/plain"
        ? { uri, mimeType, text: read.bytes.toString("utf8") }
        : { uri, mimeType, blob: read.bytes.toString("base64") },
    ],
  };
}

/** `resources/list`: the workspace's files, by path, {@link LIST_PAGE} a page (the cursor is the index to go on from). */
export async function listResources(
  session: Session,
  cursor: string | undefined,
): Promise<{ resources: { uri: string; name: string; size: number }[]; nextCursor?: string }> {
  const start = cursor === undefined ? 0 : /^\d{1,9}$/.test(cursor) ? Number(cursor) : NaN;
  if (Number.isNaN(start)) throw new ResourceRefusal(`the cursor ${JSON.stringify(cursor)} is not one resources/list gave`, INVALID_PARAMS);
  const files: { uri: string; name: string; size: number }[] = [];
  // Walked until the page is full and one more is seen; the workspace's own file bound bounds the rest.
  const walk = async (dir: string): Promise<boolean> => {
    for (const entry of await session.list(dir)) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.type === "directory") {
        if (!(await walk(path))) return false;
      } else {
        files.push({ uri: workspaceUri(path), name: path, size: entry.size });
        if (files.length > start + LIST_PAGE) return false;
      }
    }
    return true;
  };
  const complete = await walk("");
  const page = files.slice(start, start + LIST_PAGE);
  return complete || files.length <= start + LIST_PAGE ? { resources: page } : { resources: page, nextCursor: String(start + LIST_PAGE) };
}
