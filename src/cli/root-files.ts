/**
 * The CLI's built-in capabilities, `read` and `list`, confined to one root directory so a guest runs
 * with no setup and cannot reach outside the directory it was given.
 */
import { isUtf8 } from "node:buffer";
import { constants, type Dirent, type Stats } from "node:fs";
import { lstat, open, readdir, readlink, realpath, stat, type FileHandle } from "node:fs/promises";
import { isAbsolute, normalize, relative, resolve, sep } from "node:path";
import { describeError } from "../protocol/errors.js";
import type { Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import type { Capabilities } from "../host/index.js";
import { Permits } from "./permits.js";

/** Failure codes the built-in file capabilities answer with. */
export const FileFailureCode = {
  /** Arguments are not `{path: string}` (read) or `{path?: string}` / null (list). */
  InvalidArguments: "InvalidArguments",
  /**
   * The path is absolute, climbs out with `..`, resolves (through a symlink) outside the root, or was
   * changed while it was opened so that what was opened is outside the root.
   */
  PathOutsideRoot: "PathOutsideRoot",
  /** Nothing exists at the path. */
  NotFound: "NotFound",
  /** `read` of a directory, named pipe, socket or device: only regular files are read. */
  NotAFile: "NotAFile",
  /** `list` of something that is not a directory. */
  NotADirectory: "NotADirectory",
  /** The file's bytes are not valid UTF-8 text. */
  NotUtf8: "NotUtf8",
  /**
   * The file is larger than the cap (or grew past it while it was read), which keeps the reply well under
   * the guest's frame limit.
   */
  FileTooLarge: "FileTooLarge",
  /** Any other file-system error (permissions, I/O); the content says which. */
  FileSystemError: "FileSystemError",
} as const;

/** Options for {@link rootFiles}. */
export interface RootFilesOptions {
  /** Largest file `read` returns, in bytes. Default 16 MiB. */
  maxFileBytes?: number;
  /**
   * Check each opened descriptor through `/proc/self/fd` (Linux). Default: used when it works for the root.
   * `false` forces the portable check (device and inode against a fresh resolution) that other platforms
   * get, so its behaviour can be tested on Linux too.
   */
  descriptorPaths?: boolean;
}

/** One entry of a `list` reply's `structured` array. */
export interface ListEntry {
  name: string;
  type: "file" | "directory" | "symlink" | "other";
}

const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;

/**
 * How many built-in file operations run at once. libuv runs file-system calls on 4 threads by default:
 * two stay free for the rest of the host (the transcript, module handlers), and at most two file
 * buffers of up to `maxFileBytes + 1` bytes are held at once, however many reads a guest sends.
 */
export const CONCURRENT_FILE_OPERATIONS = 2;

/** Where Linux names the file behind each open descriptor of this process. */
const DESCRIPTOR_DIRECTORY = "/proc/self/fd";

/** First buffer for a read whose size fstat reported as tiny; it doubles up to `maxFileBytes + 1`. */
const FIRST_READ_BUFFER_BYTES = 64 * 1024;

// O_NONBLOCK: opening a named pipe with no writer (or a device) must not wait. O_NOCTTY: a terminal
// device under the root must not become the CLI's controlling terminal. O_NOFOLLOW: the resolved path's
// last component must not have become a link since it was resolved. (`?? 0`: absent on Windows.)
const OPEN_FILE = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0) | (constants.O_NOCTTY ?? 0);
const OPEN_DIRECTORY = OPEN_FILE | (constants.O_DIRECTORY ?? 0);

/**
 * `read` (`{path}` -> the file's UTF-8 text as content) and `list` (`{path?}` -> one name a line in
 * content, directories ending in `/`, and `structured` = [{name, type}] sorted by name) under `root`.
 * Paths are relative to the root; absolute paths, paths that climb out with `..`, and paths that
 * resolve outside the root through a symlink are refused with `PathOutsideRoot`. Rejects when the root
 * is not an existing directory.
 *
 * Confinement holds against concurrent renames and symlink swaps: the path is resolved, the result is
 * opened, and the OPENED DESCRIPTOR is checked against the root before anything is read from it; the
 * file is then read, and the directory listed, through that descriptor. Only regular files are read
 * (named pipes, sockets and devices are refused without blocking), at most `maxFileBytes + 1` bytes of
 * them, and at most {@link CONCURRENT_FILE_OPERATIONS} operations run at once (the rest wait, or give up
 * when their call's signal aborts).
 */
