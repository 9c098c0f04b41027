import { MAX_TIMER_MS } from "../protocol/timers.js";
import {
  checkArguments,
  check,
  replyMismatch,
  specOf,
  type ArgumentsOf,
  type CallResult,
  type UntypedCallRest,
  type NamesWithArguments,
  type NamesWithoutArguments,
  type CapabilitySpecs,
  type Checked,
  type Contract,
  type LooseSpecs,
  type StandardSchemaV1,
  type TypedSuccess,
} from "../contract/contract.js";
import { describeError, TimeoutError, TransportError } from "../protocol/errors.js";
import { decodeLine, encodeFrame } from "../protocol/frames.js";
import { jsonProblem, type Json } from "../protocol/json.js";
import { FailureCode, notAllowedMessage, Outcome } from "../protocol/outcome.js";
import { frameCounter, framesArrived, framesTaken, frameSender, type CountsFrames, type Wire } from "../wires/wire.js";

/** Options for one {@link Ears.call}. */
export interface CallOptions {
  /** Aborting it rejects the call with the signal's reason (as `fetch` does); a late reply is dropped. */
  signal?: AbortSignal;
  /** Rejects the call with a {@link TimeoutError} after this many milliseconds; a late reply is dropped. */
  timeoutMs?: number;
}

/** Log levels the runtime itself uses; hosts accept any string. */
export type LogLevel = "debug" | "info" | "warn" | "error" | (string & {});

const noop = () => {};

/** A call waiting for its reply. */
class PendingCall {
  readonly promise: Promise<Outcome>;
  private resolve!: (outcome: Outcome) => void;
  private reject!: (error: unknown) => void;
  /** Stops the call's timer and abort watch; set only for a call that has either. */
  cleanup: (() => void) | undefined;

  constructor(
    readonly name: string,
    /** The contract's `structured` schema: a success is checked against it before the program sees it. */
    readonly structured: StandardSchemaV1 | undefined,
    /** Frames that had arrived from the host when the request was written: a reply among them is early. */
    readonly arrivedBefore: number,
  ) {
    this.promise = new Promise<Outcome>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  settle(outcome: Outcome): void {
    this.cleanup?.();
    this.resolve(outcome);
  }

  fail(error: unknown): void {
    this.cleanup?.();
    // A caller that attaches its handler a tick later must not trigger an unhandled rejection.
    this.promise.catch(noop);
    this.reject(error);
  }
}

/**
 * The guest's handle on the host, made by `serve` from the `invoke` frame. Calls outside the host's
 * allowlist are refused locally; tool failures are {@link Outcome} values; only a broken connection
 * raises {@link TransportError}. With a contract (`serve({ capabilities })`), `Specs` types each call's
 * name, arguments and result.
 */
export class Ears<Specs extends CapabilitySpecs = LooseSpecs> {
  /** The capability names the host allows, in the host's order. */
  readonly allowed: readonly string[];
  /**
   * The host's W3C trace context for this run (a `traceparent` header value such as
   * `00-<trace id>-<span id>-01`), when the host traces the run; undefined otherwise. Pass it to your own
   * tracing (e.g. OpenTelemetry's W3C propagator) so the spans the program makes join the host's trace.
   * Passed on as the host sent it: the propagator decides whether it is valid.
   */
  readonly traceparent: string | undefined;
  private readonly allowedSet: ReadonlySet<string>;
  private readonly pending = new Map<number, PendingCall>();
  /** Ids whose caller gave up (signal, timeout, end of run): their late replies are dropped quietly. */
  private readonly abandoned = new Set<number>();
  private nextId = 1;
  /**
   * Where the handle is in its life: "open" takes calls and logs; "closed" (the program called `close`)
   * refuses new ones while calls already sent complete; "finished" (the program returned) also stops
   * reading replies. A broken session is told by `broken`, which can happen in any phase.
   */
  private phase: "open" | "closed" | "finished" = "open";
  /** Why the session with the host broke, once it has. */
  private broken: TransportError | undefined;
  /** The wire's promise-free send, when it has one. */
  private readonly sendFrame: ((frame: string, done: (error?: Error) => void) => void) | undefined;
  /** The wire's frame counts, when it keeps them (the package's wires do): they expose an early reply. */
  private readonly counts: CountsFrames | undefined;
  private readonly onSendFailed = (error?: Error) => {
    if (error !== undefined) this.disconnect(writeFailure(error));
  };

