import {
  check,
  isContract,
  type CapabilitySpecs,
  type Contract,
  type JsonSafe,
  type LooseSpecs,
  type StandardSchemaV1,
} from "../contract/contract.js";
import { Ears } from "./ears.js";
import { describeError, TransportError } from "../protocol/errors.js";
import { escapedError } from "./escaped-errors.js";
import { decodeLine, encodeFrame, outcomeWire, PROTOCOL } from "../protocol/frames.js";
import type { Json } from "../protocol/json.js";
import { FailureCode, Outcome, returnedOutcome } from "../protocol/outcome.js";
import { SDK } from "../protocol/version.js";
import { routeOutput, watchEscapes, type RoutesOutput, type WatchesEscapes, type Wire } from "../wires/wire.js";

/** What a guest program is: called once with the handle and the invoke's input. */
export type GuestProgram<Specs extends CapabilitySpecs = LooseSpecs, Input = Json> = (ears: Ears<Specs>, input: Input) => unknown;

/**
 * Makes `serve` a compile error when the program's return type holds a function, symbol, bigint, `Map`,
 * `Set`, `Date`, ... (which the runtime would refuse with `GuestFailed`). `unknown` and `any` pass.
 */
export type ReturnCheck<R> = [Awaited<R>] extends [JsonSafe<Awaited<R>>]
  ? unknown
  : { run: (...args: never[]) => JsonSafe<Awaited<R>> | Promise<JsonSafe<Awaited<R>>> };

/** Options for {@link serve}. */
export interface ServeOptions<Specs extends CapabilitySpecs = LooseSpecs, Input = Json, Result = unknown> {
  /** The transport: `stdio()` for a real guest, one end of `createLinkedPair()` in tests. */
  wire: Wire;
  /**
   * The capability contract (from `defineCapabilities`): types `ears.call`, and checks each call's
   * arguments before sending and each success's `structured` before the program sees it.
   */
  capabilities?: Contract<Specs>;
  /**
   * A Standard Schema for the invoke's input: the program gets the schema's output, and input that does
   * not match ends the session with an `InvalidInput` failure result; the program does not run.
   */
  input?: StandardSchemaV1<unknown, Input>;
  /**
   * The program. Its return value becomes the result: `undefined` is a success with no `structured`, an
   * {@link Outcome} (from the helpers or from `ears.call`) is sent as it is, and any other value is a
   * success whose `structured` is that value. A throw becomes a `GuestFailed` failure.
   */
  run: (ears: Ears<Specs>, input: Input) => Result;
}

/** How a session ended. */
export type ServeReport =
  /** The program ran and its result frame was written (whatever the outcome). */
  | { status: "completed"; outcome: Outcome }
  /** The host's invoke asked for a protocol this guest does not speak; the program did not run. */
  | { status: "refused"; error: TransportError }
  /** The session broke before a result could be written. */
  | { status: "broken"; error: TransportError; outcome?: Outcome };

/**
 * The guest entry point: writes `hello`, takes the `invoke`, runs the program once, writes the
 * `result`, and releases the wire. Settles once the result is flushed; never rejects for anything the
 * host or the program does, and never calls `process.exit`. On the stdio wire a broken or refused
 * session writes one `ears: …` line to stderr and sets `process.exitCode = 1`.
 */
