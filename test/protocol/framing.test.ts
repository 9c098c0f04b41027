// Framing: frames -> lines -> bytes -> any chunking -> LineSplitter -> decodeFrame is the identity, and
// the splitter's edge cases (cap, BOM, CRLF, blank lines, truncation, invalid UTF-8) behave as documented.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, type Frame } from "../../src/protocol/frames.js";
import { LineError, LineSplitter } from "../../src/wires/line-splitter.js";
import { chunking, frame } from "../../src/testing/arbitraries.js";
import { logLineOfBytes } from "../helpers/log-line.js";

/** Frames written as lines with `\n` or `\r\n` endings, blank or whitespace-only lines mixed in, maybe a BOM first. */
const framedStream = fc
  .record({
    items: fc.array(
      fc.record({
        frame: frame(),
        ending: fc.constantFrom("\n", "\r\n"),
        blanksBefore: fc.array(fc.constantFrom("\n", "\r\n", "  \n", "\t\r\n", " \r \n"), { maxLength: 2 }),
      }),
      { maxLength: 30 },
    ),
    bom: fc.boolean(),
  })
  .map(({ items, bom }) => {
    const text = items.map((i) => `${i.blanksBefore.join("")}${encodeFrame(i.frame)}${i.ending}`).join("");
    return { frames: items.map((i) => i.frame), bytes: Buffer.from((bom ? "\uFEFF" : "") + text, "utf8") };
  });

/** Every character String.prototype.trim removes (ECMAScript WhiteSpace and LineTerminator), except \n. */
const TRIM_WHITESPACE = [..."\t\v\f \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\r"];

function split(chunks: Buffer[], maxLineBytes = 1 << 24): string[] {
  const splitter = new LineSplitter(maxLineBytes);
  const lines: string[] = [];
  for (const chunk of chunks) splitter.push(chunk, (line) => lines.push(line));
  splitter.end();
  return lines;
}

