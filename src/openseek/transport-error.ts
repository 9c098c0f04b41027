/**
 * OpenSeek's transport failures. They are the same {@link TransportError} class the guest runtime raises
 * (one class for users to catch), with two kinds of OpenSeek's own that the protocol layer knows nothing of.
 */
import { TransportError, type TransportErrorKind as ProtocolTransportErrorKind, type TransportErrorOptions } from "../protocol/errors.js";

/** The kinds only OpenSeek raises. */
export type OpenSeekTransportErrorKind =
  /** An HTTP host (OpenSeek) could not be reached, refused the request, or answered outside the protocol. */
  | "http"
  /** An HTTP host's capability handoff (environment variable) is missing or invalid. */
  | "handoff";

/** Every kind a `TransportError` from `@posoco/ears/openseek` may have. */
export type TransportErrorKind = ProtocolTransportErrorKind | OpenSeekTransportErrorKind;

/** A {@link TransportError} of one of OpenSeek's own kinds. */
export function openSeekTransportError(
  message: string,
  options: TransportErrorOptions<OpenSeekTransportErrorKind>,
): TransportError<OpenSeekTransportErrorKind> {
  return new TransportError<OpenSeekTransportErrorKind>(message, options);
}
