/**
 * @posoco/ears/schemas: the zod schemas of record for protocol 1, and the JSON Schemas in `wire/schemas/`
 * generated from them. The guest itself never loads this module (zod costs about 100 ms to import);
 * it uses the small hand-written validators in `frames.ts`, and property tests prove both accept
 * exactly the same frames and produce the same values, defaults applied.
 *
 * The schemas parse values that `JSON.parse` produced. Leniency, as on the wire: unknown extra fields
 * are ignored (and dropped from the output), `content` of an outcome defaults to `""`, `input` and
 * `arguments` default to `null`, `level` defaults to `"info"`, and `structured` absent stays absent
 * while `structured: null` stays `null`.
 */
import { z } from "zod";
import { jsonProblem, MAX_FRAME_DEPTH, type Json } from "./json.js";
import type { Frame } from "./frames.js";

/**
 * Any JSON value, passed through unchanged (the same reference). Values JSON would alter (NaN,
 * undefined, BigInt, cycles, class instances) are refused with the path of the problem. `z.json()` is
 * not used because it copies objects and silently drops `"__proto__"` keys, which JSON.parse keeps.
 */
export const jsonValueSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    // As deep as a frame may be: the depth of a whole frame is decodeFrame's check, not this schema's.
    const problem = jsonProblem(value, { maxDepth: MAX_FRAME_DEPTH });
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: `not a faithful JSON value: ${problem}` });
  })
  .meta({ description: "Any JSON value, forwarded unchanged." }) as unknown as z.ZodType<Json, unknown>;

/**
 * A protocol version: any JSON integer, unbounded like the hand validator's `Number.isInteger`, so an
 * absurd version such as 1e300 is refused as an unsupported version, not as a malformed frame.
 */
export const protocolSchema = z
  .number()
  .refine(Number.isInteger, { message: "protocol must be an integer" })
  .meta({ type: "integer", description: "Protocol version; this package speaks 1." });

/** A request id: a positive safe integer (1 ≤ id ≤ 2^53 - 1), unique within a run. */
export const idSchema = z
  .int({ message: "id must be a positive integer" })
  .positive({ message: "id must be a positive integer" })
  .meta({ description: "Request id: a positive integer, unique within the run." });

/** The success arm of OUTCOME. */
export const successSchema = z
  .object({
    status: z.literal("success"),
    content: z.string().default("").meta({ description: "Text for the model; missing means empty." }),
    structured: jsonValueSchema.optional().meta({ description: "Optional JSON value; null is different from absent." }),
  })
  .meta({ title: "Success" });

/** The failure arm of OUTCOME: `code` is required. */
export const failureSchema = z
  .object({
    status: z.literal("failure"),
    code: z.string().meta({ description: "Why it failed, e.g. CapabilityDenied, ScopeClosed, InvalidArguments, GuestFailed." }),
    content: z.string().default("").meta({ description: "Text for the model; missing means empty." }),
    structured: jsonValueSchema.optional().meta({ description: "Optional JSON value; null is different from absent." }),
  })
  .meta({ title: "Failure" });

/** OUTCOME: a capability's answer (in `reply`) or the program's (in `result`), discriminated on `status`. */
export const outcomeSchema = z
  .discriminatedUnion("status", [successSchema, failureSchema])
  .meta({ title: "Outcome", description: "Protocol 1 OUTCOME, discriminated on status." });

/** `hello`: the first line the guest writes. `sdk` is informational. */
export const helloFrameSchema = z
  .object({
    type: z.literal("hello"),
    protocol: protocolSchema,
    sdk: z.string().optional().meta({ description: "Informational, e.g. @posoco/ears@0.1.0." }),
  })
  .meta({ title: "hello", description: "Guest -> host, always the first frame." });

/** `invoke`: the host's one call into the guest. */
export const invokeFrameSchema = z
  .object({
    type: z.literal("invoke"),
    protocol: protocolSchema,
    allowed: z.array(z.string()).meta({ description: "The capability names the guest may call." }),
    input: jsonValueSchema.default(null).meta({ description: "The program's input; missing means null." }),
    traceparent: z
      .string()
      .optional()
      .meta({ description: "The host's W3C trace context for the run (a traceparent header value), passed to the program as it is." }),
  })
  .meta({ title: "invoke", description: "Host -> guest, exactly once, after hello." });

/** `request`: a capability call by name. */
export const requestFrameSchema = z
  .object({
    type: z.literal("request"),
    id: idSchema,
    name: z.string().meta({ description: "The capability's name, one of invoke.allowed." }),
    arguments: jsonValueSchema.default(null).meta({ description: "Forwarded unchanged; missing means null." }),
  })
  .meta({ title: "request", description: "Guest -> host: call a capability; answered by one reply with the same id." });

