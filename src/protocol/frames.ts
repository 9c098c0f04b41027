/**
 * The protocol 1 frame codec, shared by guest and host. Small hand-written validators keep the guest's
 * start-up free of zod; `schemas.ts` holds the zod schemas of record, and property tests prove both
 * accept exactly the same frames.
 */
import { MAX_FRAME_DEPTH, type Json } from "./json.js";
import { fromValid, outcomeProblem, type Outcome } from "./outcome.js";
import { excerpt, quotedExcerpt } from "./text.js";
import { describeError } from "./errors.js";

/** The protocol version this package speaks. */
export const PROTOCOL = 1;

/** 64 MiB: the default cap on one frame, in bytes (the wires, the host and transcript reading share it). */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

export interface HelloFrame {
  type: "hello";
  protocol: number;
  sdk?: string;
}
export interface InvokeFrame {
  type: "invoke";
  protocol: number;
  allowed: string[];
  input: Json;
  /**
   * Optional: the host's W3C trace context (`traceparent` header value) for the run, so the guest's own
   * tracing joins the host's trace. Opaque to the protocol: a guest passes it on as it is.
   */
  traceparent?: string;
}
export interface RequestFrame {
  type: "request";
  id: number;
  name: string;
  arguments: Json;
}
export interface LogFrame {
  type: "log";
  level: string;
  content: string;
}
export interface ResultFrame {
  type: "result";
  outcome: Outcome;
}
export interface ReplyFrame {
  type: "reply";
  id: number;
  outcome: Outcome;
}

/** Frames the guest writes. */
export type GuestFrame = HelloFrame | RequestFrame | LogFrame | ResultFrame;
/** Frames the host writes. */
export type HostFrame = InvokeFrame | ReplyFrame;
/** Every protocol 1 frame. */
export type Frame = GuestFrame | HostFrame;

/** A line that is not a valid protocol 1 frame. `reason` says what is wrong, for error messages. */
export class FrameError extends Error {
  override name = "FrameError";
  constructor(
    readonly reason: string,
    /** The offending line, cut to 200 characters. */
    readonly excerpt: string,
  ) {
    super(`${reason}: ${excerpt}`);
  }
}

/**
 * Encodes a frame as one line of JSON text without the trailing newline. The caller has already
 * checked that the JSON values inside are faithful (see `jsonProblem`); JSON.stringify never emits a
 * raw newline, so the text is always a single line.
 */
export function encodeFrame(frame: Frame): string {
  return JSON.stringify(frame);
}

/** Encodes an outcome's wire form inside a reply or result frame without copying `structured`. */
export function outcomeWire(outcome: Outcome): Outcome {
  if (outcome.status === "failure") {
    return outcome.structured === undefined
      ? { status: "failure", code: outcome.code, content: outcome.content }
      : { status: "failure", code: outcome.code, content: outcome.content, structured: outcome.structured };
  }
  return outcome.structured === undefined
    ? { status: "success", content: outcome.content }
    : { status: "success", content: outcome.content, structured: outcome.structured };
}

/** Decodes one line (without its newline) into a frame, applying protocol 1's defaults. Throws {@link FrameError}. */
export function decodeFrame(line: string): Frame {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new FrameError(`not JSON (${(error as Error).message})`, excerptOf(line));
  }
  // Depth and range (wire/PROTOCOL.md section 1). A line of at most SHORT_LINE characters cannot nest
  // past the limit (N levels take 2N brackets), so only its numbers need a look: a short recursive
  // check (its depth is bounded by the line's length), which costs per value, not per character.
  // Longer lines get the full walk, without recursion.
  const problem = line.length <= SHORT_LINE ? (holdsInfinity(value) ? OUT_OF_RANGE : undefined) : depthOrRangeProblem(value);
  if (problem !== undefined) throw new FrameError(problem, excerptOf(line));
  const frame = validateFrame(value);
  if (typeof frame === "string") throw new FrameError(frame, excerptOf(line));
  return frame;
}

/** The longest line that cannot be nested deeper than {@link MAX_FRAME_DEPTH}: N levels need 2N brackets. */
const SHORT_LINE = 2 * MAX_FRAME_DEPTH + 1;

/**
 * True when a parsed value holds ±Infinity (a number token beyond the double range). Recursive: only
 * called on values from lines of at most {@link SHORT_LINE} characters, so at most 512 levels deep.
 */
function holdsInfinity(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return isInfinite(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsInfinity(value[i])) return true;
    return false;
  }
  for (const key in value) if (holdsInfinity((value as Record<string, unknown>)[key])) return true;
  return false;
}

/**
 * @internal Walks a parsed frame without recursion: why it is malformed for depth or range (nested
 * deeper than {@link MAX_FRAME_DEPTH}, the frame object being level 1, or holding a number JSON.parse
 * turned into ±Infinity), or undefined. Only containers are queued; numbers are checked in place.
 */
