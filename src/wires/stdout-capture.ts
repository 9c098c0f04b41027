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
    const text =
      typeof chunk === "string"
        ? typeof encoding === "string" && encoding !== "utf8" && encoding !== "utf-8"
          ? Buffer.from(chunk, encoding as BufferEncoding).toString("utf8")
          : chunk
        : Buffer.from(chunk as Uint8Array).toString("utf8");
    current("info", text.endsWith("\n") ? text.slice(0, -1) : text);
    const done = typeof encoding === "function" ? encoding : callback;
    if (typeof done === "function") process.nextTick(done as () => void);
    return true;
  } as typeof stdout.write;
  // console.log/info/dir/table/group… reach stdout.write; these four would go elsewhere or lose their level.
  const levels = { debug: "debug", warn: "warn", error: "error" } as const;
  for (const [method, level] of Object.entries(levels)) {
    (console as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => current(level, format(...args));
  }
  console.trace = (...args: unknown[]) => {
    const stack = new Error().stack?.split("\n").slice(2).join("\n") ?? "";
    current("debug", `Trace${args.length > 0 ? `: ${format(...args)}` : ""}\n${stack}`);
  };
  if (!consoleUsesStdoutWrite()) captureConsoleDirectly((level, text) => current(level, text));
  installed = { rawWrite, setSink: (next) => (current = next) };
  return rawWrite;
}

/**
 * Node's console writes through `process.stdout.write`; Bun's and Deno's write to file descriptor 1
 * themselves, past the patched writer, and would corrupt the wire.
 */
function consoleUsesStdoutWrite(): boolean {
  return (process.versions as { bun?: string }).bun === undefined && !("Deno" in globalThis);
}

/**
 * Under Bun and Deno: the console methods that print to stdout send to `sink` at level info, formatted as
 * Node formats them (`console.table` as its data, since a drawn table needs a terminal; groups do not
 * indent). warn/error/debug/trace are already rerouted for every runtime.
 */
function captureConsoleDirectly(sink: CaptureSink): void {
  const info = (text: string) => sink("info", text);
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  const elapsed = (label: string) => {
    const started = timers.get(label);
    return started === undefined ? `Timer '${label}' does not exist` : `${label}: ${(performance.now() - started).toFixed(3)}ms`;
  };
  const methods: Record<string, (...args: never[]) => void> = {
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
  Object.assign(console, methods);
}
