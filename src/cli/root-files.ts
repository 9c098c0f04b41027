/**
 * The CLI's built-in capabilities, `read` and `list`, confined to one root directory so a guest runs
 * with no setup and cannot reach outside the directory it was given.
 */
import { isUtf8 } from "node:buffer";
import { constants, type Dirent } from "node:fs";
import { open, readdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, normalize, relative, resolve, sep } from "node:path";
import { describeError } from "../errors.js";
import type { Json } from "../json.js";
import { Outcome } from "../outcome.js";
import type { Capabilities } from "../host/index.js";

/** Failure codes the built-in file capabilities answer with. */
export const FileFailureCode = {
  /** Arguments are not `{path: string}` (read) or `{path?: string}` / null (list). */
  InvalidArguments: "InvalidArguments",
  /** The path is absolute, climbs out with `..`, or resolves (through a symlink) outside the root. */
  PathOutsideRoot: "PathOutsideRoot",
  /** Nothing exists at the path. */
  NotFound: "NotFound",
  /** `read` of a directory or other non-regular file. */
  NotAFile: "NotAFile",
  /** `list` of something that is not a directory. */
  NotADirectory: "NotADirectory",
  /** The file's bytes are not valid UTF-8 text. */
  NotUtf8: "NotUtf8",
  /** The file is larger than the cap, which keeps the reply well under the guest's frame limit. */
  FileTooLarge: "FileTooLarge",
  /** Any other file-system error (permissions, I/O); the content says which. */
  FileSystemError: "FileSystemError",
} as const;

/** Options for {@link rootFiles}. */
export interface RootFilesOptions {
  /** Largest file `read` returns, in bytes. Default 16 MiB. */
  maxFileBytes?: number;
}

/** One entry of a `list` reply's `structured` array. */
export interface ListEntry {
  name: string;
  type: "file" | "directory" | "symlink" | "other";
}

const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;

/**
 * `read` (`{path}` -> the file's UTF-8 text as content) and `list` (`{path?}` -> one name a line in
 * content, directories ending in `/`, and `structured` = [{name, type}] sorted by name) under `root`.
 * Paths are relative to the root; absolute paths, paths that climb out with `..`, and paths that
 * resolve outside the root through a symlink are refused with `PathOutsideRoot`. Rejects when the root
 * is not an existing directory.
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

  const locate = (path: string) => locateInside(realRoot, path);

  return {
    async read(args) {
      const path = pathArgument(args, "read", false);
      if (typeof path !== "string") return path;
      const found = await locate(path);
      if (typeof found !== "string") return found;
      let handle;
      try {
        // O_NOFOLLOW: the checked real path must not have become a symlink since it was resolved.
        handle = await open(found, constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (error) {
        return fsFailure(error, path);
      }
      try {
        const info = await handle.stat();
        if (!info.isFile()) {
          return Outcome.failure(FileFailureCode.NotAFile, `${path} is ${info.isDirectory() ? "a directory; use list" : "not a regular file"}`);
        }
        if (info.size > maxFileBytes) {
          return Outcome.failure(FileFailureCode.FileTooLarge, `${path} has ${info.size} bytes; read returns files of up to ${maxFileBytes} bytes`);
        }
        const bytes = await handle.readFile();
        if (!isUtf8(bytes)) return Outcome.failure(FileFailureCode.NotUtf8, `${path} is not UTF-8 text; read returns text files only`);
        return Outcome.success(bytes.toString("utf8"));
      } catch (error) {
        return fsFailure(error, path);
      } finally {
        await handle.close();
      }
    },

    async list(args) {
      const path = pathArgument(args, "list", true);
      if (typeof path !== "string") return path;
      const found = await locate(path);
      if (typeof found !== "string") return found;
      let dirents: Dirent[];
      try {
        dirents = await readdir(found, { withFileTypes: true });
      } catch (error) {
        return fsFailure(error, path);
      }
      const entries: ListEntry[] = dirents
        .map((d) => ({ name: d.name, type: d.isFile() ? "file" : d.isDirectory() ? "directory" : d.isSymbolicLink() ? "symlink" : "other" }) as const)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const content = entries.map((e) => (e.type === "directory" ? `${e.name}/` : e.name)).join("\n");
      return Outcome.success(content, entries as unknown as Json);
    },
  };
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
  const outside = (why: string) => Outcome.failure(FileFailureCode.PathOutsideRoot, `${path} ${why}; paths must stay inside the root`);
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
  if (code === "ELOOP") {
    return Outcome.failure(FileFailureCode.FileSystemError, `${path} cannot be resolved: too many levels of symbolic links (a loop?)`);
  }
  return Outcome.failure(FileFailureCode.FileSystemError, `${path}: ${describeError(error)}`);
}
