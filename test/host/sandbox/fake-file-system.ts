/**
 * A file system as data for the sandbox policy's in-process tests: paths to files, directories and
 * links, with realpath resolved the way the kernel does (component by component, links relative to
 * their directory, at most 40 hops).
 */
import { basename, dirname, isAbsolute, join, normalize } from "node:path";
import type { EntryKind, FileSystemView } from "../../../src/host/sandbox/file-system-view.js";

export type FakeEntry =
  | { kind: "file"; text?: string; executable?: boolean }
  | { kind: "directory" }
  | { kind: "link"; target: string }
  /** A socket, FIFO or device. */
  | { kind: "other" };

export class FakeFileSystem implements FileSystemView {
  readonly entries = new Map<string, FakeEntry>([["/", { kind: "directory" }]]);
  /** Each directory's entries' names, so that listing a directory does not scan every entry (trees of 200,000). */
  private readonly children = new Map<string, Set<string>>();
  /** Each directory's modification time: set when an entry is added to or removed from it. */
  readonly modified = new Map<string, number>();
  /** The clock `add` and `remove` stamp directories with; tests move it. */
  now = 0;

  /** Adds entries (parents are created as directories). `"dir/"` is a directory, `"->x"` a link to x, else a file. */
  constructor(tree: Record<string, string | FakeEntry> = {}) {
    for (const [path, entry] of Object.entries(tree)) this.add(path, entry);
  }

  add(path: string, entry: string | FakeEntry): this {
    const clean = normalize(path).replace(/\/$/, "") || "/";
    for (let at = dirname(clean); at !== "/" && !this.entries.has(at); at = dirname(at)) this.set(at, { kind: "directory" });
    const parsed: FakeEntry =
      typeof entry !== "string"
        ? entry
        : path.endsWith("/")
          ? { kind: "directory" }
          : entry.startsWith("->")
            ? { kind: "link", target: entry.slice(2) }
            : { kind: "file", text: entry };
    this.set(clean, parsed);
    this.modified.set(dirname(clean), this.now);
    return this;
  }

  private set(path: string, entry: FakeEntry): void {
    this.entries.set(path, entry);
    if (path === "/") return;
    const parent = dirname(path);
    if (!this.children.has(parent)) this.children.set(parent, new Set());
    this.children.get(parent)!.add(path.slice(parent === "/" ? 1 : parent.length + 1));
  }

  remove(path: string): this {
    const clean = normalize(path);
    for (const key of [...this.entries.keys()]) {
      if (key !== clean && !key.startsWith(`${clean}/`)) continue;
      this.entries.delete(key);
      this.children.delete(key);
      const parent = dirname(key);
      this.children.get(parent)?.delete(key.slice(parent === "/" ? 1 : parent.length + 1));
    }
    this.modified.set(dirname(clean), this.now);
    return this;
  }

  changedMs(path: string): number | undefined {
    const entry = this.entries.get(normalize(path));
    return entry === undefined ? undefined : (this.modified.get(normalize(path)) ?? 0);
  }

  /** lstat: links in the parent directories are followed, the last one not. */
  kind(path: string): EntryKind | undefined {
    const clean = normalize(path);
    const own = this.entries.get(clean);
    if (own !== undefined || clean === "/") return own?.kind;
    try {
      return this.entries.get(join(this.realpath(dirname(clean)), basename(clean)))?.kind;
    } catch {
      return undefined;
    }
  }

  targetKind(path: string): EntryKind | undefined {
    try {
      return this.entries.get(this.realpath(path))?.kind;
    } catch {
      return undefined;
    }
  }

  realpath(path: string): string {
    let hops = 0;
    const walk = (parts: string[]): string => {
      let at = "/";
      for (let i = 0; i < parts.length; i++) {
        const next = join(at, parts[i]!);
        const entry = this.entries.get(next);
        if (entry === undefined)
          throw Object.assign(new Error(`ENOENT: no such file or directory, realpath '${path}'`), { code: "ENOENT" });
        if (entry.kind === "link") {
          if (++hops > 40) throw new Error(`ELOOP: too many symbolic links, realpath '${path}'`);
          const target = isAbsolute(entry.target) ? entry.target : join(at, entry.target);
          at = walk(split(target));
        } else at = next;
      }
      return at;
    };
    return walk(split(normalize(path)));
  }

  readlink(path: string): string {
    const entry = this.entries.get(normalize(path));
    if (entry?.kind !== "link") throw new Error(`EINVAL: invalid argument, readlink '${path}'`);
    return entry.target;
  }

  list(path: string): { name: string; kind: EntryKind }[] {
    const dir = normalize(path);
    if (this.entries.get(dir)?.kind !== "directory") return [];
    return [...(this.children.get(dir) ?? [])].map((name) => ({ name, kind: this.entries.get(join(dir, name))!.kind }));
  }

  read(path: string): string | undefined {
    try {
      const entry = this.entries.get(this.realpath(path));
      return entry?.kind === "file" ? (entry.text ?? "") : undefined;
    } catch {
      return undefined;
    }
  }

  executable(path: string): boolean {
    try {
      const entry = this.entries.get(this.realpath(path));
      return entry?.kind === "file" && entry.executable === true;
    } catch {
      return false;
    }
  }
}

function split(path: string): string[] {
  return path.split("/").filter((part) => part !== "" && part !== ".");
}