/** `log`: a diagnostic for the host, not part of the result. */
export const logFrameSchema = z
  .object({
    type: z.literal("log"),
    level: z.string().default("info").meta({ description: "Any string; debug, info, warn and error are usual. Missing means info." }),
    content: z.string(),
  })
  .meta({ title: "log", description: "Guest -> host: a diagnostic, not part of the result." });

/** `result`: the program's outcome; exactly one per run, the last frame. */
export const resultFrameSchema = z
  .object({ type: z.literal("result"), outcome: outcomeSchema })
  .meta({ title: "result", description: "Guest -> host: the run's outcome, exactly one, the last frame." });

/** `reply`: the host's answer to one request. */
export const replyFrameSchema = z
  .object({ type: z.literal("reply"), id: idSchema, outcome: outcomeSchema })
  .meta({ title: "reply", description: "Host -> guest: the outcome of the request with this id." });

/** Every frame the guest writes. */
export const guestFrameSchema = z
  .discriminatedUnion("type", [helloFrameSchema, requestFrameSchema, logFrameSchema, resultFrameSchema])
  .meta({ title: "Guest frame", description: "A frame the guest writes: hello, request, log or result." });

/** Every frame the host writes. */
export const hostFrameSchema = z
  .discriminatedUnion("type", [invokeFrameSchema, replyFrameSchema])
  .meta({ title: "Host frame", description: "A frame the host writes: invoke or reply." });

/** Every protocol 1 frame; an unknown `type` is a protocol violation. */
export const frameSchema = z
  .discriminatedUnion("type", [
    helloFrameSchema,
    invokeFrameSchema,
    requestFrameSchema,
    logFrameSchema,
    resultFrameSchema,
    replyFrameSchema,
  ])
  .meta({ title: "Protocol 1 frame", description: "One line of the protocol: any guest or host frame." });

/** OUTCOME after parsing (defaults applied). */
export type OutcomeValue = z.output<typeof outcomeSchema>;
/** A parsed `hello` frame. */
export type HelloFrameValue = z.output<typeof helloFrameSchema>;
/** A parsed `invoke` frame (`input` defaulted). */
export type InvokeFrameValue = z.output<typeof invokeFrameSchema>;
/** A parsed `request` frame (`arguments` defaulted). */
export type RequestFrameValue = z.output<typeof requestFrameSchema>;
/** A parsed `log` frame (`level` defaulted). */
export type LogFrameValue = z.output<typeof logFrameSchema>;
/** A parsed `result` frame. */
export type ResultFrameValue = z.output<typeof resultFrameSchema>;
/** A parsed `reply` frame. */
export type ReplyFrameValue = z.output<typeof replyFrameSchema>;
/** Any parsed guest frame. */
export type GuestFrameValue = z.output<typeof guestFrameSchema>;
/** Any parsed host frame. */
export type HostFrameValue = z.output<typeof hostFrameSchema>;
/** Any parsed frame. */
export type FrameValue = z.output<typeof frameSchema>;

/**
 * Parses a value (already `JSON.parse`d from one line) as a protocol 1 frame, with defaults applied.
 * Accepts exactly what the runtime's `validateFrame` accepts, but throws a `z.ZodError` listing every
 * problem with its path, for callers who want structured errors.
 */
export function parseFrameStrict(value: unknown): Frame {
  return frameSchema.parse(value);
}

/** The JSON Schemas of record, keyed by their file name in `wire/schemas/`. */
export const wireSchemas = {
  "outcome.schema.json": outcomeSchema,
  "hello.schema.json": helloFrameSchema,
  "invoke.schema.json": invokeFrameSchema,
  "request.schema.json": requestFrameSchema,
  "log.schema.json": logFrameSchema,
  "result.schema.json": resultFrameSchema,
  "reply.schema.json": replyFrameSchema,
  "guest-frame.schema.json": guestFrameSchema,
  "host-frame.schema.json": hostFrameSchema,
  "frame.schema.json": frameSchema,
} as const;

/**
 * Generates the JSON Schema (draft 2020-12) documents for `wire/schemas/`, keyed by file name. They
 * describe what a reader accepts (zod's "input" view): fields with defaults are not required, and extra
 * fields are allowed because readers ignore them. Each document is self-contained.
 */
export function wireJsonSchemas(): Record<keyof typeof wireSchemas, Record<string, unknown>> {
  const documents = {} as Record<keyof typeof wireSchemas, Record<string, unknown>>;
  for (const [file, schema] of Object.entries(wireSchemas) as [keyof typeof wireSchemas, z.ZodType][]) {
    documents[file] = z.toJSONSchema(schema, { io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
  }
  return documents;
}
