// LineSplitter against a reference model that sees the whole stream at once: whatever the chunking,
// the same lines come out and the same error is raised, including a BOM at the start (skipped) or
// later (kept), lines at or near the byte cap anywhere (also after another line in the same chunk),
// and the bytes held for an unfinished line are exactly those since the last newline.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LineError, LineSplitter } from "../../src/wires/line-splitter.js";
import { chunking } from "../../src/testing/arbitraries.js";

const SEED = 13_005;
const CAP = 64;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

interface Split {
  lines: string[];
  error?: "oversized" | "truncated" | "not-utf8";
}

/**
 * The model: strip one BOM at the very start, cut at `\n`, drop one trailing `\r`, skip lines that
 * trim to nothing; a line (with its `\r`) over the cap is oversized, bytes left after the last newline
 * are truncated unless they are whitespace.
 */
function reference(bytes: Buffer, cap: number): Split {
  const body = bytes.subarray(0, 3).equals(BOM) ? bytes.subarray(3) : bytes;
  const lines: string[] = [];
  let start = 0;
  for (let newline = body.indexOf(10); newline >= 0; newline = body.indexOf(10, start)) {
    if (newline - start > cap) return { lines, error: "oversized" };
    const end = newline > start && body[newline - 1] === 13 ? newline - 1 : newline;
    const line = body.toString("utf8", start, end);
    if (line.trim() !== "") lines.push(line);
    start = newline + 1;
  }
  if (body.length - start > cap) return { lines, error: "oversized" };
  if (body.toString("utf8", start).trim() !== "") return { lines, error: "truncated" };
  return { lines };
}

/** Bytes the splitter should hold after it was fed `prefix`: everything after the last newline (a leading BOM excepted). */
function heldAfter(prefix: Buffer): number {
  const body = prefix.subarray(0, 3).equals(BOM) ? prefix.subarray(3) : prefix;
  return body.length - (body.lastIndexOf(10) + 1);
}

/** Feeds `chunks` one by one, checking the held-bytes count after each, and reports what came out. */
function splitChunks(chunks: Buffer[], cap: number): Split {
  const splitter = new LineSplitter(cap);
  const lines: string[] = [];
  let fed = 0;
  const all = Buffer.concat(chunks);
  try {
    for (const chunk of chunks) {
      splitter.push(chunk, (line) => lines.push(line));
      fed += chunk.length;
      expect(splitter.bufferedBytes).toBe(heldAfter(all.subarray(0, fed)));
      expect(splitter.bufferedBytes).toBeLessThanOrEqual(cap);
    }
    splitter.end();
  } catch (error) {
    if (!(error instanceof LineError)) throw error;
    return { lines, error: error.kind };
  }
  return { lines };
}

// Characters that matter to the splitter: the BOM (U+FEFF, EF BB BF) and its look-alikes U+FEFE
// (EF BB BE) and U+FEBF (EF BA BF), `\r`, `{`, whitespace trim removes, and multi-byte characters.
const piece = fc.constantFrom("a", "{", "}", " ", "\t", "\r", "\uFEFF", "\uFEFE", "\uFEBF", "\u00a0", "é", "€", "🎉");
const shortLine = fc.array(piece, { maxLength: 10 }).map((parts) => parts.join(""));

/** A line of exactly `bytes` UTF-8 bytes (an interesting start, padded with "a"), maybe ending in `\r`. */
const sizedLine = (min: number, max: number) =>
  fc.record({ bytes: fc.integer({ min, max }), head: fc.array(piece, { maxLength: 6 }), cr: fc.boolean() }).map(({ bytes, head, cr }) => {
    const start = head.join("").replaceAll("\r", "");
    const end = cr ? "\r" : "";
    return `${start}${"a".repeat(Math.max(0, bytes - Buffer.byteLength(start) - end.length))}${end}`;
  });

/**
 * Streams of lines (short ones, ones at or just under the cap, now and then one just over), maybe a BOM first,
 * maybe a tail without newline.
 */
const stream = fc
  .record({
    bom: fc.boolean(),
    lines: fc.array(
      fc.oneof(
        { weight: 4, arbitrary: shortLine },
        { weight: 3, arbitrary: sizedLine(CAP - 3, CAP) },
        { weight: 1, arbitrary: sizedLine(CAP + 1, CAP + 3) },
      ),
      { maxLength: 8 },
    ),
    tail: fc.option(fc.oneof(shortLine, sizedLine(CAP - 1, CAP + 2)), { nil: undefined }),
  })
  .map(({ bom, lines, tail }) => Buffer.from(`${bom ? "\uFEFF" : ""}${lines.map((line) => `${line}\n`).join("")}${tail ?? ""}`));

