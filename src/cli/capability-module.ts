/** Loads `--capabilities ./module.js`: a user's JavaScript module whose exports are capability handlers. */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describeError } from "../protocol/errors.js";
import type { Capabilities, Capability } from "../host/index.js";
import { UsageError } from "./usage.js";

/**
 * Imports the module at `path` (relative to `cwd`) and returns its handlers: every named export that is
 * a function, plus the function-valued properties of a default export object (for names that are not
 * identifiers, e.g. "fs.read"). Throws {@link UsageError} when the module cannot be loaded, exports a
 * non-function under a handler name, or exports no handler at all.
 */
export async function loadCapabilityModule(path: string, cwd: string): Promise<Capabilities> {
  const file = resolve(cwd, path);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: string })?.code === "ERR_UNKNOWN_FILE_EXTENSION" && /\.[cm]?ts$/.test(file)) {
      throw new UsageError(
        `cannot load --capabilities module ${path}: Node ${process.versions.node} does not load TypeScript modules; ` +
          "compile it to .js or .mjs first, or run ears where .ts loads: NODE_OPTIONS=--import=tsx with tsx installed, " +
          "Node 22.6+ with --experimental-strip-types, Bun or Deno (docs/typescript.md)",
      );
    }
    throw new UsageError(`cannot load --capabilities module ${path}: ${describeError(error)}`);
  }
  const handlers: Capabilities = {};
  const take = (name: string, value: unknown, where: string) => {
    if (typeof value !== "function") {
      throw new UsageError(
        `--capabilities module ${path}: ${where} is ${value === null ? "null" : typeof value}, ` +
          "not a handler function (args, ctx) => outcome",
      );
    }
    handlers[name] = value as Capability;
  };
  const fallback = module.default;
  if (fallback !== undefined) {
    if (typeof fallback !== "object" || fallback === null) {
      throw new UsageError(
        `--capabilities module ${path}: the default export must be an object of handlers by name ` +
          `(or use named exports), got ${typeof fallback}`,
      );
    }
    for (const [name, value] of Object.entries(fallback)) take(name, value, `default export property ${JSON.stringify(name)}`);
  }
  for (const [name, value] of Object.entries(module)) {
    // __esModule appears when a CommonJS module compiled from ESM is imported.
    if (name === "default" || name === "__esModule") continue;
    take(name, value, `export ${JSON.stringify(name)}`);
  }
  if (Object.keys(handlers).length === 0) {
    throw new UsageError(`--capabilities module ${path} exports no handlers; export functions named after the capabilities`);
  }
  return handlers;
}