export async function rootFiles(root: string, options: RootFilesOptions = {}): Promise<Capabilities> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (error) {
    throw new Error(`the root ${root} cannot be used: ${describeError(error)}`, { cause: error });
  }
  if (!(await stat(realRoot)).isDirectory()) throw new Error(`the root ${root} is not a directory`);
  const byDescriptor = options.descriptorPaths ?? (await descriptorPathsWork(realRoot));
  const permits = new Permits(CONCURRENT_FILE_OPERATIONS);

  /**
   * Opens `path` under the root and answers with `use(handle)`, or with the failure to answer instead.
   * The handle is confirmed inside the root before `use` sees it, and always closed.
   */
  const withOpened = async (path: string, flags: number, use: (handle: FileHandle, real: string) => Promise<Outcome>): Promise<Outcome> => {
    const found = await locateInside(realRoot, path);
    if (typeof found !== "string") return found;
    let handle: FileHandle;
    try {
      handle = await open(found, flags);
    } catch (error) {
      return fsFailure(error, path);
    }
    try {
      const confirmed = byDescriptor ? await insideByDescriptor(realRoot, handle) : await insideByIdentity(realRoot, handle, found);
      if (!confirmed) return outsideRoot(path, "leads outside the root (it was changed while it was opened)");
      return await use(handle, found);
    } catch (error) {
      return fsFailure(error, path);
    } finally {
      await handle.close().catch(() => {});
    }
  };

  return {
    async read(args, ctx) {
      const path = pathArgument(args, "read", false);
      if (typeof path !== "string") return path;
      return permits.run(
        () =>
          withOpened(path, OPEN_FILE, async (handle) => {
            const info = await handle.stat();
            if (!info.isFile()) return Outcome.failure(FileFailureCode.NotAFile, `${path} is ${kindOf(info)}`);
            if (info.size > maxFileBytes) {
              return Outcome.failure(
                FileFailureCode.FileTooLarge,
                `${path} has ${info.size} bytes; read returns files of up to ${maxFileBytes} bytes`,
              );
            }
            const bytes = await readAtMost(handle, maxFileBytes + 1, info.size);
            if (bytes.length > maxFileBytes) {
              return Outcome.failure(
                FileFailureCode.FileTooLarge,
                `${path} grew past ${maxFileBytes} bytes while it was read; read returns files of up to ${maxFileBytes} bytes`,
              );
            }
            if (!isUtf8(bytes)) return Outcome.failure(FileFailureCode.NotUtf8, `${path} is not UTF-8 text; read returns text files only`);
            return Outcome.success(bytes.toString("utf8"));
          }),
        ctx?.signal,
      );
    },

    async list(args, ctx) {
      const path = pathArgument(args, "list", true);
      if (typeof path !== "string") return path;
      return permits.run(
        () =>
          withOpened(path, OPEN_DIRECTORY, async (handle, real) => {
            let dirents: Dirent[];
            if (byDescriptor) {
              // The descriptor's /proc name is the directory already opened and checked, whatever is renamed meanwhile.
              dirents = await readdir(`${DESCRIPTOR_DIRECTORY}/${handle.fd}`, { withFileTypes: true });
            } else {
              dirents = await readdir(real, { withFileTypes: true });
              // Best effort without /proc: the path must still name the opened directory after the listing.
              if (!(await insideByIdentity(realRoot, handle, real)))
                return outsideRoot(path, "leads outside the root (it was changed while it was listed)");
            }
            const entries: ListEntry[] = dirents
              .map(
                (d) =>
                  ({
                    name: d.name,
                    type: d.isFile() ? "file" : d.isDirectory() ? "directory" : d.isSymbolicLink() ? "symlink" : "other",
                  }) as const,
              )
              .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
            const content = entries.map((e) => (e.type === "directory" ? `${e.name}/` : e.name)).join("\n");
            return Outcome.success(content, entries as unknown as Json);
          }),
        ctx?.signal,
      );
    },
  };
}

/** True when `/proc/self/fd` names an opened descriptor of the root by the root's real path. */
async function descriptorPathsWork(realRoot: string): Promise<boolean> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(realRoot, OPEN_DIRECTORY);
    return (await readlink(`${DESCRIPTOR_DIRECTORY}/${handle.fd}`)) === realRoot;
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * Linux: the kernel's own name for the opened file is inside the root. The name is where the file is
 * now, so no rename between resolution and opening can make an outside file pass. A name the kernel
 * cannot give as a path (another mount namespace, a pipe) is not inside.
 */
