/**
 * Why a session with the host broke. Every kind means the same thing to a caller: the reply will not come,
 * and a request that was already written may have executed on the host. Never retry blindly.
 */
export type TransportErrorKind =
  /** The host closed its end (EOF) before the reply arrived, or before the request could be sent. */
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
  | "protocol"
  /** An HTTP host (OpenSeek) could not be reached, refused the request, or answered outside the protocol. */
  | "http"
  /** An HTTP host's capability handoff (environment variable) is missing or invalid. */
  | "handoff";

/** Options for {@link TransportError}. */
export interface TransportErrorOptions {
  kind: TransportErrorKind;
  /** True when a request was already written, so its effects on the host are unknown. */
  mayHaveExecuted?: boolean;
  cause?: unknown;
}

/**
 * The connection to the host failed: the only error a capability call raises. Tool failures are
 * {@link Outcome} values, never this. When {@link TransportError.mayHaveExecuted} is true the request
 * reached the host and a mutation may already have happened, so the runtime never retries.
 */
export class TransportError extends Error {
  override name = "TransportError";
  readonly kind: TransportErrorKind;
  readonly mayHaveExecuted: boolean;

  constructor(message: string, options: TransportErrorOptions) {
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
