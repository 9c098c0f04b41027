/**
 * `runCode({ typecheck: true })`: checks a body's types against a contract's declarations with the
 * project's own TypeScript (the `typescript` package, an optional peer dependency, found only when
 * asked), in the host's warm checker process (warm-checker.ts), which keeps the host's memory out of it.
 */
import { clip } from "../../protocol/text.js";
import { looseDeclarations } from "../../contract/declarations.js";
import { isContract, type Contract, type StandardSchemaV1 } from "../../contract/contract.js";
import { MissingPeerError, placeInBody } from "./compile.js";
import { installedTypeScript, warmChecker } from "./warm-checker.js";

/** Wraps the body for tsc on its own first line, so tsc's positions are the body's (line 1 less the prefix). */
const CHECK_PREFIX = "async function __earsBody() {";
const CHECK_SUFFIX = "\n}\nexport {};\n";
/** At most this many type errors are named in the failure message. */
const MAX_SHOWN = 10;
/** Each error's text is cut here (an overload error can explain itself at length). */
const MAX_ERROR_CHARS = 600;

/** An error about reading a call's `structured` before its `status` narrowed it to the success. */
const STRUCTURED_BEFORE_STATUS =
  /\.structured' is possibly|does not exist on type '[^']*Json\[\]|structured' does not exist on type 'Failure'/;
/** What to do about it, added once to the message. */
const CHECK_STATUS_FIRST =
  "hint: a call resolves to a success or a failure; check its status before reading structured " +
  '(`const r = await ears.call(...); if (r.status === "failure") return r;`), then r.structured has the type the capability declares';

/**
 * What a body has in scope besides `ears`, `input` and `Outcome`, for the checker: the standard library and
 * the DOM's (console, timers, fetch, URL, AbortSignal, TextEncoder, ...) come from `lib`; this adds what a
 * body reaches of Node without `@types/node` (not loaded): `process` (its `getBuiltinModule`, which the docs
 * and the import error tell a body to use, returns an untyped module), `Buffer`, `setImmediate`. Appended
 * to the declarations, so their positions stay what they were.
 */
export const BODY_ENVIRONMENT = `
/** Node's process, as far as a code body uses it. */
declare const process: {
  /** A built-in module (a body cannot import or require): \`process.getBuiltinModule("node:fs")\`. Untyped. */
  getBuiltinModule(id: string): any;
  readonly env: { readonly [name: string]: string | undefined };
  readonly argv: readonly string[];
  readonly platform: string;
  readonly arch: string;
  readonly version: string;
  readonly versions: { readonly [name: string]: string | undefined };
  readonly pid: number;
  cwd(): string;
  uptime(): number;
  memoryUsage(): { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  hrtime: { (time?: [number, number]): [number, number]; bigint(): bigint };
  nextTick(callback: (...args: any[]) => void, ...args: any[]): void;
};
/** Node's Buffer. Untyped. */
declare const Buffer: any;
declare function setImmediate(callback: (...args: any[]) => void, ...args: any[]): unknown;
declare function clearImmediate(handle: unknown): void;
`;

/** Throws {@link MissingPeerError} saying what to install when TypeScript is not installed. */
export function requireTypeScript(): void {
  if (installedTypeScript() === undefined) {
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
 * listing its type errors (`code.ts:LINE:COLUMN: message`). The host's warm checker does the work
 * (warm-checker.ts): the first check starts it, the next ones reuse it.
 */
export async function typecheckBody(body: string, declarations: string, signal: AbortSignal | undefined): Promise<string | undefined> {
  const result = await warmChecker().check(`${declarations}${BODY_ENVIRONMENT}`, `${CHECK_PREFIX}${body}${CHECK_SUFFIX}`, signal);
  if ("failed" in result) return `typecheck: tsc failed: ${result.failed}`;
  if ("refused" in result) return `typecheck: ${result.refused}`;
  // Each error with its explanation (which overload failed and why) on one line.
  const errors = result.errors.map(({ line, column, code, parts }) => {
    const text = clip(
      parts
        .map((part) => part.trim())
        .filter((part) => part !== "")
        .join(" "),
      MAX_ERROR_CHARS,
    );
    // tsc's column is 1-based; on line 1 it counts the prefix too.
    return `${placeInBody(body, line, column - 1 - (line === 1 ? CHECK_PREFIX.length : 0))}: ${text} (TS${code})`;
  });
  if (errors.length === 0)
    return result.other.length === 0 ? undefined : `typecheck: tsc failed: ${result.other.join("\n").slice(0, 1000)}`;
  const more = errors.length > MAX_SHOWN ? `; and ${errors.length - MAX_SHOWN} more` : "";
  return `type errors: ${errors.slice(0, MAX_SHOWN).join("; ")}${more}${typeErrorHint(errors)}`;
}

/** @internal The hint added after the type errors (issue 29 item 13), or "": one reading for the checker and its test oracle. */
export function typeErrorHint(errors: readonly string[]): string {
  return errors.some((error) => STRUCTURED_BEFORE_STATUS.test(error)) ? `; ${CHECK_STATUS_FIRST}` : "";
}
