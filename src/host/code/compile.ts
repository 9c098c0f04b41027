/**
 * Turns a submitted code body into JavaScript the runner can compile, in the host: TypeScript types are
 * replaced by whitespace (amaro, Node's own type stripper, loaded on first use in a worker thread of its
 * own, bounded in time), so every line and column of the output is the body's own; then V8 compiles it
 * (without running it) to catch what the stripper's parser lets through. Any failure is a sentence
 * naming `line:column` in the submitted body, or saying what to change.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { Script } from "node:vm";
import { describeError } from "../../protocol/errors.js";
import { CODE_FILENAME, CODE_PREFIX, CODE_SUFFIX, NO_MODULES_HINT, wrapBody } from "../../protocol/code-body.js";

/** The verdict on a body: JavaScript with the body's own positions, or why it does not compile. */
export type Compiled = { ok: true; javascript: string } | { ok: false; message: string };

interface AmaroError {
  code?: string;
  message?: string;
  startLine?: number;
  startColumn?: number;
}

/** A package runCode needs is not installed: the message says what to install. */
export class MissingPeerError extends Error {
  override name = "MissingPeerError";
}

const requireHere = createRequire(import.meta.url);
let amaroPath: string | undefined;

/**
 * Where amaro is, found synchronously (runCode throws {@link MissingPeerError} before it starts when it is
 * not installed). amaro is CommonJS with its WebAssembly inlined (about 200 ms to load), loaded by the
 * stripping worker on the first body.
 */
export function requireStripper(): string {
  if (amaroPath !== undefined) return amaroPath;
  try {
    amaroPath = requireHere.resolve("amaro");
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === "MODULE_NOT_FOUND") {
      throw new MissingPeerError("runCode needs amaro, an optional peer dependency that is not installed: npm install amaro", {
        cause: error,
      });
    }
    throw error;
  }
  return amaroPath;
}

/**
 * The stripping worker's code (evaluated by `new Worker`, so no file of dist/ is needed; `import()` only, as
 * it is read as CommonJS or as a module depending on the host's flags): amaro in
 * its own thread, one text at a time. An error with a position is the stripper's verdict on the text; any
 * other (its WebAssembly trapped: a stack overflow on deep nesting, a memory access out of bounds) leaves
 * the instance in any state, so it is answered and the worker ends: the next text gets a fresh one.
 */
const WORKER_SOURCE = `
Promise.all([import("node:worker_threads"), import("node:module"), import("node:url")]).then(([threads, { createRequire }, url]) => {
  const { parentPort, workerData } = threads;
  // Required from its own file, not imported: Deno resolves an imported CommonJS file's own require()s
  // against the eval'd worker's name ("Cannot find module './internal.js'").
  const amaro = createRequire(workerData)(url.fileURLToPath(workerData));
  parentPort.postMessage({ ready: true });
  parentPort.on("message", (text) => {
    try {
      parentPort.postMessage({ code: amaro.transformSync(text, { mode: "strip-only" }).code });
    } catch (error) {
      const { message, startLine, startColumn } = error ?? {};
      if (typeof startLine === "number" && typeof startColumn === "number") {
        parentPort.postMessage({ error: { message: String(message), startLine, startColumn } });
      } else {
        parentPort.postMessage({ broken: { name: String(error?.name), message: String(error?.message ?? error) } });
        process.exit(1);
      }
    }
  });
});
`;

/** How long stripping one text may take: amaro is quadratic on some shapes (10 KB of `-` signs took 15 s). */
export const STRIP_DEADLINE_MS = 5000;
/** The stripping workers any text may use: a slow body holds one, never every body's stripping. */
export const STRIP_WORKERS = 2;
/**
 * A text (the wrapped body) up to this many characters may also use one more worker, kept for such texts:
 * however many long bodies are being stripped, a short one never waits behind them. amaro's worst shape
 * this short (`-` signs) strips in about 1.5 s on a loaded machine; a usual body in a millisecond.
 */
export const SHORT_TEXT_CHARS = 2048;
/**
 * A worker not yet started takes a text only when every busy one has been stripping for this long: most texts
 * strip in a millisecond on the warm worker, and a new worker's start (loading amaro, about 200 ms) would cost
 * them more than the wait; a slow text spills the others onto more workers.
 */
export const SPILL_MS = 100;
/** The worker's own heap; amaro's WebAssembly memory is apart from it and grows with the text (bounded by maxCodeBytes). */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 };

