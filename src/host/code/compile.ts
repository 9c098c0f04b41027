/**
 * Turns a submitted code body into JavaScript the runner can compile, in the host: TypeScript types are
 * replaced by whitespace (amaro, Node's own type stripper, loaded on first use), so every line and column
 * of the output is the body's own; then V8 compiles it (without running it) to catch what the stripper's
 * parser lets through. Any failure is a sentence naming `line:column` in the submitted body.
 */
import { createRequire } from "node:module";
import { Script } from "node:vm";
import { CODE_FILENAME, CODE_PREFIX, CODE_SUFFIX, NO_MODULES_HINT, wrapBody } from "../../protocol/code-body.js";

/** The verdict on a body: JavaScript with the body's own positions, or why it does not compile. */
export type Compiled = { ok: true; javascript: string } | { ok: false; message: string };

interface AmaroError {
  code?: string;
  message?: string;
  startLine?: number;
  startColumn?: number;
}
type Amaro = { transformSync(code: string, options: { mode: "strip-only" }): { code: string } };

/** A package runCode needs is not installed: the message says what to install. */
export class MissingPeerError extends Error {
  override name = "MissingPeerError";
}

let amaro: Amaro | undefined;
function stripper(): Amaro {
  if (amaro !== undefined) return amaro;
  try {
    // amaro is CommonJS with its WebAssembly inlined (about 200 ms to load): loaded only when a body is compiled.
    amaro = createRequire(import.meta.url)("amaro") as Amaro;
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === "MODULE_NOT_FOUND" && String((error as Error).message).includes("'amaro'")) {
      throw new MissingPeerError("runCode needs amaro, an optional peer dependency that is not installed: npm install amaro", {
        cause: error,
      });
    }
    throw error;
  }
  return amaro;
}

/** The AsyncFunction constructor: compiles a body as exactly one function body (no way to close it early). */
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => unknown;

/**
 * Strips the body's types and checks its syntax. Never throws for anything in the body.
 * TypeScript that needs more than stripping (enum, namespace with values, parameter properties) is
 * refused with the stripper's reason, as Node's own `--experimental-strip-types` does.
 */
export function compileBody(body: string): Compiled {
  const wrapped = wrapBody(body);
  let stripped: string;
  try {
    stripped = stripper().transformSync(wrapped, { mode: "strip-only" }).code;
  } catch (error) {
    const { message, startLine, startColumn } = (error ?? {}) as AmaroError;
    // Not a verdict on the body: the stripper itself failed.
    if (typeof startLine !== "number" || typeof startColumn !== "number") throw error;
    const column0 = utf16Column(wrapped, startLine, startColumn);
    return { ok: false, message: syntaxProblem(body, startLine, column0 - (startLine === 1 ? CODE_PREFIX.length : 0), String(message)) };
  }
  // Whitespace replacement keeps the wrapper itself as it was; anything else means the body reached into it.
  if (stripped.length !== wrapped.length || !stripped.startsWith(CODE_PREFIX) || !stripped.endsWith(CODE_SUFFIX)) {
    return { ok: false, message: `${CODE_FILENAME}: the code is not a function body (it changes the text around it)` };
  }
  const javascript = stripped.slice(CODE_PREFIX.length, stripped.length - CODE_SUFFIX.length);
  try {
    new Script(stripped, { filename: CODE_FILENAME });
  } catch (error) {
    return { ok: false, message: v8SyntaxMessage(body, error) };
  }
  try {
    // Compiled as one function body: a body that closes the wrapper early (`}); ...`) is refused here.
    new AsyncFunction("ears", "input", "Outcome", javascript);
  } catch (error) {
    return { ok: false, message: `${CODE_FILENAME}: the code is not one function body: ${(error as Error).message}` };
  }
  return { ok: true, javascript };
}

/**
 * amaro's column of an error on `line` as a UTF-16 index (what V8, the runtime stack and editors count).
 * amaro counts display columns (a tab is 4, 中 is 2, a combining mark 0), which cannot be inverted
 * exactly. So the text is stripped again with every non-ASCII code unit masked as "x" (line breaks kept
 * as breaks) and every tab as a space, where a display column is a UTF-16 index; when that copy fails on
 * the same line, its column is the answer. Otherwise (the error is the non-ASCII character itself) the
 * display column is walked back as closely as a character's UTF-8 length allows.
 */