async function insideByDescriptor(realRoot: string, handle: FileHandle): Promise<boolean> {
  const name = await readlink(`${DESCRIPTOR_DIRECTORY}/${handle.fd}`);
  return isAbsolute(name) && inside(realRoot, name);
}

/**
 * Without /proc: the path, resolved again, is still inside the root and names the same device and inode
 * as the opened descriptor. A swap timed between the second resolution and its lstat can still pass
 * (docs/cli.md says so).
 */
async function insideByIdentity(realRoot: string, handle: FileHandle, real: string): Promise<boolean> {
  const again = await realpath(real);
  if (!inside(realRoot, again)) return false;
  const [opened, named] = await Promise.all([handle.stat(), lstat(again)]);
  return opened.dev === named.dev && opened.ino === named.ino;
}

/**
 * Reads from the descriptor's start until end of file or until `limit` bytes are held, whichever comes
 * first, so a file that grows while it is read never costs more than `limit` bytes (plus the previous
 * buffer while one doubles).
 */
async function readAtMost(handle: FileHandle, limit: number, sizeHint: number): Promise<Buffer> {
  let buffer = Buffer.allocUnsafe(Math.min(limit, Math.max(sizeHint + 1, FIRST_READ_BUFFER_BYTES)));
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      if (length >= limit) return buffer;
      const larger = Buffer.allocUnsafe(Math.min(limit, length * 2));
      buffer.copy(larger, 0, 0, length);
      buffer = larger;
    }
    const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
    if (bytesRead === 0) return buffer.subarray(0, length);
    length += bytesRead;
  }
}

/** What a non-regular file is, for the `NotAFile` message. */
function kindOf(info: Stats): string {
  if (info.isDirectory()) return "a directory; use list";
  if (info.isFIFO()) return "a named pipe, not a regular file";
  if (info.isSocket()) return "a socket, not a regular file";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device, not a regular file";
  return "not a regular file";
}

/** The `path` argument, or the failure to answer with. `optional`: null / {} / absent path mean the root. */
function pathArgument(args: Json, name: string, optional: boolean): string | Outcome {
  const shape = optional ? '{"path": "dir"} (or null for the root)' : '{"path": "file.txt"}';
  if (optional && args === null) return ".";
  if (typeof args !== "object" || args === null || Array.isArray(args)) {
    return Outcome.failure(FileFailureCode.InvalidArguments, `${name} takes ${shape}, got ${JSON.stringify(args)}`);
  }
  const path = args.path;
  if (path === undefined && optional) return ".";
  if (typeof path !== "string" || path === "" || path.includes("\0")) {
    return Outcome.failure(FileFailureCode.InvalidArguments, `${name} takes ${shape}; "path" must be a non-empty string without NUL`);
  }
  return path;
}

/** The real path of `path` under `realRoot`, or the failure to answer with. */
async function locateInside(realRoot: string, path: string): Promise<string | Outcome> {
  const outside = (why: string) => outsideRoot(path, why);
  if (isAbsolute(path)) return outside("is an absolute path");
  // Judged on the path alone, so "../root-name/file" is refused too: it names what is outside.
  const normal = normalize(path);
  if (normal === ".." || normal.startsWith(`..${sep}`)) return outside("climbs out of the root with ..");
  let real: string;
  try {
    real = await realpath(resolve(realRoot, path));
  } catch (error) {
    return fsFailure(error, path);
  }
  if (!inside(realRoot, real)) return outside("leads outside the root through a symbolic link");
  return real;
}

function outsideRoot(path: string, why: string): Outcome {
  return Outcome.failure(FileFailureCode.PathOutsideRoot, `${path} ${why}; paths must stay inside the root`);
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (!isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`));
}

function fsFailure(error: unknown, path: string): Outcome {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return Outcome.failure(FileFailureCode.NotFound, `${path} does not exist under the root`);
  if (code === "ENOTDIR") {
    return Outcome.failure(FileFailureCode.NotADirectory, `${path} is not a directory (or a part of it is a file)`);
  }
  if (code === "ENXIO")
    return Outcome.failure(FileFailureCode.NotAFile, `${path} is not a regular file (a socket, or a device with no driver)`);
  if (code === "ELOOP") {
    return Outcome.failure(FileFailureCode.FileSystemError, `${path} cannot be resolved: too many levels of symbolic links (a loop?)`);
  }
  return Outcome.failure(FileFailureCode.FileSystemError, `${path}: ${describeError(error)}`);
}
