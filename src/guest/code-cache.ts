/**
 * The code runner's V8 code cache (issue 33): the bytecode V8 made for the runner while it served a session at
 * build time, so a fresh runner neither parses nor compiles its own code again, for its start or for its first
 * calls (each function V8 compiles lazily, the first time it runs). Measured here: a fresh runner's calls about
 * a third cheaper each (docs/code.md, "Start-up").
 *
 * The cache is made once, by the build (scripts/runner-cache.mjs), into the package's dist/ beside the runner;
 * no runner ever writes one. A runner writes only where a body can write too, so a cache made at run time could
 * be poisoned by one body for every later run. dist/ is read-only inside the sandbox.
 *
 * V8 checks a cache against its own version and flags and against the source's length only, not its text:
 * bytecode for a source edited in place to the same length would be taken as it is. So the cache file holds the
 * exact source it was made from, and is used only when that equals, byte for byte, the runner source being loaded
 * ({@link cachedDataFor}). The file is named by the V8 that made it (runnerCacheFile), and a runner reads only its
 * own V8's: another Node's cache is never read. A cache V8 refuses anyway (other V8 flags) costs only the
 * compiling it would have saved. The file: {@link MAGIC}, the source's length (uint32, little-endian), the source, V8's data.
 */

// The runner's file names are what the host and the runner agree on: protocol/code-body.ts holds them.
export { runnerCacheFile, RUNNER_MAIN_FILE, RUNNER_START_FILE } from "../protocol/code-body.js";

const MAGIC = Buffer.from("ears-v8-code-cache 1\n", "latin1");
const HEADER = MAGIC.length + 4;

/** The runner's source as Node's CommonJS loader would wrap it, for `vm.Script`: the same text at build and run time. */
export function wrapCommonJs(source: string): string {
  return `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
}

/** The cache file for V8's `data`, made from exactly `source` (the runner's bytes as read from disk). */
export function encodeRunnerCache(source: Uint8Array, data: Uint8Array): Buffer {
  const header = Buffer.alloc(HEADER);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(source.length, MAGIC.length);
  return Buffer.concat([header, source, data]);
}

/**
 * V8's data from the cache file `cache`, when it was made from exactly `source`; undefined for no file, another
 * format, a truncated file, or any other source. Compares natively (Buffer.equals): a few microseconds.
 */
export function cachedDataFor(cache: Buffer | undefined, source: Buffer): Buffer | undefined {
  if (cache === undefined || cache.length <= HEADER + source.length) return undefined;
  if (!cache.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
  if (cache.readUInt32LE(MAGIC.length) !== source.length) return undefined;
  if (!cache.subarray(HEADER, HEADER + source.length).equals(source)) return undefined;
  return cache.subarray(HEADER + source.length);
}