  /** @internal Made by `serve` from the invoke frame. */
  static open<Specs extends CapabilitySpecs>(
    wire: Wire,
    allowed: readonly string[],
    contract?: Contract,
    traceparent?: string,
  ): Ears<Specs> {
    return new Ears<Specs>(wire, allowed, contract, traceparent);
  }

  // Private: only `serve` makes a handle (through `open`); the published types show no way to build one.
  private constructor(
    private readonly wire: Wire,
    allowed: readonly string[],
    private readonly contract?: Contract,
    traceparent?: string,
  ) {
    this.allowed = Object.freeze([...allowed]);
    this.traceparent = traceparent;
    this.allowedSet = new Set(allowed);
    this.sendFrame = frameSender(wire);
    this.counts = frameCounter(wire);
    void this.readReplies();
  }

  /**
   * Calls a host capability by name. `args` is any JSON value, forwarded unchanged (`undefined` is sent
   * as `null`). Resolves with the host's outcome, or locally with a failure: `CapabilityDenied` (name not
   * allowed), `ScopeClosed` (handle closed or run over), `InvalidArguments` (JSON would alter `args`);
   * those touch nothing on the wire. Rejects with {@link TransportError} when the connection broke, with
   * the signal's reason on abort, and with {@link TimeoutError} after `timeoutMs`.
   *
   * With a contract, a name the contract does not declare is refused (`CapabilityDenied`), arguments the
   * contract's schema rejects are refused (`InvalidArguments`), both before anything is sent, and a
   * success whose `structured` the contract's schema rejects resolves as an `InvalidReply` failure.
   */
  call<Name extends NamesWithArguments<Specs>>(
    name: Name,
    args: ArgumentsOf<Specs[Name]>,
    options?: CallOptions,
  ): Promise<CallResult<Specs[Name]>>;
  call<Name extends NamesWithoutArguments<Specs>, Args = undefined>(
    name: Name,
    args?: Args,
    ...rest: NoInfer<UntypedCallRest<Specs, Name, Args, CallOptions>>
  ): Promise<CallResult<Specs[Name]>>;
  // `_explained` is the type-level explanation of a call that does not compile (UntypedCallRest); never passed.
  call(name: string, args?: unknown, options: CallOptions = {}, _explained?: string): Promise<Outcome | TypedSuccess<unknown>> {
    if (this.phase !== "open") {
      return Promise.resolve(Outcome.failure(FailureCode.ScopeClosed, `the ears handle is closed; "${name}" was not called`));
    }
    if (!this.allowedSet.has(name)) {
      return Promise.resolve(Outcome.failure(FailureCode.CapabilityDenied, `${notAllowedMessage(name, this.allowed)}; nothing was sent`));
    }
    const value = args === undefined ? null : args;
    const problem = jsonProblem(value);
    if (problem !== undefined) {
      return Promise.resolve(
        Outcome.failure(
          FailureCode.InvalidArguments,
          `arguments for "${name}" cannot be sent as JSON unchanged: ${problem}; nothing was sent`,
        ),
      );
    }
    if (this.contract === undefined) return this.send(name, value as Json, options, undefined);
    const spec = specOf(this.contract, name);
    if (spec === undefined) {
      return Promise.resolve(
        Outcome.failure(
          FailureCode.CapabilityDenied,
          `capability ${JSON.stringify(name)} is not declared in the guest's capability contract; nothing was sent`,
        ),
      );
    }
    if (spec.arguments === undefined) return this.send(name, value as Json, options, spec.structured);
    const sendChecked = (checked: Checked): Promise<Outcome | TypedSuccess<unknown>> =>
      checked.ok
        ? this.send(name, value as Json, options, spec.structured)
        : Promise.resolve(
            Outcome.failure(
              FailureCode.InvalidArguments,
              `arguments for "${name}" do not match the contract: ${checked.problem}; nothing was sent`,
            ),
          );
    try {
      // The value that goes on the wire (undefined is sent as null), as the host will check it.
      const checked = checkArguments(spec.arguments, value);
      return checked instanceof Promise ? handled(checked.then(sendChecked)) : sendChecked(checked);
    } catch (error) {
      // A schema whose validate throws is the program's own bug: it surfaces as the call's rejection.
      return handled(Promise.reject(error));
    }
  }

