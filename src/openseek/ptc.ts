/**
 * The PTC client: `call(name, arguments)` for every tool the OpenSeek host enables for a script.
 */
import type { Json } from "../protocol/json.js";
import { decodeResult, type ResultEnvelope } from "./envelope.js";
import { PTC_SERVICE, readHandoff, type Handoff, type HostService } from "./handoff.js";
import { DEADLINE_MS, postJson } from "./http.js";
import { requireString, sendable } from "./sendable.js";

/** Options for one OpenSeek call. */
export interface OpenSeekCallOptions {
  /**
   * Aborting it rejects the call with the signal's own reason (for `AbortSignal.timeout(ms)`, a
   * `TimeoutError` DOMException), never a TransportError. The host may still run the tool.
   */
  signal?: AbortSignal;
}

/** A host tool's result. A tool failure is a result with `isError: true`, not an exception. */
export interface CallResult {
  content: string;
  isError: boolean;
  /** The tool's structured data: absent when the host sent none, `null` when it sent `null`. */
  data?: Json;
}

/** Client settings; tests shorten the deadline, scripts always get the defaults. */
export interface ClientSettings {
  /** Deadline of an ordinary call in milliseconds (approval tools wait without it). */
  deadlineMs: number;
  env: NodeJS.ProcessEnv;
}

/** The settings every public call uses: a 125 s deadline and the live `process.env`. */
export function defaultSettings(): ClientSettings {
  return { deadlineMs: DEADLINE_MS, env: process.env };
}

/**
 * The signal of a call's options. Throws a `TypeError` (nothing sent) for options that are not an object,
 * a `signal` that is not an AbortSignal, or any other key: a mistyped or unsupported option such as
 * `timeoutMs` must not be ignored silently.
 */
export function readSignal(options: unknown): AbortSignal | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new TypeError("The call options must be an object like { signal }; nothing was sent");
  }
  for (const key of Object.keys(options)) {
    if (key !== "signal") {
      throw new TypeError(
        `Unknown call option ${JSON.stringify(key)}: the only option is signal ` +
          "(for a deadline, pass signal: AbortSignal.timeout(ms)); nothing was sent",
      );
    }
  }
  const signal = (options as { signal?: unknown }).signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError("The call option signal must be an AbortSignal; nothing was sent");
  }
  return signal;
}

/**
 * `call` with explicit settings. Order of checks, all before any I/O: the name is a string, the
 * arguments survive JSON unchanged (else `TypeError`), the signal is not already aborted, the
 * `OPENSEEK_PTC` capability is valid (else `TransportError` kind "handoff").
 */
export async function callWithSettings(
  name: string,
  args: unknown,
  options: OpenSeekCallOptions,
  settings: ClientSettings,
): Promise<CallResult> {
  requireString(name, "The PTC tool name");
  const envelope = await postCall(
    PTC_SERVICE,
    args,
    `The arguments of PTC tool ${JSON.stringify(name)}`,
    options,
    settings,
    (value, handoff) => ({
      body: JSON.stringify({ version: 1, name, arguments: value }),
      waitsForApproval: handoff.approvalTools.includes(name),
    }),
  );
  const result: CallResult = { content: envelope.content, isError: envelope.isError };
  if ("data" in envelope) result.data = envelope.data!;
  return result;
}

/**
 * The steps both OpenSeek calls share once their names are checked, in this order and all before any
 * I/O: the arguments survive JSON unchanged (else `TypeError`, naming them by `argumentsLabel`), the
 * signal is not already aborted, the service's handoff is valid (else `TransportError` kind "handoff").
 * Then one POST of the body `request` builds (without the deadline when the call waits for an
 * approval), and the reply decoded as a v1 result envelope.
 */
export async function postCall(
  service: HostService,
  args: unknown,
  argumentsLabel: string,
  options: OpenSeekCallOptions,
  settings: ClientSettings,
  request: (value: Json, handoff: Handoff) => { body: string; waitsForApproval: boolean },
): Promise<ResultEnvelope> {
  const value = sendable(args, argumentsLabel);
  const signal = readSignal(options);
  if (signal?.aborted) throw signal.reason;
  const handoff = readHandoff(service, settings.env);
  const { body, waitsForApproval } = request(value, handoff);
  const reply = await postJson(service, handoff, body, { signal, deadlineMs: waitsForApproval ? undefined : settings.deadlineMs });
  return decodeResult(service, reply);
}
