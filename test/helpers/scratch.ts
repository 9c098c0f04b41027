/** Scratch directories for tests on real directories: made under the system's temporary directory, removed after each test. */
import { mkdtempSync, rmSync } from "node:fs";
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