export async function serve<Specs extends CapabilitySpecs = LooseSpecs, Input = Json, Result = unknown>(
  options: ServeOptions<Specs, Input, Result> & NoInfer<ReturnCheck<Result>>,
): Promise<ServeReport> {
  const { wire, run, capabilities: contract, input: inputSchema } = options ?? ({} as ServeOptions<Specs, Input, Result>);
  if (typeof wire?.send !== "function" || typeof wire.receive !== "function") {
    throw new TypeError("serve: options.wire must be a Wire (an object with send and receive), e.g. stdio()");
  }
  if (typeof run !== "function") throw new TypeError("serve: options.run must be a function (ears, input) => result");
  if (contract !== undefined && !isContract(contract)) {
    throw new TypeError("serve: options.capabilities must be a contract made by defineCapabilities");
  }
  if (inputSchema !== undefined && typeof inputSchema?.["~standard"]?.validate !== "function") {
    throw new TypeError("serve: options.input must be a Standard Schema (an object with ~standard.validate), e.g. a zod 4 schema");
  }

  const end = async (report: Exclude<ServeReport, { status: "completed" }>): Promise<ServeReport> => {
    await closeWire(wire, report.error);
    return report;
  };

  const helloSent = wire.send(encodeFrame({ type: "hello", protocol: PROTOCOL, sdk: SDK }));
  // The session owns capture-to-log: what a capturing wire (stdio) caught on stdout becomes log frames,
  // from right after hello (what came earlier first) until just before the result.
  const stopRouting = (wire as Partial<RoutesOutput>)[routeOutput]?.call(wire, (level, content) => {
    wire.send(encodeFrame({ type: "log", level, content })).catch(() => {});
  });
  try {
    await helloSent;
  } catch (error) {
    return end({ status: "broken", error: asTransport(error, "could not write hello", "write-failed") });
  }

  let invokeLine: string | undefined;
  try {
    invokeLine = await wire.receive();
  } catch (error) {
    return end({ status: "broken", error: asTransport(error, "could not read the invoke frame", "closed") });
  }
  if (invokeLine === undefined) {
    return end({
      status: "broken",
      error: new TransportError("the host closed the connection before sending invoke; the program did not run", { kind: "closed" }),
    });
  }
  const decoded = decodeLine(invokeLine);
  if (!("frame" in decoded)) {
    return end({
      status: "broken",
      error: new TransportError(`the host sent a malformed frame instead of invoke (${decoded.message}); the program did not run`, {
        kind: "malformed",
      }),
    });
  }
  const invoke = decoded.frame;
  if (invoke.type !== "invoke") {
    return end({
      status: "broken",
      error: new TransportError(`the host sent a ${JSON.stringify(invoke.type)} frame where invoke was expected; the program did not run`, {
        kind: "protocol",
      }),
    });
  }
  if (invoke.protocol !== PROTOCOL) {
    return end({
      status: "refused",
      error: new TransportError(
        `the host's invoke asks for protocol ${invoke.protocol}, but this guest speaks protocol ${PROTOCOL}; the program did not run`,
        { kind: "protocol" },
      ),
    });
  }

  const ears = Ears.open<Specs>(wire, invoke.allowed, contract as Contract | undefined, invoke.traceparent);
  let outcome: Outcome;
  try {
    const running =
      inputSchema === undefined
        ? Promise.resolve().then(() => run(ears, invoke.input as Input))
        : Promise.resolve()
            .then(() => check(inputSchema, invoke.input))
            .then((checked) =>
              checked.ok
                ? run(ears, checked.value as Input)
                : Outcome.failure(
                    FailureCode.InvalidInput,
                    `the host's input does not match the program's input schema: ${checked.problem}; the program did not run`,
                  ),
            );
    const escapes = (wire as Partial<WatchesEscapes>)[watchEscapes]?.call(wire, escapedError);
    outcome = resultOf(await (escapes === undefined ? running : Promise.race([running, escapes])));
  } catch (error) {
    if (error instanceof Error && error.stack) void ears.log(error.stack, "error");
    outcome = Outcome.failure(FailureCode.GuestFailed, describeError(error));
  }
  const left = ears.finish();
  if (left > 0) {
    const calls = left === 1 ? "1 call was" : `${left} calls were`;
    // Straight to the wire: the handle is closed now, and this must precede the result.
    wire
      .send(
        encodeFrame({
          type: "log",
          level: "warn",
          content: `${calls} still waiting for a reply when the program returned; await every call`,
        }),
      )
      .catch(() => {});
  }

  stopRouting?.(); // output captured from now on must not follow the result as a frame
  try {
    await wire.send(encodeFrame({ type: "result", outcome: outcomeWire(outcome) }));
  } catch (error) {
    return end({ status: "broken", outcome, error: asTransport(error, "could not write the result", "write-failed") });
  }
  await closeWire(wire, undefined);
  return { status: "completed", outcome };
}

/** Turns the program's return value into the result outcome, refusing what JSON would alter. */
function resultOf(value: unknown): Outcome {
  const result = returnedOutcome(value);
  if (!("problem" in result)) return result;
  const what = result.inOutcome ? "result outcome" : "return value";
  return Outcome.failure(FailureCode.GuestFailed, `the program's ${what} cannot be sent as JSON unchanged: ${result.problem}`);
}

async function closeWire(wire: Wire, failure: Error | undefined): Promise<void> {
  try {
    await wire.close?.(failure);
  } catch {
    // Closing is best effort: the session is over either way.
  }
}

/**
 * A wire's failure as the session reports it: a TransportError keeps its kind; any other error gets
 * `kind`, what failing at `doing` means ("closed" for a read that failed, as Ears reports one mid-run).
 */
function asTransport(error: unknown, doing: string, kind: "closed" | "write-failed"): TransportError {
  if (error instanceof TransportError) return new TransportError(`${doing}: ${error.message}`, { kind: error.kind, cause: error });
  return new TransportError(`${doing}: ${describeError(error)}`, { kind, cause: error });
}
