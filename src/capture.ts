import { format } from "node:util";

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
  installed = { rawWrite, setSink: (next) => (current = next) };
  return rawWrite;
}