/** What stripping gave: JavaScript, the stripper's error at a position, a failure of the stripper itself, or no answer in time. */
type Stripped =
  | { code: string }
  | { error: Required<Pick<AmaroError, "message" | "startLine" | "startColumn">> }
  | { broken: { name: string; message: string } }
  | { slow: true }
  | { unavailable: string };

/** One worker thread and what it is doing. */
interface Lane {
  /** Only texts up to {@link SHORT_TEXT_CHARS} (the lane kept for short bodies). */
  shortOnly: boolean;
  worker: Worker | undefined;
  /** Whether the worker has loaded amaro (its deadlines count from then: loading is not the body's time). */
  loaded: boolean;
  busy: boolean;
  /** When its current text began stripping (amaro loaded), for {@link SPILL_MS}. */
  stripSince: number | undefined;
  /**
   * True once its text has held it for SPILL_MS: set by the lane's own timer, not by comparing clocks (a timer
   * may fire a fraction of a millisecond before performance.now() says SPILL_MS passed, and a short text then
   * waited behind the long ones until they ended).
   */
  spilled?: boolean;
}

interface WaitingText {
  text: string;
  resolve(result: Stripped): void;
}

/**
 * @internal Type stripping out of the host's thread, in worker threads (never holding the event loop while idle):
 * up to {@link STRIP_WORKERS} strip any text, one more only short texts, each worker one text at a time, the
 * rest waiting in the order they came. A started worker takes the next text it may; another is started only
 * when every busy worker has been on its text for {@link SPILL_MS}. A text that traps the
 * WebAssembly ends its worker, one that takes longer than {@link STRIP_DEADLINE_MS} has it terminated, and a
 * worker that dies (its heap limit) fails only its own text: the next gets a fresh worker. So no body can
 * throw out of runCode, poison the stripper for the bodies after it, overflow the host's stack, hold the
 * host's event loop (test/host/code/compile-hostile.test.ts), or keep a short body waiting while long ones
 * strip (compile-verdicts.test.ts). docs/code.md, "Limits".
 */
export class StripWorker {
  private readonly lanes: Lane[];
  private readonly waiting: WaitingText[] = [];
  /** @internal For tests: a shorter deadline. */
  deadlineMs = STRIP_DEADLINE_MS;

  /** `locate` finds amaro's main file (another for tests); `workers` is how many workers take any text. */
  constructor(
    private readonly locate: () => string = requireStripper,
    workers = STRIP_WORKERS,
  ) {
    this.lanes = [
      ...Array.from({ length: workers }, () => ({
        shortOnly: false,
        worker: undefined,
        loaded: false,
        busy: false,
        stripSince: undefined,
      })),
      { shortOnly: true, worker: undefined, loaded: false, busy: false, stripSince: undefined },
    ];
  }

  strip(text: string): Promise<Stripped> {
    return new Promise((resolve) => {
      this.waiting.push({ text, resolve });
      this.pump();
    });
  }

  /** Hands waiting texts, oldest first, to an idle started worker that takes them, else to a new one when allowed. */
  private pump(): void {
    // A new worker only when no busy one may be about to free itself (loading, or on its text for less than SPILL_MS).
    const mayStart = this.lanes.every((lane) => lane.worker === undefined) || this.lanes.every((lane) => !lane.busy || lane.spilled);
    for (let i = 0; i < this.waiting.length;) {
      const next = this.waiting[i]!;
      const takes = (lane: Lane) => !lane.busy && (!lane.shortOnly || next.text.length <= SHORT_TEXT_CHARS);
      const lane =
        this.lanes.find((candidate) => takes(candidate) && candidate.worker !== undefined) ??
        (mayStart ? this.lanes.find(takes) : undefined);
      if (lane === undefined) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      lane.busy = true;
      void this.once(lane, next.text).then((result) => {
        lane.busy = false;
        lane.stripSince = undefined;
        lane.spilled = false;
        next.resolve(result);
        this.pump();
      });
    }
  }

