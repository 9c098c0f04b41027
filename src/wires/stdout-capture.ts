import { format, inspect } from "node:util";

/** Receives output the program wrote to stdout or the console, with a log level. */
export type CaptureSink = (level: string, text: string) => void;

type Write = (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean;

let installed: { rawWrite: Write; setSink(sink: CaptureSink): void } | undefined;

/**
 * Reroutes everything the program writes to stdout (`process.stdout.write` and every `console`
 * method) to `sink`, so the wire stays pure: the pattern vscode-languageserver uses when serving on
 * stdio. Returns the original stdout writer for the frames themselves. Installed once per process;
 * a later call only replaces the sink. Bypasses it cannot see: `fs.writeSync(1, …)` and child
 * processes that inherit stdout.
 */
export function captureStdout(sink: CaptureSink): Write {
  if (installed !== undefined) {
    installed.setSink(sink);
    return installed.rawWrite;
  }
  const stdout = process.stdout;
  const rawWrite = stdout.write.bind(stdout) as Write;
  let current = sink;
  stdout.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    return writeToSink(current, chunk, encoding, callback);
  } as typeof stdout.write;
  const methods = consoleMethods((level, text) => current(level, text));
  // console.log/info/dir/table/group… reach stdout.write; these four would go elsewhere or lose their level.
  for (const method of LEVELLED_METHODS) (console as unknown as Record<string, unknown>)[method] = methods[method];
  if (!consoleUsesStdoutWrite()) Object.assign(console, methods);
  installed = { rawWrite, setSink: (next) => (current = next) };
  return rawWrite;
}

/**
 * One `process.stdout.write(chunk, encoding?, callback?)` handed to `sink` at level info, without its
 * trailing newline (a log entry is a line); the callback is called as a stream would call it.
 */
export function writeToSink(sink: CaptureSink, chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
  const text =
    typeof chunk === "string"
      ? typeof encoding === "string" && encoding !== "utf8" && encoding !== "utf-8"
        ? Buffer.from(chunk, encoding as BufferEncoding).toString("utf8")
        : chunk
      : Buffer.from(chunk as Uint8Array).toString("utf8");
  sink("info", text.endsWith("\n") ? text.slice(0, -1) : text);
  const done = typeof encoding === "function" ? encoding : callback;
  if (typeof done === "function") process.nextTick(done as () => void);
  return true;
}

/** The console methods that do not print to stdout in Node, or would lose their level there. */
const LEVELLED_METHODS = ["debug", "warn", "error", "trace"] as const;

/**
 * Node's console writes through `process.stdout.write`; Bun's and Deno's write to file descriptor 1
 * themselves, past the patched writer, and would corrupt the wire.
 */
function consoleUsesStdoutWrite(): boolean {
  return (process.versions as { bun?: string }).bun === undefined && !("Deno" in globalThis);
}

/**
 * Every console method that prints, sending to `sink` what a real run's log gets: debug/warn/error at
 * their level, trace at debug with its stack, and the methods that print to stdout at level info,
 * formatted as Node formats them (`console.table` as its data, since a drawn table needs a terminal;
 * groups do not indent). Used as they are under Bun and Deno (whose console writes to file descriptor 1
 * itself, past the patched writer) and by the test kit's capture.
 */
export function consoleMethods(sink: CaptureSink): Record<string, (...args: never[]) => void> {
  const info = (text: string) => sink("info", text);
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  const elapsed = (label: string) => {
    const started = timers.get(label);
    return started === undefined ? `Timer '${label}' does not exist` : `${label}: ${(performance.now() - started).toFixed(3)}ms`;
  };
  return {
    debug: (...args: unknown[]) => sink("debug", format(...args)),
    warn: (...args: unknown[]) => sink("warn", format(...args)),
    error: (...args: unknown[]) => sink("error", format(...args)),
    trace: (...args: unknown[]) => {
      const stack = new Error().stack?.split("\n").slice(2).join("\n") ?? "";
      sink("debug", `Trace${args.length > 0 ? `: ${format(...args)}` : ""}\n${stack}`);
    },
    log: (...args: unknown[]) => info(format(...args)),
    info: (...args: unknown[]) => info(format(...args)),
    dirxml: (...args: unknown[]) => info(format(...args)),
    dir: (value: unknown, options?: object) => info(inspect(value, { customInspect: false, ...options })),
    table: (data: unknown) => info(format(data)),
    group: (...args: unknown[]) => args.length > 0 && info(format(...args)),
    groupCollapsed: (...args: unknown[]) => args.length > 0 && info(format(...args)),
    groupEnd: () => {},
    count: (label: string = "default") => {
      const count = (counts.get(label) ?? 0) + 1;
      counts.set(label, count);
      info(`${label}: ${count}`);
    },
    countReset: (label: string = "default") => void counts.delete(label),
    time: (label: string = "default") => void timers.set(label, performance.now()),
    timeLog: (label: string = "default", ...data: unknown[]) =>
      info(data.length > 0 ? `${elapsed(label)} ${format(...data)}` : elapsed(label)),
    timeEnd: (label: string = "default") => {
      info(elapsed(label));
      timers.delete(label);
    },
  };
}
