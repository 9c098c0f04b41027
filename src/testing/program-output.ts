/**
 * What a program run by `testGuest` prints becomes `log` frames, as it does in a real stdio run, without
 * touching anything else the process prints. A real guest owns its process and patches `console` and
 * `process.stdout.write` for good; a test shares its process with the test runner, the host engine and
 * other programs. So the patch here is installed once and passes everything through, except output made
 * inside a program's own asynchronous context (an `AsyncLocalStorage` scope entered around the program):
 * that goes to that program's session while it routes output.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { consoleMethods, writeToSink, type CaptureSink } from "../wires/stdout-capture.js";
import { routeOutput, type RoutesOutput } from "../wires/wire.js";

/** One program's output: where it goes while its session routes it (undefined before and after). */
class OutputScope {
  methods: Record<string, (...args: never[]) => void> | undefined;
  sink: CaptureSink | undefined;

  /** The session's side of {@link routeOutput}: from now until the returned function, output is a log frame. */
  route(sink: CaptureSink): () => void {
    this.sink = sink;
    this.methods = consoleMethods(sink);
    return () => {
      this.sink = undefined;
      this.methods = undefined;
    };
  }
}

const scopes = new AsyncLocalStorage<OutputScope>();
let installed = false;

/** Wraps every console method that prints and `process.stdout.write`, once per process; outside a routed scope they are untouched. */
function install(): void {
  if (installed) return;
  installed = true;
  const target = console as unknown as Record<string, unknown>;
  for (const name of Object.keys(consoleMethods(() => {}))) {
    const original = target[name];
    if (typeof original !== "function") continue;
    target[name] = function (this: unknown, ...args: never[]) {
      const routed = scopes.getStore()?.methods?.[name];
      return routed === undefined ? (original as (...a: never[]) => unknown).apply(this, args) : routed(...args);
    };
  }
  const stdout = process.stdout;
  const write = stdout.write;
  stdout.write = function (this: unknown, chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const sink = scopes.getStore()?.sink;
    if (sink === undefined) return (write as (...a: unknown[]) => boolean).call(this, chunk, encoding, callback);
    return writeToSink(sink, chunk, encoding, callback);
  } as typeof stdout.write;
}

/**
 * Gives `wire` the {@link routeOutput} seam (serve calls it after hello and ends it before the result)
 * and returns `run` wrapped to run in the scope whose output it routes.
 */
export function captureProgramOutput<Wire extends object, Args extends unknown[], R>(
  wire: Wire,
  run: (...args: Args) => R,
): { wire: Wire & RoutesOutput; run: (...args: Args) => R } {
  install();
  const scope = new OutputScope();
  const routed = Object.assign(wire, { [routeOutput]: (sink: CaptureSink) => scope.route(sink) });
  return { wire: routed, run: (...args: Args) => scopes.run(scope, () => run(...args)) };
}
