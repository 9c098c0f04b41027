// The host's side of one call: the running call (its record, deadline, abort) and what its handler sees.
import { encodeFrame, outcomeWire } from "../../protocol/frames.js";
import type { Json } from "../../protocol/json.js";
import type { Outcome } from "../../protocol/outcome.js";
import type { CallRecord, Capability, CapabilityContext } from "../api/types.js";

/** A call whose handler is running. */
export class Call {
  /** Set once the call is answered, timed out or dropped; its handler's answer is then ignored. */
  settled = false;
  /** Made only when the handler reads `ctx.signal`: most handlers never do. */
  private controller: AbortController | undefined;
  private abortReason: DOMException | undefined;

  constructor(
    readonly record: CallRecord,
    /** Whether the record is in the report (it may be past `maxCallRecords`). */
    readonly kept: boolean,
    readonly startedAt: number,
    /** When the call times out, on the session's clock (Infinity: never). */
    readonly due: number,
    readonly handler: Capability,
    /** Held only until the handler starts. */
    public args: Json,
  ) {}

  signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      // A handler that reads its signal only after the call was given up gets it already aborted.
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  abort(reason: DOMException): void {
    this.abortReason ??= reason;
    this.controller?.abort(reason);
  }
}

/** The context a handler gets; `signal` is a getter so that the AbortController is made only when read. */
export class CallContext implements CapabilityContext {
  readonly #call: Call;

  constructor(
    readonly name: string,
    readonly id: number,
    call: Call,
  ) {
    this.#call = call;
  }

  get signal(): AbortSignal {
    return this.#call.signal();
  }
}

/** The reply frame for a call, or undefined when it cannot be encoded. */
export function replyLine(id: number, outcome: Outcome): string | undefined {
  try {
    return encodeFrame({ type: "reply", id, outcome: outcomeWire(outcome) });
  } catch {
    return undefined; // JSON.stringify throws RangeError on strings past V8's maximum length
  }
}
