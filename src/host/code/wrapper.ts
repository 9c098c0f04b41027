/**
 * How a code body becomes a function, shared by the host (which checks it) and the runner (which runs
 * it). The body is put on the same line as the prefix, so its line numbers stay its own; the runner
 * compiles with a first-line column offset of minus the prefix, so its columns do too.
 */

/** Text before the body: an async arrow, so `await` and `return` work at the body's top level. */
export const CODE_PREFIX = "(async (ears, input, Outcome) => {";
/** Text after the body, on a line of its own so a trailing `//` comment cannot swallow it. */
export const CODE_SUFFIX = "\n})";
/** The file name a body's positions are reported under (stack frames, compile errors). */
export const CODE_FILENAME = "code.ts";

/** The script that evaluates to the body's function. */
export function wrapBody(body: string): string {
  return `${CODE_PREFIX}${body}${CODE_SUFFIX}`;
}

/**
 * What a body that tries `import` or `require` is told: a body is a script, not a module (on Node 20 a
 * `vm.Script` has no `import()`), so Node's built-ins come through `process.getBuiltinModule`.
 */
export const NO_MODULES_HINT =
  "a code body cannot import or require modules; " +
  "use Node's built-ins through process.getBuiltinModule(\"node:fs\") (Node >= 20.16) and the host's tools through ears.call";
