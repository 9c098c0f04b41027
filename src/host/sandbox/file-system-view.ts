/**
 * What the sandbox policy may ask the file system, as one small interface: the policy is computed from
 * these answers, so tests give it a file system as data (test/host/sandbox/fake-file-system.ts) and
 * every rule can be checked in-process. `nodeFileSystem` is the real one.
 */
import { accessSync, constants, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";

/** What lstat says a path is; undefined when nothing is there (or it cannot be read). */
export type EntryKind = "file" | "directory" | "link" | "other";

export interface FileSystemView {
  /** lstat: the entry itself, a link not followed. */
  kind(path: string): EntryKind | undefined;
  /** stat: what the path leads to, links followed. */
  targetKind(path: string): EntryKind | undefined;
  /** The real path (every link resolved). Throws an Error saying why when it cannot be resolved. */
  realpath(path: string): string;
  /** A link's own text, unresolved. */
  readlink(path: string): string;
  /** A directory's entries with what each is (not following links); empty when it cannot be read. */
  list(path: string): { name: string; kind: EntryKind }[];
  /** A small file's text (links followed), or undefined. */
  read(path: string): string | undefined;
  /** Whether the path is an executable regular file. */
  executable(path: string): boolean;
  /** lstat's change time (ctime) in milliseconds (with its fraction), or undefined. */
  changedMs(path: string): number | undefined;
}

const kindOf = (stat: { isSymbolicLink(): boolean; isDirectory(): boolean; isFile(): boolean }): EntryKind =>
  stat.isSymbolicLink() ? "link" : stat.isDirectory() ? "directory" : stat.isFile() ? "file" : "other";

/** The host's file system. */
export const nodeFileSystem: FileSystemView = {
  kind(path) {
    try {
      return kindOf(lstatSync(path));
    } catch {
      return undefined;
    }
  },
  targetKind(path) {
    try {
      return kindOf(statSync(path));
    } catch {
      return undefined;
    }
  },
  realpath: (path) => realpathSync(path),
  readlink: (path) => readlinkSync(path),
  list(path) {
    try {
      // The kinds come with the names (d_type): no lstat per entry, which the mask walk would pay thousands of times.
      return readdirSync(path, { withFileTypes: true }).map((entry) => ({ name: entry.name, kind: kindOf(entry) }));
    } catch {
      return [];
    }
  },
  read(path) {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  },
  changedMs(path) {
    try {
      return lstatSync(path).ctimeMs;
    } catch {
      return undefined;
    }
  },
  executable(path) {
    try {
      accessSync(path, constants.X_OK);
      return statSync(path).isFile();
    } catch {
      return false;
    }
  },
};
