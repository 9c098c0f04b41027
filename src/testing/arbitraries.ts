/**
 * fast-check arbitraries for protocol 1: JSON values, outcomes, every frame type, whole valid sessions,
 * garbage lines and awkward byte chunkings. Everything here shrinks, so a failing property reports a small
 * counterexample. Frames are built exactly as `decodeFrame` returns them (protocol defaults applied, keys in
 * the codec's order), so `decodeFrame(encodeFrame(frame))` deep-equals `frame`.
 *
 * Test-only: this module imports fast-check and nothing in the guest runtime imports it.
 */
import fc from "fast-check";
import {
  decodeFrame,
  PROTOCOL,
  type Frame,
  type GuestFrame,
  type HelloFrame,
  type HostFrame,
  type InvokeFrame,
  type LogFrame,
  type ReplyFrame,
  type RequestFrame,
  type ResultFrame,
} from "../protocol/frames.js";
import type { Json } from "../protocol/json.js";
import { FailureCode, Outcome } from "../protocol/outcome.js";
import { SDK } from "../protocol/version.js";

/** Characters that break naive framing or encoding: line breaks, JS-only line separators, BOM, escapes, astral emoji. */
const AWKWARD_CHARACTERS = [
  "\n",
  "\r",
  "\r\n",
  "\t",
  "\u0000",
  "\u001f",
  "\u007f",
  "\u2028",
  "\u2029",
  "\uFEFF",
  '"',
  "\\",
  "/",
  "é",
  "读",
  "🎉",
  "👩‍👩‍👧",
  "\u{10FFFF}",
];

/** One character: mostly printable ASCII, else any code point, a lone surrogate, or an awkward character. */
const character: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) },
  { weight: 2, arbitrary: fc.constantFrom(...AWKWARD_CHARACTERS) },
  // fromCodePoint over the whole range includes U+D800..U+DFFF, i.e. lone surrogates.
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0x10ffff }).map((code) => String.fromCodePoint(code)) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)) },
);

/**
 * Strings of arbitrary Unicode text, biased towards what breaks framing: `\r`, `\n`, U+2028/2029, emoji,
 * lone surrogates, quotes and backslashes.
 */
export function text(constraints: { maxLength?: number; minLength?: number } = {}): fc.Arbitrary<string> {
  return fc.string({ unit: character, maxLength: constraints.maxLength ?? 16, minLength: constraints.minLength ?? 0 });
}

const KEY_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "", "0", "10", "type", "id", "structured"];

const objectKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: text({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(...KEY_NAMES) },
);

/** Finite numbers as JSON carries them; -0 is generated as 0 because JSON writes it as 0. */
const jsonNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (n === 0 ? 0 : n)),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1e21, 5e-324, Number.MAX_VALUE, 0.1),
);

const jsonScalar: fc.Arbitrary<Json> = fc.oneof(fc.constant(null), fc.boolean(), jsonNumber, text());

/** An object with own data properties only (`Object.fromEntries`), so a `"__proto__"` key is a plain key, as `JSON.parse` makes it. */
function jsonObject(value: fc.Arbitrary<Json>, maxKeys: number): fc.Arbitrary<{ [key: string]: Json }> {
  return fc
    .uniqueArray(fc.tuple(objectKey, value), { maxLength: maxKeys, selector: ([key]) => key })
    .map((entries) => Object.fromEntries(entries) as { [key: string]: Json });
}

/** Options for {@link jsonValue}. */
export interface JsonValueConstraints {
  /** Nesting depth of the ordinary arrays and objects (default 4). */
  maxDepth?: number;
  /** Deepest single chain of nested arrays/objects mixed in now and then (default 64); 0 turns it off. */
  maxChainDepth?: number;
}

/**
 * Any JSON value that survives `JSON.stringify` then `JSON.parse` unchanged: null, booleans, finite numbers
 * (including extremes like 5e-324 and 2^53+2), strings of arbitrary Unicode (see {@link text}), arrays and
 * plain objects (keys such as `"__proto__"` and `""` included), plus the occasional deep narrow chain of
 * nesting. `jsonProblem` accepts every value it makes.
 */