  private once(lane: Lane, text: string): Promise<Stripped> {
    let worker: Worker;
    try {
      if (lane.worker === undefined) {
        lane.worker = new Worker(WORKER_SOURCE, {
          eval: true,
          workerData: pathToFileURL(this.locate()).href,
          resourceLimits: WORKER_LIMITS,
          // None of the host's flags (loaders, --input-type): the worker runs amaro and nothing else.
          execArgv: [],
        });
        lane.loaded = false;
      }
      worker = lane.worker;
    } catch (error) {
      return Promise.resolve({ unavailable: `the type stripper could not start: ${describeError(error)}` });
    }
    return new Promise<Stripped>((resolve) => {
      let deadline: NodeJS.Timeout | undefined;
      let spill: NodeJS.Timeout | undefined;
      const startDeadline = () => {
        deadline = setTimeout(() => settle({ slow: true }, true), this.deadlineMs);
        lane.stripSince = performance.now();
        // Texts waiting behind a slow one may then go to a new worker.
        lane.spilled = false;
        spill = setTimeout(() => {
          lane.spilled = true;
          this.pump();
        }, SPILL_MS);
        spill.unref();
      };
      const settle = (result: Stripped, end: boolean) => {
        clearTimeout(deadline);
        clearTimeout(spill);
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        if (end && lane.worker === worker) {
          lane.worker = undefined;
          void worker.terminate();
        } else worker.unref();
        resolve(result);
      };
      const onMessage = (answer: Stripped | { ready: true }) => {
        if (!("ready" in answer)) return settle(answer, "broken" in answer);
        lane.loaded = true;
        startDeadline();
      };
      const onError = (error: Error) =>
        settle(
          lane.loaded
            ? { broken: { name: error.name, message: describeError(error) } }
            : { unavailable: `the type stripper could not start: ${describeError(error)}` },
          true,
        );
      const onExit = (code: number) =>
        settle({ broken: { name: "Error", message: `the type stripper's worker exited with code ${code}` } }, true);
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      worker.ref();
      worker.postMessage(text);
      if (lane.loaded) startDeadline();
    });
  }
}

/** @internal The host's stripping worker (tests shorten its deadline). */
export const stripWorker = new StripWorker();

/** The default of {@link CodeOptions.maxCodeBytes}: the most UTF-8 bytes a body may have. */
export const DEFAULT_MAX_CODE_BYTES = 256 * 1024;

/** Why a body too deeply nested is refused, in words a model can act on. */
const NESTED =
  "nested too deeply to compile (brackets, parentheses, blocks or operators inside each other hundreds of levels deep); " +
  "write it flatter: build deep values in a loop, and put parts of long expressions in variables";
const TOO_DEEP = `the code is ${NESTED}`;
/** Why a body the stripper did not finish in time is refused. */
function tooSlow(deadlineMs: number): string {
  return (
    `${CODE_FILENAME}: the code took more than ${deadlineMs / 1000} s to compile (long runs of operators or nesting make it slow); ` +
    "write it simpler: put parts of long expressions in variables, and build repetitive values in a loop"
  );
}

/** The AsyncFunction constructor: compiles a body as exactly one function body (no way to close it early). */
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => unknown;

/**
 * Strips the body's types and checks its syntax. Never throws for anything in the body.
 * TypeScript that needs more than stripping (enum, namespace with values, parameter properties) is
 * refused with the stripper's reason, as Node's own `--experimental-strip-types` does.
 */
export async function compileBody(body: string, maxBytes = DEFAULT_MAX_CODE_BYTES): Promise<Compiled> {
  // Counted before anything else is done with the body: stripping and checking grow with its size.
  const bytes = Buffer.byteLength(body);
  if (bytes > maxBytes) {
    return {
      ok: false,
      message:
        `${CODE_FILENAME}: the code is ${bytes} bytes, more than the ${maxBytes} a body may have (maxCodeBytes); write a shorter ` +
        "body: take data from input or from ears.call instead of writing it into the code, and return less",
    };
  }
  const wrapped = wrapBody(body);
  const result = await stripWorker.strip(wrapped);
  if ("slow" in result) return { ok: false, message: tooSlow(stripWorker.deadlineMs) };
  if ("unavailable" in result) return { ok: false, message: `${CODE_FILENAME}: the code was not compiled: ${result.unavailable}` };
  if ("broken" in result) return { ok: false, message: strippingFailed(result.broken) };
  if ("error" in result) {
    const { message, startLine, startColumn } = result.error;
    const { line, column0 } = await locateError(wrapped, startLine, startColumn, message);
    return { ok: false, message: syntaxProblem(body, line, column0 - (line === 1 ? CODE_PREFIX.length : 0), message) };
  }
  const stripped = result.code;
  // Whitespace replacement keeps the wrapper itself as it was; anything else means the body reached into it.
  if (stripped.length !== wrapped.length || !stripped.startsWith(CODE_PREFIX) || !stripped.endsWith(CODE_SUFFIX)) {
    return { ok: false, message: `${CODE_FILENAME}: the code is not a function body (it changes the text around it)` };
  }
  const javascript = stripped.slice(CODE_PREFIX.length, stripped.length - CODE_SUFFIX.length);
  try {
    new Script(stripped, { filename: CODE_FILENAME });
  } catch (error) {
    return { ok: false, message: error instanceof RangeError ? `${CODE_FILENAME}: ${TOO_DEEP}` : v8SyntaxMessage(body, error) };
  }
  try {
    // Compiled as one function body: a body that closes the wrapper early (`}); ...`) is refused here.
    new AsyncFunction("ears", "input", "Outcome", javascript);
  } catch (error) {
    return {
      ok: false,
      message: error instanceof RangeError ? `${CODE_FILENAME}: ${TOO_DEEP}` : `${CODE_FILENAME}: ${notOneBody((error as Error).message)}`,
    };
  }
  return { ok: true, javascript };
}

