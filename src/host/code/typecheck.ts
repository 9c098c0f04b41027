/**
 * `runCode({ typecheck: true })`: checks a body's types against a contract's declarations with the
 * project's own `tsc` (the `typescript` package, an optional peer dependency, found only when asked).
 * tsc runs as a child process on a private temporary directory: that works the same with TypeScript
 * 5.x (a JavaScript compiler) and 7 (a native one with no in-process API), and keeps the host's memory
 * out of it.
 */
import { clip } from "../../protocol/text.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { looseDeclarations } from "../../contract/declarations.js";
import { isContract, type Contract, type StandardSchemaV1 } from "../../contract/contract.js";
import { describeError } from "../../protocol/errors.js";
import { MissingPeerError, placeInBody } from "./compile.js";
import { CODE_FILENAME } from "./wrapper.js";
import { runBounded } from "../bounded-child.js";

/** Wraps the body for tsc on its own first line, so tsc's positions are the body's (line 1 less the prefix). */
const CHECK_PREFIX = "async function __earsBody() {";
const CHECK_SUFFIX = "\n}\nexport {};\n";
/** At most this many type errors are named in the failure message. */
const MAX_SHOWN = 10;
/** Each error's text is cut here (an overload error can explain itself at length). */
const MAX_ERROR_CHARS = 600;
/** tsc gets this long; a checker that hangs must not hold the run forever. */
const TSC_TIMEOUT_MS = 60_000;
/** tsc ends at once on SIGTERM; SIGKILL follows after this for one that does not. */
const TSC_KILL_GRACE_MS = 1000;
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** tsc's binary script, or undefined when the `typescript` package is not installed. */
function tscPath(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc");
  } catch {
    return undefined;
  }
}

/** Throws {@link MissingPeerError} saying what to install when TypeScript is not installed. */
export function requireTypeScript(): void {
  if (tscPath() === undefined) {
    throw new MissingPeerError(
      "runCode({ typecheck: true }) needs typescript, an optional peer dependency that is not installed: npm install typescript " +
        "(the host runs tsc when it runs code, so it is not only a development tool)",
    );
  }
}

/**
 * The declarations a body is checked against: the contract's (with `input` typed by `inputSchema`), or
 * an untyped `ears` without a contract. Throws a TypeError for a value that is not a contract, or a
 * schema without Standard JSON Schema.
 */
export function checkDeclarations(
  contract: Contract | undefined,
  inputSchema: StandardSchemaV1 | undefined,
  allowed: readonly string[] | undefined,
): string {
  if (contract === undefined) {
    if (inputSchema !== undefined) throw new TypeError("runCode: options.inputSchema types input for typecheck and needs options.contract");
    return looseDeclarations();
  }
  if (!isContract(contract)) throw new TypeError("runCode: options.contract must be a contract made by defineCapabilities");
  // Only what the run allows type-checks, as only that is answered; allowed names outside the contract are
  // other capabilities the host gives, which the contract cannot type (runGuest has checked `allowed` itself).
  const offered = allowed === undefined ? undefined : contract.names.filter((name) => allowed.includes(name));
  return contract.declarations({ ...(inputSchema === undefined ? {} : { input: inputSchema }), ...(offered && { allowed: offered }) });
}

/**
 * Resolves with undefined when the body type-checks against `declarations`, else with the sentence
 * listing its type errors (`code.ts:LINE:COLUMN: message`).
 */
export async function typecheckBody(body: string, declarations: string, signal: AbortSignal | undefined): Promise<string | undefined> {
  const tsc = tscPath();
  if (tsc === undefined) return "typescript is no longer installed"; // requireTypeScript() found it before the run
  const dir = mkdtempSync(join(tmpdir(), "ears-typecheck-"));
  try {
    writeFileSync(join(dir, "ears.d.ts"), declarations);
    writeFileSync(join(dir, CODE_FILENAME), `${CHECK_PREFIX}${body}${CHECK_SUFFIX}`);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: "ES2022",
          module: "ESNext",
          moduleResolution: "Bundler",
          lib: ["ES2023", "DOM"],
          types: [],
          skipLibCheck: true,
          // Resolve nothing a body names (a type-level import("/abs/path"), a reference path): the check sees
          // only the body, the declarations and the standard library, never a host file.
          noResolve: true,
        },
        files: ["ears.d.ts", CODE_FILENAME],
      }),
    );
    const { code, output } = await runTsc(tsc, dir, signal);
    if (code === 0) return undefined;
    // An error line, then its indented explanation (which overload failed and why): both are kept.
    const errors = [...output.matchAll(/^code\.ts\((\d+),(\d+)\): error (TS\d+): (.*)((?:\n[ \t]+.*)*)/gm)].map(
      ([, line, column, id, message, details]) => {
        const l = Number(line);
        const explained = [
          message,
          ...details!
            .split("\n")
            .map((part) => part.trim())
            .filter((part) => part !== ""),
        ].join(" ");
        const text = clip(explained, MAX_ERROR_CHARS);
        // tsc's column is 1-based; on line 1 it counts the prefix too.
        return `${placeInBody(body, l, Number(column) - 1 - (l === 1 ? CHECK_PREFIX.length : 0))}: ${text} (${id})`;
      },
    );
    if (errors.length === 0) return `typecheck: tsc failed: ${output.trim().slice(0, 1000) || `exit code ${code}`}`;
    const more = errors.length > MAX_SHOWN ? `; and ${errors.length - MAX_SHOWN} more` : "";
    return `type errors: ${errors.slice(0, MAX_SHOWN).join("; ")}${more}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs tsc in its own process group and resolves with its exit code and output. TypeScript 7's `bin/tsc`
 * is a Node script that starts the native compiler as its child, so a deadline or an abort stops the whole
 * group: nothing of the check outlives it. Output past 16 MiB is dropped (the errors come first).
 */
async function runTsc(tsc: string, dir: string, signal: AbortSignal | undefined): Promise<{ code: number; output: string }> {
  const end = await runBounded(
    process.execPath,
    [tsc, "-p", join(dir, "tsconfig.json"), "--pretty", "false"],
    { cwd: dir, stdio: ["ignore", "pipe", "pipe"] },
    {
      killGraceMs: TSC_KILL_GRACE_MS,
      timeoutMs: TSC_TIMEOUT_MS,
      timeoutReason: `tsc did not finish within ${TSC_TIMEOUT_MS / 1000} s`,
      signal,
      abortReason: "the run was aborted",
      output: { streams: ["stdout", "stderr"], maxBytes: MAX_OUTPUT_BYTES, keep: "first" },
      // The watchdog ends tsc and removes its directory (the model's code) should the host die first.
      group: { scratch: dir },
    },
  );
  if (end.spawnError !== undefined) return { code: 1, output: describeError(end.spawnError) };
  if (end.stopped !== undefined) return { code: 1, output: `${end.output}${end.stopped}` };
  return { code: end.exit?.code ?? 1, output: end.output };
}