  /** Sends a checked request; the wire's arguments are the program's own value, never the schema's output. */
  private send(
    name: string,
    value: Json,
    options: CallOptions,
    structured: StandardSchemaV1 | undefined,
  ): Promise<Outcome | TypedSuccess<unknown>> {
    if (this.phase !== "open") {
      // Only reachable after an asynchronous schema check: the handle closed while it ran.
      return Promise.resolve(Outcome.failure(FailureCode.ScopeClosed, `the ears handle is closed; "${name}" was not called`));
    }
    const { signal, timeoutMs } = options;
    if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0)) {
      return handled(Promise.reject(new RangeError(`timeoutMs must be a positive number, got ${String(timeoutMs)}`)));
    }
    if (signal?.aborted) return handled(Promise.reject(signal.reason));
    if (this.broken !== undefined) {
      return handled(
        Promise.reject(
          new TransportError(`${this.broken.message}; "${name}" was not sent`, { kind: this.broken.kind, cause: this.broken }),
        ),
      );
    }
    const id = this.nextId++;
    const line = encodeFrame({ type: "request", id, name, arguments: value });
    const call = new PendingCall(name, structured, this.counts?.[framesArrived] ?? 0);
    if (signal !== undefined || timeoutMs !== undefined) this.watch(id, call, signal, timeoutMs);
    this.pending.set(id, call);
    if (this.sendFrame !== undefined) this.sendFrame(line, this.onSendFailed);
    else this.wire.send(line).catch((error: unknown) => this.disconnect(writeFailure(error)));
    return call.promise;
  }

  /** Gives up on the call when `signal` aborts or `timeoutMs` runs out; its late reply is then dropped. */
  private watch(id: number, call: PendingCall, signal: AbortSignal | undefined, timeoutMs: number | undefined): void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const giveUp = (error: unknown) => {
      if (this.pending.delete(id)) {
        this.abandoned.add(id);
        call.fail(error);
      }
    };
    const stopWatching = signal === undefined ? noop : watchAbort(signal, () => giveUp(signal.reason));
    // setTimeout fires after 1 ms for delays over 2^31-1 ms (about 24.8 days) or Infinity; such a
    // timeout cannot run out while the process lives in practice, so it gets no timer at all.
    if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
      timer = setTimeout(
        () => giveUp(new TimeoutError(`"${call.name}" got no reply within ${timeoutMs} ms; the request may still execute on the host`)),
        timeoutMs,
      );
    }
    call.cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      stopWatching();
    };
  }

  /**
   * Sends a diagnostic to the host (not part of the result). Ignored after close. The promise settles
   * when the frame is handed to the transport, for callers that want back-pressure; it never rejects.
   */
  log(content: string, level: LogLevel = "info"): Promise<void> {
    if (this.phase !== "open" || this.broken?.kind === "write-failed") return Promise.resolve();
    const line = encodeFrame({ type: "log", level: String(level), content: String(content) });
    return this.wire.send(line).then(noop, (error: unknown) => this.disconnect(writeFailure(error)));
  }

  /** Closes the handle: later calls resolve to `ScopeClosed` and logs are ignored. Calls already sent still complete. */
  close(): void {
    if (this.phase === "open") this.phase = "closed";
  }

  /**
   * @internal Called by `serve` when the program has returned: closes the handle, resolves calls the
   * program never awaited with `ScopeClosed`, and stops reading. Returns how many calls were left.
   */
  finish(): number {
    this.phase = "finished";
    const left = this.pending.size;
    for (const [id, call] of this.pending) {
      this.abandoned.add(id);
      call.settle(
        Outcome.failure(
          FailureCode.ScopeClosed,
          `the program ended before the reply to "${call.name}" arrived; the request may have executed`,
        ),
      );
    }
    this.pending.clear();
    return left;
  }

  private async readReplies(): Promise<void> {
    for (;;) {
      let line: string | undefined;
      try {
        line = await this.wire.receive();
      } catch (error) {
        this.disconnect(
          error instanceof TransportError
            ? error
            : new TransportError(`reading from the host failed: ${describeError(error)}`, { kind: "closed", cause: error }),
        );
        return;
      }
      if (this.phase === "finished") return;
      if (line === undefined) {
        this.disconnect(new TransportError("the host closed the connection", { kind: "closed" }));
        return;
      }
      const decoded = decodeLine(line);
      if (!("frame" in decoded)) {
        this.disconnect(
          new TransportError(`the host sent a malformed frame (${decoded.message})`, { kind: "malformed", cause: decoded.error }),
        );
        return;
      }
      const { frame } = decoded;
      if (frame.type !== "reply") {
        this.disconnect(
          new TransportError(`the host sent a ${JSON.stringify(frame.type)} frame during the run; only replies are expected`, {
            kind: "protocol",
          }),
        );
        return;
      }
      const call = this.pending.get(frame.id);
      if (call === undefined) {
        if (this.abandoned.delete(frame.id)) continue; // the caller gave up; a late reply is not a violation
        this.disconnect(
          new TransportError(`the host replied to request id ${frame.id}, which is unknown or already answered`, {
            kind: "unknown-reply",
          }),
        );
        return;
      }
      if (this.counts !== undefined && this.counts[framesTaken] <= call.arrivedBefore) {
        // The reply was read from the host before this request was written: the host answered an id it
        // could not have seen yet (a guessed id), so it cannot be this request's answer.
        this.disconnect(
          new TransportError(
            `the host replied to request id ${frame.id} before that request was written (a reply must follow its request)`,
            {
              kind: "unknown-reply",
            },
          ),
        );
        return;
      }
      this.pending.delete(frame.id);
      if (call.structured === undefined || frame.outcome.status !== "success") call.settle(frame.outcome);
      else settleChecked(call, call.structured, frame.outcome);
    }
  }

  /**
   * Breaks the session once: every waiting call rejects, and later calls reject without being sent.
   * A protocol violation by the host is also reported to it as an `error` log, so a break is never
   * silent even when no call was waiting.
   */
  private disconnect(error: TransportError): void {
    if (this.broken !== undefined) return;
    this.broken = error;
    for (const [, call] of this.pending) {
      const message =
        error.kind === "closed"
          ? `${error.message} before replying to "${call.name}"; the request may already have executed`
          : `the session with the host broke while "${call.name}" waited for its reply (${error.message}); ` +
            "the request may already have executed";
      call.fail(new TransportError(message, { kind: error.kind, mayHaveExecuted: true, cause: error }));
    }
    this.pending.clear();
    if (error.kind !== "closed" && error.kind !== "write-failed" && this.phase !== "finished") {
      const line = encodeFrame({ type: "log", level: "error", content: `ears: the session with the host is broken: ${error.message}` });
      this.wire.send(line).catch(noop);
    }
  }
}

