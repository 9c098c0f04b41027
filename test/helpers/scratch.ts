/**
 * For tests on real directories: scratch directories, made under the system's temporary directory and removed after
 * each test, and what a tree takes of the disk.
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";

/** Makes a fresh directory whose name starts with `prefix`, and notes it in `made`. */
export function makeScratchDir(prefix: string, made: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every directory noted in `made`, with all it holds, and empties the list. */
export function removeScratchDirs(made: string[]): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * A maker of scratch directories for the calling test file (call it at the file's top level: it registers an
 * `afterEach`): each directory it makes is removed, with all it holds, after the test that made it.
 */
export function scratchDirs(prefix: string): () => string {
  const made: string[] = [];
  afterEach(() => removeScratchDirs(made));
  return () => makeScratchDir(prefix, made);
}

/** What a tree takes of the disk: every entry's allocated blocks (st_blocks), links not followed. */
export function diskBytes(dir: string): number {
  let total = 0;
  const pending = [dir];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    for (const name of readdirSync(next)) {
      const stat = lstatSync(join(next, name));
      total += stat.blocks * 512;
      if (stat.isDirectory()) pending.push(join(next, name));
    }
  }
  return total;
}