function utf16Column(wrapped: string, line: number, displayColumn: number): number {
  const masked = wrapped
    .replace(/[\u2028\u2029]/g, "\n")
    .replace(/[^\x00-\x7f]/g, "x")
    .replace(/\t/g, " ");
  try {
    stripper().transformSync(masked, { mode: "strip-only" });
  } catch (error) {
    const { startLine, startColumn } = (error ?? {}) as AmaroError;
    if (startLine === line && typeof startColumn === "number") return startColumn;
  }
  const text = wrapped.split(/\r\n|[\n\r\u2028\u2029]/)[line - 1] ?? "";
  let counted = 0;
  let index = 0;
  for (const char of text) {
    if (counted >= displayColumn) break;
    counted += char === "\t" ? 4 : char.codePointAt(0)! < 0x80 ? 1 : Buffer.byteLength(char) - 1;
    index += char.length;
  }
  return index;
}

/**
 * V8's SyntaxError from vm.Script, with the position Node puts at the head of its stack:
 * "code.ts:LINE\n<source line>\n<spaces>^^^\n\nSyntaxError: ...".
 */
function v8SyntaxMessage(body: string, error: unknown): string {
  const { message, stack } = error as Error;
  const lines = String(stack).split("\n");
  const head = /^code\.ts:(\d+)$/.exec(lines[0] ?? "");
  const caret = lines[2]?.indexOf("^") ?? -1;
  if (head === null || caret < 0) return `${CODE_FILENAME}: ${message}`;
  const line = Number(head[1]);
  return syntaxProblem(body, line, caret - (line === 1 ? CODE_PREFIX.length : 0), message);
}

/** Where a syntax error is, and why, with the advice for a body that tries to import, and the line quoted. */
function syntaxProblem(body: string, line: number, column0: number, message: string): string {
  const hint = /'import', and 'export'/.test(message) ? `: ${NO_MODULES_HINT}` : "";
  return `${placeInBody(body, line, column0)}: ${message}${hint}${quoteAt(body, line, column0)}`;
}

/** The body's lines, split where JavaScript (and so V8, amaro and tsc) ends a line. */
function bodyLines(body: string): string[] {
  return body.split(/\r\n|[\n\r\u2028\u2029]/);
}

/** The longest stretch of a line quoted under an error; a longer line is cut around the column. */
const QUOTE_CHARS = 100;

/** The body's line at a position inside it, or undefined for a position in the text around the body. */
function lineAt(body: string, line: number, column0: number): string | undefined {
  const lines = bodyLines(body);
  const text = lines[line - 1];
  if (text === undefined || column0 < 0 || column0 > text.length) return undefined;
  // The last line's end is where the text after the body begins.
  return line === lines.length && column0 === text.length ? undefined : text;
}

/**
 * Names a position in the body (line 1-based, column 0-based, counted from the body's own start on
 * line 1) as `code.ts:LINE:COLUMN`. A position outside the body (a comment or string left open, or a
 * brace that closes the function, makes the parser fail in the text around it) is never given a number
 * the body does not have: it is "at the end of the code" (or the start).
 */
export function placeInBody(body: string, line: number, column0: number): string {
  if (lineAt(body, line, column0) !== undefined) return `${CODE_FILENAME}:${line}:${column0 + 1}`;
  return `${CODE_FILENAME} (at the ${line < 1 || (line === 1 && column0 < 0) ? "start" : "end"} of the code)`;
}

/**
 * The line of a position in the body, cut to {@link QUOTE_CHARS} around the column, with a caret under
 * the column (tabs kept, so it lines up), on lines of their own; "" for a position outside the body.
 */
function quoteAt(body: string, line: number, column0: number): string {
  const text = lineAt(body, line, column0);
  if (text === undefined) return "";
  let from = 0;
  let to = text.length;
  if (text.length > QUOTE_CHARS) {
    from = Math.max(0, Math.min(column0 - QUOTE_CHARS / 2, text.length - QUOTE_CHARS));
    to = from + QUOTE_CHARS;
  }
  const shown = `${from > 0 ? "…" : ""}${text.slice(from, to)}${to < text.length ? "…" : ""}`;
  const lead = `${from > 0 ? " " : ""}${text.slice(from, column0).replace(/[^\t]/g, " ")}`;
  return `\n  | ${shown}\n  | ${lead}^`;
}