export function jsonValue(constraints: JsonValueConstraints = {}): fc.Arbitrary<Json> {
  const maxDepth = constraints.maxDepth ?? 4;
  const maxChainDepth = constraints.maxChainDepth ?? 64;
  const { value } = fc.letrec<{ value: Json }>((tie) => ({
    value: fc.oneof({ depthSize: "small", maxDepth }, jsonScalar, fc.array(tie("value"), { maxLength: 5 }), jsonObject(tie("value"), 5)),
  }));
  if (maxChainDepth <= 0) return value;
  const chain = fc
    .tuple(fc.integer({ min: 1, max: maxChainDepth }), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), jsonScalar)
    .map(([depth, inArray, leaf]) => {
      let nested: Json = leaf;
      for (let level = 0; level < depth; level++) nested = inArray[level % inArray.length] ? [nested] : { d: nested };
      return nested;
    });
  return fc.oneof({ weight: 9, arbitrary: value }, { weight: 1, arbitrary: chain });
}

/** A failure code: the runtime's own codes or any other string a host may use. */
export function failureCode(): fc.Arbitrary<string> {
  return fc.oneof(fc.constantFrom(...Object.values(FailureCode), "NotFound", "PermissionDenied"), text({ maxLength: 12 }));
}

/**
 * Any outcome, made with the {@link Outcome} helpers (so a program may return it as its result). `structured`
 * is absent about a quarter of the time; when present it may be `null`, which is distinct from absent.
 */
export function outcome(): fc.Arbitrary<Outcome> {
  const structured = fc.option(jsonValue(), { nil: undefined, freq: 4 });
  return fc.oneof(
    fc.record({ content: text({ maxLength: 40 }), structured }).map(({ content, structured }) => Outcome.success(content, structured)),
    fc
      .record({ code: failureCode(), content: text({ maxLength: 40 }), structured })
      .map(({ code, content, structured }) => Outcome.failure(code, content, structured)),
  );
}

/** A capability name: a typical tool name or any string (names are opaque to the protocol). */
export function capabilityName(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("read", "write", "list", "search", "http.get", "fs/read_file") },
    { weight: 1, arbitrary: text({ maxLength: 10 }) },
  );
}

/** A request or reply id: a positive safe integer, small ones most often, the largest now and then. */
export function frameId(): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 1000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) },
    { weight: 1, arbitrary: fc.constant(Number.MAX_SAFE_INTEGER) },
  );
}

/** A log level: the runtime's four or any string (hosts accept any). */
export function logLevel(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("debug", "info", "warn", "error") },
    { weight: 1, arbitrary: text({ maxLength: 8 }) },
  );
}

/** A guest `hello` for protocol 1; `sdk` is absent, this package's name, or any string. */
export function helloFrame(): fc.Arbitrary<HelloFrame> {
  return fc
    .option(fc.oneof(fc.constant(SDK), text()), { nil: undefined })
    .map((sdk): HelloFrame => (sdk === undefined ? { type: "hello", protocol: PROTOCOL } : { type: "hello", protocol: PROTOCOL, sdk }));
}

/**
 * A host `invoke` for protocol 1 (`input` always present, as decoding makes it), sometimes with a
 * `traceparent`: a W3C one, or any text (the protocol passes it on as it is).
 */
export function invokeFrame(): fc.Arbitrary<InvokeFrame> {
  return fc
    .record({
      allowed: fc.array(capabilityName(), { maxLength: 5 }),
      input: jsonValue(),
      traceparent: fc.option(fc.oneof(traceparent(), text()), { nil: undefined }),
    })
    .map(({ allowed, input, traceparent }): InvokeFrame => {
      const frame: InvokeFrame = { type: "invoke", protocol: PROTOCOL, allowed, input };
      if (traceparent !== undefined) frame.traceparent = traceparent;
      return frame;
    });
}

