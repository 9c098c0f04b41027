/**
 * The shape of a conformance vector file (wire/vectors/*.json), as wire/vectors/README.md describes it.
 * The vector test checks every file against it first, so a typo in a vector fails loudly instead of
 * silently testing less.
 */
import { z } from "zod";
import { jsonValueSchema } from "../../../src/protocol/schemas.js";

const bindName = z.string().min(1);

const contentMatch = {
  content: z.string().optional(),
  contentIncludes: z.union([z.string(), z.array(z.string())]).optional(),
};

/** An outcome the guest must write: exact, except `content` may be given as `contentIncludes`. */
const expectedOutcome = z.strictObject({
  status: z.enum(["success", "failure"]),
  code: z.string().optional(),
  ...contentMatch,
  structured: jsonValueSchema.optional(),
});

/** A frame the guest must write next. */
const expectedFrame = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("hello"), protocol: z.number(), optional: z.boolean().optional() }),
  z.strictObject({
    type: z.literal("request"),
    id: z.number(),
    name: z.string(),
    arguments: jsonValueSchema,
    optional: z.boolean().optional(),
  }),
  z.strictObject({ type: z.literal("log"), level: z.string(), ...contentMatch, optional: z.boolean().optional() }),
  z.strictObject({ type: z.literal("result"), outcome: expectedOutcome, optional: z.boolean().optional() }),
]);

/** One step of the transcript. */
const transcriptStep = z.union([
  z.strictObject({ guest: expectedFrame }),
  z.strictObject({ host: jsonValueSchema }),
  z.strictObject({ hostLine: z.string() }),
  z.strictObject({ hostRaw: z.string() }),
  z.strictObject({ hostHex: z.string().regex(/^([0-9a-f]{2})+$/) }),
  z.strictObject({ hostEnd: z.literal(true) }),
]);

/** One step of the guest program. */
const programStep = z.union([
  z.strictObject({
    call: z.string(),
    arguments: jsonValueSchema.optional(),
    argumentsUnrepresentable: z.literal(true).optional(),
    bind: bindName.optional(),
    wait: z.boolean().optional(),
  }),
  z.strictObject({ wait: bindName }),
  z.strictObject({ cancel: bindName }),
  z.strictObject({ log: z.string(), level: z.string().optional() }),
  z.strictObject({ close: z.literal(true) }),
  z.strictObject({ return: jsonValueSchema }),
  z.strictObject({ returnNothing: z.literal(true) }),
  z.strictObject({ returnInput: z.literal(true) }),
  z.strictObject({ returnTraceparent: z.literal(true) }),
  z.strictObject({
    returnOutcome: z.strictObject({
      status: z.enum(["success", "failure"]),
      code: z.string().optional(),
      content: z.string().optional(),
      structured: jsonValueSchema.optional(),
    }),
  }),
  z.strictObject({ returnOutcomeOf: bindName }),
  z.strictObject({ returnContentsOf: z.array(bindName).min(1) }),
  z.strictObject({ returnUnrepresentable: z.literal(true) }),
  z.strictObject({ throw: z.string() }),
]);

/** A whole vector file. */
export const vectorSchema = z
  .strictObject({
    description: z.string().min(1),
    guestOptions: z.strictObject({ maxFrameBytes: z.int().positive().optional() }).optional(),
    program: z.array(programStep),
    transcript: z.array(transcriptStep).min(1),
    exit: z.enum(["zero", "nonzero"]),
    stderrIncludes: z.array(z.string()).optional(),
  })
  .superRefine((vector, ctx) => {
    const terminal = vector.program.findIndex((step) => TERMINAL_KEYS.some((key) => key in step));
    if (terminal >= 0 && terminal !== vector.program.length - 1) {
      ctx.addIssue({ code: "custom", path: ["program", terminal], message: "a return or throw step must be the last step" });
    }
    const bound = new Set<string>();
    const started = new Set<string>();
    vector.program.forEach((step, index) => {
      for (const key of ["wait", "cancel"] as const) {
        const name = (step as Record<string, unknown>)[key];
        if (typeof name === "string" && !started.has(name)) {
          ctx.addIssue({
            code: "custom",
            path: ["program", index],
            message: `${key} names "${name}", which no earlier "wait": false call binds`,
          });
        }
      }
      if ("wait" in step && !("call" in step)) bound.add(step.wait);
      if ("returnOutcomeOf" in step && !bound.has(step.returnOutcomeOf)) {
        ctx.addIssue({ code: "custom", path: ["program", index], message: `"${step.returnOutcomeOf}" has no outcome yet` });
      }
      if ("returnContentsOf" in step) {
        for (const name of step.returnContentsOf) {
          if (!bound.has(name)) ctx.addIssue({ code: "custom", path: ["program", index], message: `"${name}" is not bound` });
        }
      }
      if ("call" in step) {
        if (step.bind !== undefined) (step.wait === false ? started : bound).add(step.bind);
        if (step.wait === false && step.bind === undefined) {
          ctx.addIssue({ code: "custom", path: ["program", index], message: 'a call with "wait": false needs a bind name' });
        }
      }
    });
    for (const [index, step] of vector.transcript.entries()) {
      if ("guest" in step && ["log", "result"].includes(step.guest.type)) {
        const match =
          step.guest.type === "log" ? step.guest : (step.guest as { outcome: { content?: string; contentIncludes?: unknown } }).outcome;
        if ((match.content === undefined) === (match.contentIncludes === undefined)) {
          ctx.addIssue({ code: "custom", path: ["transcript", index], message: "give exactly one of content and contentIncludes" });
        }
      }
    }
    if (vector.exit === "zero" && vector.stderrIncludes !== undefined) {
      ctx.addIssue({ code: "custom", path: ["stderrIncludes"], message: "stderrIncludes only applies to a nonzero exit" });
    }
  });

const TERMINAL_KEYS = [
  "return",
  "returnNothing",
  "returnInput",
  "returnTraceparent",
  "returnOutcome",
  "returnOutcomeOf",
  "returnContentsOf",
  "returnUnrepresentable",
  "throw",
] as const;

/** A parsed vector file. */
export type Vector = z.output<typeof vectorSchema>;
/** A frame the guest must write, as a vector states it. */
export type ExpectedFrame = z.output<typeof expectedFrame>;
/** One transcript step. */
export type TranscriptStep = z.output<typeof transcriptStep>;

/** True when the vector writes raw bytes, so it needs a byte-level transport (not the in-memory pair). */
export function needsBytes(vector: Vector): boolean {
  return vector.transcript.some((step) => "hostRaw" in step || "hostHex" in step);
}