/**
 * Why a body is not one function body, in words a model can act on: V8's own ("Single function literal
 * required") says nothing about what to change.
 */
function notOneBody(v8Message: string): string {
  return (
    "the code must be the body of one async function, and it closes that function early: it has a `}` (or `})`) " +
    "that closes a bracket the code did not open, with more code after it; remove the extra closing brackets and " +
    `write the code as statements that end with a return (V8: ${v8Message})`
  );
}

/** A body the stripper itself failed on (it trapped): deep nesting overflows its stack, anything else is named. */
function strippingFailed({ name, message }: { name: string; message: string }): string {
  if (name === "RangeError") return `${CODE_FILENAME}: ${TOO_DEEP}`;
  return `${CODE_FILENAME}: the type stripper failed on this code (${name}: ${message}), most likely because it is ${NESTED}`;
}

/**
 * Where amaro's error is (its line, its display column), as a line and UTF-16 column of JavaScript's
 * lines of `wrapped` (what V8, the runtime stack, tsc and {@link bodyLines} count). amaro ends a line only
 * at `\n`, `\r` and `\r\n` (not at U+2028 and U+2029, where JavaScript does too: "x\u2028let b = ;"
 * fails on its line 1, JavaScript's line 2), and counts display columns (a tab is 4, 中 is 2, a combining
 * mark 0), which cannot be inverted exactly. So the text is stripped again with U+2028 and U+2029 as
 * `\n`, every other non-ASCII code unit masked as "x" and every tab as a space, where amaro's lines are
 * JavaScript's and a display column is a UTF-16 index; when that copy fails for the same reason on one of
 * the lines amaro's line spans, its position is the answer. Otherwise (the error is the non-ASCII character itself) the
 * display column is walked back as closely as a character's UTF-8 length allows.
 */
async function locateError(
  wrapped: string,
  line: number,
  displayColumn: number,
  message: string,
): Promise<{ line: number; column0: number }> {
  const breaks = [...wrapped.matchAll(/\r\n|[\n\r]/g)];
  const previous = breaks[line - 2];
  const start = previous === undefined ? 0 : previous.index + previous[0].length;
  const text = wrapped.slice(start, breaks[line - 1]?.index ?? wrapped.length);
  // Printable ASCII and line breaks only: amaro's lines are JavaScript's, a display column a UTF-16 index.
  if (!/[^\x20-\x7e\n\r]/.test(wrapped)) return { line, column0: displayColumn };
  const masked = wrapped
    .replace(/[\u2028\u2029]/g, "\n")
    .replace(/[^\x00-\x7f]/g, "x")
    .replace(/\t/g, " ");
  const result = await stripWorker.strip(masked);
  const first = jsPosition(wrapped, start).line;
  const last = first + (text.match(/[\u2028\u2029]/g)?.length ?? 0);
  if ("error" in result && result.error.message === message && result.error.startLine >= first && result.error.startLine <= last) {
    return { line: result.error.startLine, column0: result.error.startColumn };
  }
  let counted = 0;
  let index = 0;
  for (const char of text) {
    if (counted >= displayColumn) break;
    counted += char === "\t" ? 4 : char.codePointAt(0)! < 0x80 || char === "\u2028" || char === "\u2029" ? 1 : Buffer.byteLength(char) - 1;
    index += char.length;
  }
  return jsPosition(wrapped, start + index);
}

/** The JavaScript line (1-based) and UTF-16 column (0-based) of an offset into `text`. */
function jsPosition(text: string, offset: number): { line: number; column0: number } {
  const ends = [...text.slice(0, offset).matchAll(/\r\n|[\n\r\u2028\u2029]/g)];
  const last = ends.at(-1);
  return { line: ends.length + 1, column0: last === undefined ? offset : offset - last.index - last[0].length };
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
