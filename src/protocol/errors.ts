/**
 * Why a session with the host broke. Every kind means the same thing to a caller: the reply will not come,
 * and a request that was already written may have executed on the host. Never retry blindly.
 */
export type TransportErrorKind =
  /** The host closed its end (EOF), or reading from it failed, before the reply arrived or the request could be sent. */
  | "closed"
  /** A frame from the host was not JSON, not UTF-8, or did not match protocol 1. */
  | "malformed"
  /** The host replied to an id that was never sent or was already answered. */
  | "unknown-reply"
  /** A frame from the host exceeded the size cap. */
  | "oversized"
  /** The stream ended in the middle of a frame (bytes without a final newline). */
  | "truncated"
  /** Writing to the host failed (EPIPE, destroyed stream). */
  | "write-failed"
  /** The host broke the protocol sequence (a second invoke, an unknown frame type, ...). */
  | "protocol";

/** Options for {@link TransportError}. `Kind` is widened by clients with kinds of their own (OpenSeek's `http`, `handoff`). */
export interface TransportErrorOptions<Kind extends string = TransportErrorKind> {
  kind: Kind;
  /** True when a request was already written, so its effects on the host are unknown. */
  mayHaveExecuted?: boolean;
  cause?: unknown;
}

/**
 * The connection to the host failed: the only error a capability call raises. Tool failures are
 * {@link Outcome} values, never this. When {@link TransportError.mayHaveExecuted} is true the request
 * reached the host and a mutation may already have happened, so the runtime never retries.
 */
export class TransportError<Kind extends string = TransportErrorKind> extends Error {
  override name = "TransportError";
  readonly kind: Kind;
  readonly mayHaveExecuted: boolean;

  // NoInfer: the kind is checked against `Kind` (the protocol's kinds unless a client names its own).
  constructor(message: string, options: TransportErrorOptions<NoInfer<Kind>>) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = options.kind;
    this.mayHaveExecuted = options.mayHaveExecuted ?? false;
  }
}

/** A call's own `timeoutMs` ran out. The request may still execute on the host; its late reply is dropped. */
export class TimeoutError extends Error {
  override name = "TimeoutError";
}

/** Text for any thrown value, for messages and failure outcomes. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === "string") return error;
  try {
    const text = JSON.stringify(error);
    if (text !== undefined) return text;
  } catch {
    // fall through to String()
  }
  return String(error);
}