/** A W3C `traceparent` (version 00): trace id, parent span id, sampled flag. */
export function traceparent(): fc.Arbitrary<string> {
  const hex = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`));
  return fc.tuple(hex(32), hex(16), fc.constantFrom("00", "01")).map(([trace, span, flags]) => `00-${trace}-${span}-${flags}`);
}

/** A guest `request` with any id, name and JSON arguments. */
export function requestFrame(): fc.Arbitrary<RequestFrame> {
  return fc
    .record({ id: frameId(), name: capabilityName(), arguments: jsonValue() })
    .map(({ id, name, arguments: args }): RequestFrame => ({ type: "request", id, name, arguments: args }));
}

/** A guest `log` (level always present, as decoding makes it). */
export function logFrame(): fc.Arbitrary<LogFrame> {
  return fc
    .record({ level: logLevel(), content: text({ maxLength: 40 }) })
    .map(({ level, content }): LogFrame => ({ type: "log", level, content }));
}

/** A guest `result`. */
export function resultFrame(): fc.Arbitrary<ResultFrame> {
  return outcome().map((outcome): ResultFrame => ({ type: "result", outcome }));
}

/** A host `reply` with any id. */
export function replyFrame(): fc.Arbitrary<ReplyFrame> {
  return fc.record({ id: frameId(), outcome: outcome() }).map(({ id, outcome }): ReplyFrame => ({ type: "reply", id, outcome }));
}

/** Any frame the guest writes. */
export function guestFrame(): fc.Arbitrary<GuestFrame> {
  return fc.oneof(helloFrame(), requestFrame(), logFrame(), resultFrame());
}

/** Any frame the host writes. */
export function hostFrame(): fc.Arbitrary<HostFrame> {
  return fc.oneof(invokeFrame(), replyFrame());
}

/** Any protocol 1 frame. */
export function frame(): fc.Arbitrary<Frame> {
  return fc.oneof(guestFrame(), hostFrame());
}

/** One frame of a {@link session}, with the side that writes it. */
export interface SessionStep {
  from: "guest" | "host";
  frame: Frame;
}

/** Options for {@link session}. */
export interface SessionConstraints {
  /** Most capability calls in the run (default 8). */
  maxCalls?: number;
  /** Most log frames in the run (default 6). */
  maxLogs?: number;
}

/**
 * A whole valid protocol 1 session in the order the frames are written: guest `hello`, host `invoke`, then
 * requests (ids 1, 2, 3… in the order they are sent, as the runtime numbers them, each for an allowed name),
 * replies in any order but each after its request and each id answered exactly once, logs anywhere in
 * between, and a final guest `result`. When `allowed` is empty the run makes no requests.
 */
export function session(constraints: SessionConstraints = {}): fc.Arbitrary<SessionStep[]> {
  const call = fc.record({ pick: fc.nat(), args: jsonValue({ maxDepth: 3 }), at: fc.nat(30), wait: fc.nat(30), outcome: outcome() });
  const log = fc.record({ at: fc.nat(60), level: logLevel(), content: text({ maxLength: 30 }) });
  return fc
    .record({
      hello: helloFrame(),
      allowed: fc.uniqueArray(capabilityName(), { maxLength: 4 }),
      input: jsonValue({ maxDepth: 3 }),
      calls: fc.array(call, { maxLength: constraints.maxCalls ?? 8 }),
      logs: fc.array(log, { maxLength: constraints.maxLogs ?? 6 }),
      result: outcome(),
    })
    .map(({ hello, allowed, input, calls, logs, result }) => {
      // Each step gets a position; sorting by it interleaves requests, replies and logs.
      const placed: { at: number; order: number; step: SessionStep }[] = [];
      const sent = allowed.length === 0 ? [] : [...calls].sort((a, b) => a.at - b.at);
      sent.forEach((c, index) => {
        const id = index + 1;
        const name = allowed[c.pick % allowed.length]!;
        placed.push({ at: c.at, order: placed.length, step: { from: "guest", frame: { type: "request", id, name, arguments: c.args } } });
        // Strictly after its request; replies to different ids land in any relative order.
        placed.push({
          at: c.at + c.wait + 0.5,
          order: placed.length,
          step: { from: "host", frame: { type: "reply", id, outcome: c.outcome } },
        });
      });
      for (const l of logs) {
        placed.push({
          at: l.at,
          order: placed.length,
          step: { from: "guest", frame: { type: "log", level: l.level, content: l.content } },
        });
      }
      placed.sort((a, b) => a.at - b.at || a.order - b.order);
      return [
        { from: "guest", frame: hello },
        { from: "host", frame: { type: "invoke", protocol: PROTOCOL, allowed, input } },
        ...placed.map((p) => p.step),
        { from: "guest", frame: { type: "result", outcome: result } },
      ] satisfies SessionStep[];
    });
}

function failsToDecode(line: string): boolean {
  try {
    decodeFrame(line);
    return false;
  } catch {
    return true;
  }
}

/** Literal lines hosts and tools have been seen to emit, and near-misses of real frames. */
const GARBAGE_LITERALS = [
  "Debugger listening on ws://127.0.0.1:9229/8b5c6c2e-2f1a-4a8f-9f0e-6e1f1a2b3c4d",
  "For help, see: https://nodejs.org/en/docs/inspector",
  "undefined",
  "NaN",
  "{",
  '{"type":"reply","id":1,"outcome":{"status":"success"}',
  '{"type":"reply","id":1,"outcome":{"status":"success"}}}',
  "{'type':'reply'}",
  '{"type":"reply","id":9007199254740993,"outcome":{"status":"success"}}',
  '{"type":"reply","id":1e400,"outcome":{"status":"success"}}',
  '{"type":"reply","id":-1,"outcome":{"status":"success"}}',
  '{"type":"reply","id":0,"outcome":{"status":"success"}}',
  '{"type":"reply","id":1.5,"outcome":{"status":"success"}}',
  '{"type":"reply","id":"1","outcome":{"status":"success"}}',
  '{"type":"reply","id":1}',
  '{"type":"reply","id":1,"outcome":{"status":"failure","content":"no code"}}',
  '{"type":"reply","id":1,"outcome":{"status":"ok","content":""}}',
  '{"type":"reply","id":1,"outcome":{"status":"success","content":42}}',
  '{"type":"invoke","protocol":"1","allowed":[]}',
  '{"type":"invoke","protocol":1.5,"allowed":[]}',
  '{"type":"invoke","protocol":1,"allowed":"read"}',
  '{"type":"invoke","protocol":1,"allowed":[1]}',
  '{"type":"request","id":1}',
  '{"type":"log","content":7}',
  '{"type":"hello","protocol":"1"}',
  '{"type":null}',
  '{"Type":"reply"}',
  "\u001b[31merror\u001b[0m",
  "\uFEFF{}",
];

/**
 * One line (no `\n`, not blank) that `decodeFrame` rejects: non-JSON text, JSON that is not an object,
 * objects without a type or with an unknown one, frames with wrong field types (string/zero/negative/
 * fractional/unsafe/`1e400` ids, invalid outcomes, a non-array `allowed`…), and console noise.
 */
export function garbageLine(): fc.Arbitrary<string> {
  const KNOWN = new Set(["hello", "invoke", "request", "log", "result", "reply"]);
  const notNumber = fc.oneof(fc.boolean(), fc.constant(null), text({ maxLength: 4 }), fc.array(fc.integer(), { maxLength: 2 }));
  const badId = fc.oneof(
    notNumber,
    fc.integer({ max: 0 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
  );
  const badProtocol = fc.oneof(
    notNumber,
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
  );
  const arbitrary = fc.oneof(
    fc.constantFrom(...GARBAGE_LITERALS),
    text({ minLength: 1, maxLength: 40 }).map((s) => s.replaceAll("\n", " ")),
    jsonValue({ maxDepth: 2 })
      .filter((v) => typeof v !== "object" || v === null || Array.isArray(v))
      .map((v) => JSON.stringify(v)),
    fc
      .record({ type: text({ maxLength: 8 }).filter((t) => !KNOWN.has(t)), rest: jsonValue({ maxDepth: 1, maxChainDepth: 0 }) })
      .map(({ type, rest }) => JSON.stringify({ type, rest })),
    jsonObject(jsonValue({ maxDepth: 1, maxChainDepth: 0 }), 3).map((o) => {
      const { type: _type, ...rest } = o;
      return JSON.stringify(rest);
    }),
    fc
      .record({ id: badId, outcome: outcome() })
      .map(({ id, outcome }) => JSON.stringify({ type: "reply", id, outcome: Outcome.toJson(outcome) })),
    fc
      .record({ id: frameId(), outcome: jsonValue({ maxDepth: 1, maxChainDepth: 0 }) })
      .map(({ id, outcome }) => JSON.stringify({ type: "reply", id, outcome })),
    fc
      .record({ protocol: badProtocol, allowed: fc.array(capabilityName(), { maxLength: 2 }) })
      .map(({ protocol, allowed }) => JSON.stringify({ type: "invoke", protocol, allowed })),
    fc
      .record({
        protocol: fc.integer(),
        allowed: fc.array(
          notNumber.filter((v) => typeof v !== "string"),
          { minLength: 1, maxLength: 2 },
        ),
      })
      .map(({ protocol, allowed }) => JSON.stringify({ type: "invoke", protocol, allowed })),
  );
  return arbitrary.filter((line) => line.trim() !== "" && !line.includes("\n") && failsToDecode(line));
}

/** Options for {@link chunking}. */
export interface ChunkingConstraints {
  /** Most cut points chosen freely (default 64). */
  maxCuts?: number;
}

/**
 * Ways to cut `bytes` into chunks as a stream might deliver them: fixed sizes (1, 7, 64, 1460, 65536),
 * random sizes up to such a bound, random cut points, and cuts placed where naive readers break: inside
 * 2/3/4-byte UTF-8 sequences and between `\r` and `\n`. Empty chunks occur too. The chunks always
 * concatenate back to `bytes`.
 */
export function chunking(bytes: Uint8Array, constraints: ChunkingConstraints = {}): fc.Arbitrary<Buffer[]> {
  const length = bytes.length;
  if (length <= 1) return fc.constant([Buffer.from(bytes)]);
  const awkward: number[] = [];
  for (let i = 1; i < length; i++) {
    // A continuation byte (10xxxxxx) at i means a cut at i splits a character; \r|\n splits a CRLF.
    if ((bytes[i]! & 0xc0) === 0x80 || (bytes[i - 1] === 13 && bytes[i] === 10)) awkward.push(i);
  }
  const maxCuts = constraints.maxCuts ?? 64;
  const BOUNDS = [1, 7, 64, 1460, 65536] as const;
  const freeCuts = fc.array(fc.integer({ min: 0, max: length }), { maxLength: maxCuts });
  const awkwardCuts =
    awkward.length === 0
      ? fc.constant<number[]>([])
      : fc.subarray(awkward.length > 4096 ? awkward.filter((_, i) => i % Math.ceil(awkward.length / 4096) === 0) : awkward);
  const cuts: fc.Arbitrary<number[]> = fc.oneof(
    fc.constantFrom(...BOUNDS).map((size) => everyNth(length, () => size)),
    fc.tuple(fc.constantFrom(...BOUNDS), fc.array(fc.nat(), { minLength: 1, maxLength: 32 })).map(([bound, seeds]) => {
      let i = 0;
      return everyNth(length, () => 1 + (seeds[i++ % seeds.length]! % bound));
    }),
    freeCuts,
    fc.tuple(awkwardCuts, freeCuts).map(([a, b]) => [...a, ...b]),
  );
  return cuts.map((points) => {
    const sorted = [...points].sort((a, b) => a - b);
    const chunks: Buffer[] = [];
    let from = 0;
    for (const at of sorted) {
      chunks.push(Buffer.from(bytes.subarray(from, at)));
      from = at;
    }
    chunks.push(Buffer.from(bytes.subarray(from)));
    return chunks;
  });
}

function everyNth(length: number, nextSize: () => number): number[] {
  const points: number[] = [];
  for (let at = nextSize(); at < length; at += nextSize()) points.push(at);
  return points;
}