export function depthOrRangeProblem(value: unknown): string | undefined {
  // Breadth first, one level at a time: only containers are queued, numbers are checked in place.
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: object[] = [];
    for (let j = 0; j < level.length; j++) {
      const item = level[j];
      if (typeof item !== "object" || item === null) {
        if (isInfinite(item)) return OUT_OF_RANGE;
        continue;
      }
      if (depth === MAX_FRAME_DEPTH) return TOO_DEEP; // item is at level depth + 1
      if (Array.isArray(item)) {
        for (let i = 0; i < item.length; i++) {
          const child: unknown = item[i];
          if (typeof child === "object") {
            if (child !== null) next.push(child);
          } else if (isInfinite(child)) return OUT_OF_RANGE;
        }
      } else {
        for (const key in item) {
          const child: unknown = (item as Record<string, unknown>)[key];
          if (typeof child === "object") {
            if (child !== null) next.push(child);
          } else if (isInfinite(child)) return OUT_OF_RANGE;
        }
      }
    }
    level = next;
  }
  return undefined;
}

const OUT_OF_RANGE = "a number is beyond the range of a double (JSON.parse makes it Infinity), which protocol 1 refuses";
const TOO_DEEP = `the frame is nested more than ${MAX_FRAME_DEPTH} levels deep, which protocol 1 refuses`;

function isInfinite(value: unknown): boolean {
  return value === Infinity || value === -Infinity;
}

/** Validates a parsed JSON value as a frame: returns the frame (defaults applied) or the reason it is not one. */
export function validateFrame(value: unknown): Frame | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "a frame must be a JSON object";
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case "reply": {
      if (!isId(v.id)) return "reply.id must be a positive integer";
      const problem = outcomeProblem(v.outcome);
      if (problem !== undefined) return `reply.outcome: ${problem}`;
      return { type: "reply", id: v.id, outcome: fromValid(v.outcome as Record<string, unknown>) };
    }
    case "request": {
      if (!isId(v.id)) return "request.id must be a positive integer";
      if (typeof v.name !== "string") return "request.name must be a string";
      return { type: "request", id: v.id, name: v.name, arguments: (v.arguments as Json | undefined) ?? null };
    }
    case "log": {
      if (v.level !== undefined && typeof v.level !== "string") return "log.level must be a string";
      if (typeof v.content !== "string") return "log.content must be a string";
      return { type: "log", level: (v.level as string | undefined) ?? "info", content: v.content };
    }
    case "result": {
      const problem = outcomeProblem(v.outcome);
      if (problem !== undefined) return `result.outcome: ${problem}`;
      return { type: "result", outcome: fromValid(v.outcome as Record<string, unknown>) };
    }
    case "invoke": {
      if (!Number.isInteger(v.protocol)) return "invoke.protocol must be an integer";
      if (!Array.isArray(v.allowed) || !v.allowed.every((name) => typeof name === "string")) {
        return "invoke.allowed must be an array of strings";
      }
      if (v.traceparent !== undefined && typeof v.traceparent !== "string") return "invoke.traceparent must be a string";
      const invoke: InvokeFrame = {
        type: "invoke",
        protocol: v.protocol as number,
        allowed: v.allowed as string[],
        input: (v.input as Json | undefined) ?? null,
      };
      if (v.traceparent !== undefined) invoke.traceparent = v.traceparent;
      return invoke;
    }
    case "hello": {
      if (!Number.isInteger(v.protocol)) return "hello.protocol must be an integer";
      if (v.sdk !== undefined && typeof v.sdk !== "string") return "hello.sdk must be a string";
      return v.sdk === undefined
        ? { type: "hello", protocol: v.protocol as number }
        : { type: "hello", protocol: v.protocol as number, sdk: v.sdk };
    }
    case undefined:
      return "a frame needs a type";
    default:
      return `unknown frame type ${quoteType(v.type)}`;
  }
}

function isId(id: unknown): id is number {
  return Number.isSafeInteger(id) && (id as number) > 0;
}

/** An unknown `type` as a reason names it: a hostile one may be megabytes long, or deeply nested. */
function quoteType(type: unknown): string {
  if (typeof type === "string") return quotedExcerpt(type, 64);
  if (typeof type === "object" && type !== null) return Array.isArray(type) ? "(an array)" : "(an object)";
  return JSON.stringify(type);
}

function excerptOf(line: string): string {
  return excerpt(line, 200);
}

/** Why a line is not a frame: the reason alone, the reason with an excerpt of the line, and the error thrown. */
export interface UndecodableLine {
  reason: string;
  message: string;
  error: unknown;
}

/**
 * {@link decodeFrame} for the sessions (guest, handle, host), which each turn a bad line into their own
 * failure: the frame, or why the line is not one, never a throw.
 */
export function decodeLine(line: string): { frame: Frame } | UndecodableLine {
  try {
    return { frame: decodeFrame(line) };
  } catch (error) {
    if (error instanceof FrameError) return { reason: error.reason, message: error.message, error };
    const text = describeError(error);
    return { reason: text, message: text, error };
  }
}