describe("framing property", () => {
  it("encode -> concatenate -> any re-chunking -> LineSplitter + decodeFrame gives back the frames, in order", () => {
    fc.assert(
      fc.property(
        framedStream.chain((stream) => chunking(stream.bytes).map((chunks) => ({ ...stream, chunks }))),
        ({ frames, chunks }) => {
          const decoded: Frame[] = split(chunks).map(decodeFrame);
          expect(decoded).toEqual(frames);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("an encoded frame is one line: no raw \\n or \\r, even for payloads full of them", () => {
    fc.assert(
      fc.property(frame(), (f) => {
        const line = encodeFrame(f);
        expect(line).not.toMatch(/[\r\n]/);
      }),
      { numRuns: 300 },
    );
  });

  it("the splitter never holds more than its cap while an oversized line arrives in any chunking", () => {
    const cap = 100;
    const line = Buffer.from(`{"type":"log","content":"${"读".repeat(60)}"}\n`);
    fc.assert(
      fc.property(chunking(line), (chunks) => {
        const splitter = new LineSplitter(cap);
        let error: unknown;
        for (const chunk of chunks) {
          try {
            splitter.push(chunk, () => {
              throw new Error("an oversized line must not be emitted");
            });
          } catch (e) {
            error = e;
            break;
          }
          expect(splitter.bufferedBytes).toBeLessThanOrEqual(cap);
        }
        expect(error).toBeInstanceOf(LineError);
        expect((error as LineError).kind).toBe("oversized");
      }),
    );
  });
});

describe("LineSplitter", () => {
  const lines = (input: string | Buffer, max?: number) => split([Buffer.from(input)], max);

  it("accepts a line of exactly the cap and refuses one byte more, naming the limit", () => {
    const exact = logLineOfBytes(100);
    expect(lines(`${exact}\n`, 100)).toEqual([exact]);
    expect(() => lines(`${logLineOfBytes(101)}\n`, 100)).toThrow(/exceeds the 100-byte limit/);
  });

  it("refuses an oversized line before its newline arrives", () => {
    const splitter = new LineSplitter(10);
    splitter.push(Buffer.from("0123456789"), () => {});
    expect(splitter.bufferedBytes).toBe(10);
    expect(() => splitter.push(Buffer.from("a"), () => {})).toThrow(expect.objectContaining({ kind: "oversized" }));
    expect(splitter.bufferedBytes).toBe(0);
  });

  it("accepts \\r\\n, skips blank and whitespace-only lines, keeps a lone \\r inside a line", () => {
    expect(lines('\n\r\n  \n\t\r\n{"a":1}\r\n\n{"b":"x\ry"}\n')).toEqual(['{"a":1}', '{"b":"x\ry"}']);
  });

  it("skips a line made only of any whitespace String.prototype.trim removes, not only spaces, tabs and CR", () => {
    expect(lines('\u00a0\n\f\n\v\r\n\u3000\u2028\n\ufeff\n{"a":1}\n\u2029 \t\n')).toEqual(['{"a":1}']);
    // Characters trim keeps are data: the line is emitted (and then fails as JSON, a visible error).
    expect(lines("\u200b\n\u0085\n")).toEqual(["\u200b", "\u0085"]);
    // Whitespace around a frame is left to the JSON parser, which accepts it.
    expect(lines('\u00a0{"a":1}\n')).toEqual(['\u00a0{"a":1}']);
  });

  it("whitespace-only lines of any trim-whitespace mix vanish in any chunking; frames between them survive", () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.oneof(fc.string({ unit: fc.constantFrom(...TRIM_WHITESPACE), maxLength: 6 }), frame().map(encodeFrame)), { maxLength: 12 })
          .chain((items) => {
            const bytes = Buffer.from(items.map((item) => `${item}\n`).join(""));
            return chunking(bytes).map((chunks) => ({ items, chunks }));
          }),
        ({ items, chunks }) => {
          expect(split(chunks)).toEqual(items.filter((item) => item.startsWith("{")));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("skips a UTF-8 BOM at the very start, even split across chunks, but not later in the stream", () => {
    expect(lines('\uFEFF{"a":1}\n')).toEqual(['{"a":1}']);
    expect(split([Buffer.from([0xef]), Buffer.from([0xbb]), Buffer.from([0xbf]), Buffer.from('{"a":1}\n')])).toEqual(['{"a":1}']);
    // A BOM later is data: the line then fails JSON parsing, a visible error rather than a silent fix.
    expect(lines('{"a":1}\n\uFEFF{"b":2}\n')).toEqual(['{"a":1}', '\uFEFF{"b":2}']);
  });

  it("reports bytes left without a final newline at the end as truncated, and ignores trailing whitespace", () => {
    expect(() => lines('{"a":1}\n{"b":')).toThrow(expect.objectContaining({ kind: "truncated" }));
    expect(lines('{"a":1}\n  ')).toEqual(['{"a":1}']);
  });

  it("refuses invalid UTF-8 instead of replacing it", () => {
    const bad = Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]);
    expect(() => split([bad])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
  });

  it("keeps a real U+FFFD, and still refuses invalid bytes next to one, in one chunk or across chunks", () => {
    expect(lines('{"r":"\uFFFD"}\n')).toEqual(['{"r":"\uFFFD"}']);
    const bad = Buffer.concat([Buffer.from('{"r":"\uFFFD'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}\n')]); // an encoded surrogate
    expect(() => split([bad])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
    expect(() => split([bad.subarray(0, 5), bad.subarray(5)])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
    expect(() => split([Buffer.from([0x7b, 0xff, 0x7d, 0x0a])])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
  });

  it("handles empty chunks and a character split over three chunks", () => {
    const emoji = Buffer.from('{"e":"🎉"}\n');
    const chunks = [emoji.subarray(0, 0), emoji.subarray(0, 7), Buffer.alloc(0), emoji.subarray(7, 8), emoji.subarray(8, 9), emoji.subarray(9)];
    expect(split(chunks)).toEqual(['{"e":"🎉"}']);
  });
});
