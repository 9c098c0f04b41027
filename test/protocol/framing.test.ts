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
const TRIM_WHITESPACE = [
  ..."\t\v\f \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\r",
];

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
          .array(fc.oneof(fc.string({ unit: fc.constantFrom(...TRIM_WHITESPACE), maxLength: 6 }), frame().map(encodeFrame)), {
            maxLength: 12,
          })
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
    const chunks = [
      emoji.subarray(0, 0),
      emoji.subarray(0, 7),
      Buffer.alloc(0),
      emoji.subarray(7, 8),
      emoji.subarray(8, 9),
      emoji.subarray(9),
    ];
    expect(split(chunks)).toEqual(['{"e":"🎉"}']);
  });
});

/**
 * Lines of 1 MiB and more spread over chunks take their own path (copied into a buffer that is dropped
 * after the line; see LineSplitter). These hold that path to exactly the rules of short lines.
 */
describe("LineSplitter: lines of 1 MiB and more", () => {
  const MiB = 1024 * 1024;
  /** Text repeated past `bytes` UTF-8 bytes: any code point but \n, so characters of 1 to 4 bytes, real U+FFFD and \r. */
  const longText = (bytes: number) =>
    fc
      .tuple(
        fc.string({ unit: "binary", minLength: 1, maxLength: 24 }).filter((unit) => !unit.includes("\n")),
        fc.nat({ max: 70_000 }),
      )
      .map(([unit, extra]) => {
        const text = unit.repeat(Math.ceil((bytes + extra) / Buffer.byteLength(unit)));
        return `{${text}`;
      });
  const INVALID = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x8e], [0xc0, 0xaf], [0x80]];

  it("gives back the same string as a short line would, in any chunking, with \\n or \\r\\n", () => {
    fc.assert(
      fc.property(
        fc
          .tuple(longText(MiB), fc.constantFrom("\n", "\r\n"))
          .chain(([text, ending]) => chunking(Buffer.from(`${text}${ending}{"after":1}\n`)).map((chunks) => ({ text, chunks }))),
        ({ text, chunks }) => {
          expect(split(chunks, 64 * MiB)).toEqual([text, '{"after":1}']);
        },
      ),
      { seed: 0x1e1, numRuns: 10 },
    );
  });

  it("refuses invalid UTF-8 anywhere in a long line, in any chunking, and only at its newline", () => {
    fc.assert(
      fc.property(
        fc
          .tuple(longText(MiB), fc.constantFrom(...INVALID), fc.double({ min: 0, max: 1, noNaN: true }))
          .map(([text, invalid, where]) => {
            const at = Math.floor(text.length * where);
            // Cut between whole characters (never inside a surrogate pair), so the only invalid bytes are the inserted ones.
            const cut = at > 0 && text.charCodeAt(at - 1) >= 0xd800 && text.charCodeAt(at - 1) <= 0xdbff ? at - 1 : at;
            return Buffer.concat([
              Buffer.from('{"before":1}\n'),
              Buffer.from(text.slice(0, cut)),
              Buffer.from(invalid),
              Buffer.from(`${text.slice(cut)}\n`),
            ]);
          })
          .chain((bytes) => chunking(bytes)),
        (chunks) => {
          const emitted: string[] = [];
          const splitter = new LineSplitter(64 * MiB);
          let error: unknown;
          try {
            for (const chunk of chunks) splitter.push(chunk, (line) => emitted.push(line));
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(LineError);
          expect((error as LineError).kind).toBe("not-utf8");
          expect(emitted).toEqual(['{"before":1}']);
        },
      ),
      { seed: 0x1e2, numRuns: 10 },
    );
  });

  it("refuses a long line whose last character is cut by its newline", () => {
    const text = Buffer.from(`{${"a".repeat(MiB)}`);
    const cutEmoji = Buffer.from("🎉").subarray(0, 3);
    expect(() => split([text, cutEmoji, Buffer.from("\n")])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
    expect(() => split([Buffer.concat([text, cutEmoji]), Buffer.from("\r\n")])).toThrow(expect.objectContaining({ kind: "not-utf8" }));
  });

  it("skips a long whitespace-only line, reports a long line without a newline as truncated, and counts it against the cap", () => {
    const blank = Buffer.from(`${" \t\u3000".repeat(MiB / 4)}\r\n{"a":1}\n`);
    expect(split([blank.subarray(0, 70_000), blank.subarray(70_000)])).toEqual(['{"a":1}']);
    const long = Buffer.from(`{${"é".repeat(MiB)}`);
    expect(() => split([long.subarray(0, 65_536), long.subarray(65_536)])).toThrow(expect.objectContaining({ kind: "truncated" }));
    // Invalid bytes in an unfinished line are still reported as truncated at the end, as for a short line.
    expect(() => split([long, Buffer.from([0xff])])).toThrow(expect.objectContaining({ kind: "truncated" }));
    expect(() => split([long.subarray(0, 65_536), long.subarray(65_536)], 2 * MiB)).toThrow(expect.objectContaining({ kind: "oversized" }));
  });

  it("keeps splitting after a long line: a short line cut by chunks and another long line come out whole", () => {
    const first = `{${"x".repeat(2 * MiB)}`;
    const second = `{"e":"🎉"}`;
    const third = `{${"读🎉".repeat(MiB / 4)}`;
    const bytes = Buffer.from(`${first}\n${second}\n${third}\n`);
    const at = bytes.indexOf("🎉") + 2; // cuts the short line's emoji
    const chunks = [
      bytes.subarray(0, 65_536),
      bytes.subarray(65_536, at),
      bytes.subarray(at, at + 3),
      bytes.subarray(at + 3, at + 100_001),
      bytes.subarray(at + 100_001),
    ];
    expect(split(chunks, 64 * MiB)).toEqual([first, second, third]);
  });
});
