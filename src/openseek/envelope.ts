/**
 * The v1 result envelope both OpenSeek services reply with:
 * `{"version":1,"content":string,"is_error":boolean,"data"?:any}` (extra keys such as `brief` ignored).
 */
import type { TransportError } from "../protocol/errors.js";
import { openSeekTransportError, type OpenSeekTransportErrorKind } from "./transport-error.js";
import type { Json } from "../protocol/json.js";
import type { HostService } from "./handoff.js";

/** A decoded result envelope. `data` is absent when the reply had no `data` key, and `null` when it said null. */
export interface ResultEnvelope {
  content: string;
  isError: boolean;
  data?: Json;
  /** Every key of the reply, for service-specific extras (`images`). */
  fields: Readonly<Record<string, unknown>>;
}

/** Checks a parsed reply. Throws {@link TransportError} (kind "http") when it is not a v1 result envelope. */
export function decodeResult(service: HostService, reply: unknown): ResultEnvelope {
  if (typeof reply !== "object" || reply === null || Array.isArray(reply)) {
    throw invalidReply(`Invalid ${service.label} response (not a JSON object)`);
  }
  const fields = reply as Record<string, unknown>;
  if (fields["version"] !== 1) {
    throw invalidReply(`Invalid ${service.label} response (version ${JSON.stringify(fields["version"]) ?? "missing"}, expected 1)`);
  }
  const content = fields["content"];
  if (typeof content !== "string") {
    throw invalidReply(`Invalid ${service.label} response ("content" is ${content === undefined ? "missing" : "not a string"})`);
  }
  const isError = fields["is_error"];
  if (typeof isError !== "boolean") {
    throw invalidReply(
      `Invalid ${service.label} error flag ("is_error" is ${isError === undefined ? "missing" : JSON.stringify(isError)}, not a boolean)`,
    );
  }
  const result: ResultEnvelope = { content, isError, fields };
  // `in`, not `!== undefined`: a reply's `"data": null` is kept as null, distinct from no data at all.
  if ("data" in fields) result.data = fields["data"] as Json;
  return result;
}

/** A reply that reached the client but is outside the protocol: the tool may well have run. */
export function invalidReply(what: string): TransportError<OpenSeekTransportErrorKind> {
  return openSeekTransportError(`${what}; execution outcome may be unknown`, { kind: "http", mayHaveExecuted: true });
}