/** Cuts at the places that matter: line starts, every byte of a BOM-like character, and near the cap into a line. */
function awkwardCuts(bytes: Buffer): fc.Arbitrary<Buffer[]> {
  const places = new Set<number>();
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i - 1] === 10) places.add(i);
    if (bytes[i] === 0xef) for (let j = i; j <= i + 3; j++) places.add(j);
    if (bytes[i] === 10) for (const back of [1, 2, 3, 4, CAP - 1, CAP, CAP + 1]) places.add(i - back);
  }
  const valid = [...places].filter((place) => place > 0 && place < bytes.length).sort((a, b) => a - b);
  if (valid.length === 0) return fc.constant([bytes]);
  return fc.subarray(valid).map((cuts) => {
    const chunks: Buffer[] = [];
    let from = 0;
    for (const cut of cuts) {
      chunks.push(bytes.subarray(from, cut));
      from = cut;
    }
    chunks.push(bytes.subarray(from));
    return chunks;
  });
}

const chunkedStream = stream.chain((bytes) =>
  fc.oneof(awkwardCuts(bytes), chunking(bytes), fc.constant<Buffer[]>([bytes])).map((chunks) => ({ bytes, chunks })),
);

describe("LineSplitter: splitting does not depend on chunking", () => {
  it("any chunking of any stream gives the reference's lines and error, and holds exactly the unfinished line's bytes", () => {
    fc.assert(
      fc.property(chunkedStream, ({ bytes, chunks }) => {
        expect(splitChunks(chunks, CAP)).toEqual(reference(bytes, CAP));
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it("a line of exactly the cap after another line in the same chunk is accepted; one byte more is refused", () => {
    const exact = "b".repeat(CAP);
    expect(splitChunks([Buffer.from(`{}\n${exact}\n`)], CAP)).toEqual({ lines: ["{}", exact] });
    expect(splitChunks([Buffer.from(`{}\n{}\n${exact}\n`)], CAP)).toEqual({ lines: ["{}", "{}", exact] });
    expect(splitChunks([Buffer.from(`{}\n${exact}b\n`)], CAP)).toEqual({ lines: ["{}"], error: "oversized" });
  });

  it("an unfinished line that starts after another line in its chunk is counted from its own start", () => {
    const exact = "c".repeat(CAP);
    // The line starts mid-chunk and is finished by the next chunk: it holds CAP - 10 bytes, then 10 more.
    expect(splitChunks([Buffer.from(`{}\n${exact.slice(0, CAP - 10)}`), Buffer.from(`${exact.slice(CAP - 10)}\n`)], CAP)).toEqual({
      lines: ["{}", exact],
    });
    expect(splitChunks([Buffer.from(`{}\n${exact.slice(0, CAP - 10)}`), Buffer.from(`${exact.slice(CAP - 10)}c\n`)], CAP)).toEqual({
      lines: ["{}"],
      error: "oversized",
    });
  });

  it("a BOM at the start of a later chunk is data, not skipped; a BOM first in the stream is skipped, even when split", () => {
    expect(splitChunks([Buffer.from('{"a":1}\n'), Buffer.from('\uFEFF{"b":2}\n')], CAP)).toEqual({ lines: ['{"a":1}', '\uFEFF{"b":2}'] });
    expect(splitChunks([Buffer.from('{"a":'), Buffer.from("\uFEFF1}\n")], CAP)).toEqual({ lines: ['{"a":\uFEFF1}'] });
    expect(splitChunks([BOM.subarray(0, 1), BOM.subarray(1), Buffer.from('{"a":1}\n'), BOM, Buffer.from("x\n")], CAP)).toEqual({
      lines: ['{"a":1}', "\uFEFFx"],
    });
  });

  it("its errors are LineErrors, named so, with a kind and a message that names the limit", () => {
    const splitter = new LineSplitter(CAP);
    let error: unknown;
    try {
      splitter.push(Buffer.from("d".repeat(CAP + 1)), () => {});
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LineError);
    expect(error).toMatchObject({ name: "LineError", kind: "oversized", message: `a frame exceeds the ${CAP}-byte limit` });
    expect(String(error)).toBe(`LineError: a frame exceeds the ${CAP}-byte limit`);
  });

  it("a stream opening with a BOM look-alike (EF BB BE) keeps it, however it is cut", () => {
    const bytes = Buffer.from("\uFEFE{}\n");
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(splitChunks([bytes.subarray(0, cut), bytes.subarray(cut)], CAP)).toEqual({ lines: ["\uFEFE{}"] });
    }
  });
});
