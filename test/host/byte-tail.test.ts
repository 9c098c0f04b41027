/** The stderr tail: bounded, exact, and never shows a character cut in half. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ByteTail } from "../../src/host/process/byte-tail.js";
import { text } from "../../src/testing/arbitraries.js";

describe("ByteTail", () => {
  it("keeps exactly the last maxBytes bytes, however the stream is chunked, and counts the rest", () => {
    fc.assert(
      fc.property(fc.array(text({ maxLength: 30 }), { maxLength: 30 }), fc.integer({ min: 1, max: 64 }), (pieces, max) => {
        const tail = new ByteTail(max);
        for (const piece of pieces) tail.push(Buffer.from(piece));
        // The bytes as pushed: a lone surrogate ending one piece is encoded on its own (U+FFFD), never
        // paired with one starting the next, as joining the strings first would do.
        const all = Buffer.concat(pieces.map((piece) => Buffer.from(piece)));
        const kept = all.subarray(Math.max(0, all.length - max));
        expect(tail.dropped).toBe(all.length - kept.length);
        // A character cut by the trim is dropped whole: the text is the kept bytes minus leading continuation bytes.
        let start = 0;
        while (tail.dropped > 0 && start < kept.length && start < 3 && (kept[start]! & 0xc0) === 0x80) start++;
        expect(tail.text()).toBe(kept.subarray(start).toString("utf8"));
      }),
    );
  });

  it("does not show U+FFFD for a multi-byte character cut by the trim", () => {
    const tail = new ByteTail(5);
    tail.push("读读读"); // 9 bytes: the tail starts inside the second character
    expect(tail.text()).toBe("读");
    expect(tail.dropped).toBe(4);
  });
});