/** Hands the program a success only once its `structured` has passed the contract's schema. */
function settleChecked(call: PendingCall, schema: StandardSchemaV1, outcome: Outcome): void {
  const settle = (checked: Checked) =>
    call.settle(
      checked.ok
        ? // The schema's output (what the program's types promise); it is not sent anywhere.
          Outcome.success(outcome.content, checked.value as Json)
        : replyMismatch(call.name, checked.problem),
    );
  try {
    const checked = check(schema, outcome.structured);
    if (checked instanceof Promise)
      checked.then(settle, (error: unknown) => call.settle(replyMismatch(call.name, `the schema threw: ${describeError(error)}`)));
    else settle(checked);
  } catch (error) {
    call.settle(replyMismatch(call.name, `the schema threw: ${describeError(error)}`));
  }
}

function writeFailure(error: unknown): TransportError {
  if (error instanceof TransportError) return error;
  return new TransportError(`writing to the host failed: ${describeError(error)}`, {
    kind: "write-failed",
    mayHaveExecuted: true,
    cause: error,
  });
}

// One "abort" listener per signal, shared by every call waiting on it: a program that passes one signal
// to many concurrent calls must not trip Node's listener-leak warning (MaxListenersExceededWarning on stderr).
const abortWatchers = new WeakMap<AbortSignal, Set<() => void>>();

/** Runs `onAbort` when `signal` aborts; returns the function that stops watching. */
function watchAbort(signal: AbortSignal, onAbort: () => void): () => void {
  let watchers = abortWatchers.get(signal);
  if (watchers === undefined) {
    const all = new Set<() => void>();
    watchers = all;
    abortWatchers.set(signal, all);
    signal.addEventListener(
      "abort",
      () => {
        abortWatchers.delete(signal);
        for (const watcher of all) watcher();
      },
      { once: true },
    );
  }
  watchers.add(onAbort);
  return () => watchers.delete(onAbort);
}

function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(noop);
  return promise;
}
