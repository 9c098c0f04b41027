// StreamWire.send writes a frame over 1 Mi UTF-16 code units in slices. A slice that ended between the
// two halves of a surrogate pair would be encoded on its own, each half becoming U+FFFD: the frame would
// arrive altered. These tests put pairs at any position, and exactly at every cut, and compare bytes.
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/protocol/frames.js";
import { StreamWire } from "../../src/wires/stdio.js";

const SEED = 13_002;
/** The slice length of StreamWire (1 Mi code units); frames longer than this are cut. */
const MI = 1024 * 1024;
/** Where a log frame's content starts in its encoded text. */
const HEAD = encodeFrame({ type: "log", level: "info", content: "" }).length - 2;

/** Writes `frame` through a StreamWire and returns every byte that reached the output. */
async function bytesWritten(frame: string): Promise<Buffer> {
  const input = new PassThrough();
  const output = new PassThrough();
  const written: Buffer[] = [];
  output.on("data", (chunk: Buffer) => written.push(chunk));
  const wire = new StreamWire(input, output);
  await wire.send(frame);
  await wire.close();
  return Buffer.concat(written);
}

/** A log frame of `length` code units, ASCII except for surrogate pairs whose high halves sit at `pairs` (frame indices). */
function frameWithPairs(length: number, pairs: { at: number; high: number; low: number }[]): string {
  let content = "";
  let next = HEAD;
  for (const { at, high, low } of pairs) {
    content += "x".repeat(at - next) + String.fromCharCode(high, low);
    next = at + 2;
  }
  content += "x".repeat(length - 2 - next);
  const frame = encodeFrame({ type: "log", level: "info", content });
  if (frame.length !== length) throw new Error(`built a frame of ${frame.length} code units, wanted ${length}`);
  return frame;
}

const highHalf = fc.oneof(fc.constantFrom(0xd800, 0xdbff, 0xd83c), fc.integer({ min: 0xd800, max: 0xdbff }));
const lowHalf = fc.oneof(fc.constantFrom(0xdc00, 0xdfff, 0xdf89), fc.integer({ min: 0xdc00, max: 0xdfff }));

/** A frame over 1 Mi code units with surrogate pairs anywhere, often right at or next to a cut. */
const largeFrame = fc.integer({ min: MI + 1, max: 3 * MI + 8 }).chain((length) => {
  const first = HEAD;
  const last = length - 4; // the high half's index; the pair and the closing `"}` must fit
  // Cuts fall at multiples of 1 Mi, each one earlier by one for every pair kept whole before it.
  const nearCut = fc
    .tuple(fc.integer({ min: 1, max: Math.floor(length / MI) }), fc.integer({ min: -4, max: 3 }))
    .map(([k, delta]) => k * MI - 1 + delta);
  const position = fc.oneof(nearCut, fc.integer({ min: first, max: last }));
  const pairs = fc.array(fc.record({ at: position, high: highHalf, low: lowHalf }), { minLength: 1, maxLength: 6 }).map((all) => {
    const kept: { at: number; high: number; low: number }[] = [];
    for (const pair of [...all].sort((a, b) => a.at - b.at)) {
      if (pair.at < first || pair.at > last) continue;
      if (kept.length > 0 && pair.at < kept[kept.length - 1]!.at + 2) continue;
      kept.push(pair);
    }
    return kept;
  });
  return pairs.map((kept) => ({ length, pairs: kept }));
});

describe("StreamWire.send of a frame over 1 Mi code units", () => {
  it("any frame with surrogate pairs at any position, at a cut or not, arrives byte for byte", async () => {
    await fc.assert(
      fc.asyncProperty(largeFrame, async ({ length, pairs }) => {
        const frame = frameWithPairs(length, pairs);
        const bytes = await bytesWritten(frame);
        // A split pair would show up as EF BF BD (U+FFFD) bytes: compare whole buffers, then say where.
        const expected = Buffer.from(`${frame}\n`);
        if (!bytes.equals(expected)) expect(bytes.toString("utf8").indexOf("\uFFFD")).toBe(-1);
        expect(bytes.equals(expected)).toBe(true);
      }),
      { seed: SEED, numRuns: 40 },
    );
  });

  it.each([
    ["at the first cut, then ASCII", MI + 10, [MI - 1]],
    ["at the first cut, with another pair right after it", MI + 10, [MI - 1, MI + 1]],
    ["at the second cut after a pair kept whole at the first", 2 * MI + 10, [MI - 1, 2 * MI - 2]],
    ["at the second cut with none at the first", 2 * MI + 10, [2 * MI - 1]],
    ["one before the cut (the pair fits in the first slice)", MI + 10, [MI - 2]],
    ["one after the cut (the pair starts the second slice)", MI + 10, [MI]],
    ["last in the frame", MI + 10, [MI + 10 - 4]],
  ])("a pair %s arrives whole", async (_name, length, at) => {
    const frame = frameWithPairs(
      length,
      at.map((position) => ({ at: position, high: 0xd83c, low: 0xdf89 })),
    );
    const bytes = await bytesWritten(frame);
    expect(bytes.toString("utf8").includes("\uFFFD")).toBe(false);
    expect(bytes.equals(Buffer.from(`${frame}\n`))).toBe(true);
  });
});
