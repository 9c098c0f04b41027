/**
 * What the host and the code runner (src/guest/code-runner.ts, runCode's guest program) agree on: how a
 * code body becomes a function, and the one frame that hands the runner its body. The body is put on the
 * same line as the prefix, so its line numbers stay its own; the runner compiles with a first-line column
 * offset of minus the prefix, so its columns do too. Not part of protocol 1: only the code runner reads
 * the body frame (wire/PROTOCOL.md, "The code runner").
 */

/**
 * The runner's files in the package's dist/guest/: the runner itself (code-runner.ts bundled with the guest
 * runtime: one script, which Deno and Bun hosts start as it is), the start script a Node host starts instead
 * (code-runner-start.ts, which loads the runner with its code cache), and that cache (src/guest/code-cache.ts).
 */
export const RUNNER_MAIN_FILE = "code-runner.cjs";
/** See {@link RUNNER_MAIN_FILE}. */
export const RUNNER_START_FILE = "code-runner-cached.cjs";
/**
 * See {@link RUNNER_MAIN_FILE}: the cache for one V8, named by its version (`process.versions.v8`). V8 refuses a
 * cache another V8 made only after it was read, so each Node looks only for its own: a package built on Node 24
 * and run on Node 22 finds none and compiles the runner (a Node whose cache was made too, by `node
 * scripts/runner-cache.mjs` as in the CI's runs, finds its own).
 */
export function runnerCacheFile(v8: string): string {
  return `code-runner.v8-${v8.replace(/[^0-9A-Za-z.-]/g, "_")}.cache`;
}

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

/**
 * What a body whose global `fetch` failed is told: a sandboxed body has no network, so the global fails
 * with Node's bare "fetch failed" (the type checker's DOM library declares it all the same); the host's
 * `fetch` capability, where granted, is the way out.
 */
export const NO_NETWORK_HINT =
  "a sandboxed code body has no network of its own; " +
  'reach an HTTP API through ears.call("fetch", { url }) when the host grants fetch (it is then in the declarations)';

/** The type of the runner-only frame that carries the compiled body (wire/PROTOCOL.md, "The code runner"). */
export const BODY_FRAME_TYPE = "body";

/**
 * The line a host may write to the code runner before its body frame, exactly so, to say the runner has
 * time before its body (a run pool's runner, waiting): the runner then rehearses a made-up session in its
 * own process (src/guest/code-rehearsal.ts) and reads its body frame after it (wire/PROTOCOL.md, "The code runner").
 */
export const WARM_FRAME = '{"type":"warm"}';

/**
 * A session's workspace as the runner must find it at its working directory (a pooled runner's: the
 * host binds the workspace there after the runner started): the device and inode numbers of its top.
 */
export interface WorkspaceIdentity {
  dev: number;
  ino: number;
}

/**
 * The frame the host writes to the code runner after its hello and before the invoke: the compiled
 * JavaScript, and with `workspace` the identity the runner checks its working directory against first.
 */
export function encodeBodyFrame(javascript: string, workspace?: WorkspaceIdentity): string {
  return JSON.stringify({ type: BODY_FRAME_TYPE, javascript, ...(workspace && { workspace: { dev: workspace.dev, ino: workspace.ino } }) });
}

/** The JavaScript in a body frame (and the workspace it names), or why the line is not one. */
export function decodeBodyFrame(line: string): { javascript: string; workspace?: WorkspaceIdentity } | { problem: string } {
  let frame: unknown;
  try {
    frame = JSON.parse(line);
  } catch {
    return { problem: "the first line from the host is not JSON (the code runner expects its body frame first)" };
  }
  const { type, javascript, workspace } = (typeof frame === "object" && frame !== null ? frame : {}) as {
    type?: unknown;
    javascript?: unknown;
    workspace?: unknown;
  };
  if (type !== BODY_FRAME_TYPE || typeof javascript !== "string") {
    return {
      problem: `the first frame from the host is not a body frame ({"type":"body","javascript":"..."}); the code runner runs nothing else`,
    };
  }
  if (workspace === undefined) return { javascript };
  const { dev, ino } = (typeof workspace === "object" && workspace !== null ? workspace : {}) as { dev?: unknown; ino?: unknown };
  if (!Number.isSafeInteger(dev) || !Number.isSafeInteger(ino)) {
    return { problem: 'the body frame\'s workspace is not {"dev":N,"ino":N}; the code runner runs nothing else' };
  }
  return { javascript, workspace: { dev: dev as number, ino: ino as number } };
}
