// Paging on its own: the limit, the 40,000-character budget, the cut marker for an oversize entry, and
// paging that always advances over every match exactly once.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cutEntry, DEFAULT_LIMIT, PAGE_BUDGET, paginate } from "../../src/openseek/paging.js";

const sized = (lengths: number[]) => (index: number) => String(index % 10).repeat(lengths[index]!);

describe("paginate", () => {
  it("uses a default limit of 8 and a budget of 40,000 characters", () => {
    expect(DEFAULT_LIMIT).toBe(8);
    expect(PAGE_BUDGET).toBe(40_000);
  });

  it("takes at most limit entries from offset", () => {
    const texts = sized(Array(20).fill(10));
    expect(paginate(20, 0, 8, texts)).toEqual({ entries: Array.from({ length: 8 }, (_, i) => texts(i)), nextOffset: 8 });
    expect(paginate(20, 16, 8, texts)).toEqual({ entries: [16, 17, 18, 19].map(texts) });
    expect(paginate(20, 19, 1, texts)).toEqual({ entries: [texts(19)] });
  });

  it("fills the 40,000-character budget exactly, and stops before an entry that would exceed it", () => {
    const exact = paginate(10, 0, 8, sized(Array(10).fill(10_000)));
    expect(exact.entries).toHaveLength(4);
    expect(exact.nextOffset).toBe(4);
    const over = paginate(10, 0, 8, sized(Array(10).fill(10_001)));
    expect(over.entries).toHaveLength(3);
    expect(over.nextOffset).toBe(3);
  });

  it("cuts an oversize entry with a visible marker so paging still advances", () => {
    const lengths = [100, 55_000, 70_000, 100];
    const texts = sized(lengths);
    // The oversize entry does not join a page that already has an entry...
    expect(paginate(4, 0, 8, texts)).toEqual({ entries: [texts(0)], nextOffset: 1 });
    // ...and alone it is cut to the budget.
    const second = paginate(4, 1, 8, texts);
    expect(second.nextOffset).toBe(2);
    expect(second.entries).toHaveLength(1);
    const cut = second.entries[0]!;
    expect(cut.length).toBeLessThanOrEqual(PAGE_BUDGET);
    expect(cut.startsWith("1".repeat(39_000))).toBe(true);
    expect(cut).toContain(
      "[... entry cut: 55000 characters do not fit the 40000-character page; the full schemas are in the page's tools records]",
    );
    const third = paginate(4, 2, 8, texts);
    expect(third.entries[0]).toContain("entry cut: 70000 characters");
    expect(third.nextOffset).toBe(3);
    expect(paginate(4, 3, 8, texts)).toEqual({ entries: [texts(3)] });
  });

  it("gives an empty last page at offset == total", () => {
    expect(paginate(3, 3, 8, sized([1, 1, 1]))).toEqual({ entries: [] });
    expect(paginate(0, 0, 8, sized([]))).toEqual({ entries: [] });
  });

  it("renders only the entries it looks at", () => {
    const seen: number[] = [];
    paginate(1_000, 500, 3, (index) => {
      seen.push(index);
      return "x";
    });
    expect(seen).toEqual([500, 501, 502]);
  });

  it("visits every entry once, in order, within the limit and the budget", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3_000 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 200, max: 5_000 }),
        (lengths, limit, budget) => {
          const texts = sized(lengths);
          const visited: string[] = [];
          let offset = 0;
          for (;;) {
            const page = paginate(lengths.length, offset, limit, texts, budget);
            expect(page.entries.length).toBeLessThanOrEqual(limit);
            expect(page.entries.reduce((sum, text) => sum + text.length, 0)).toBeLessThanOrEqual(budget);
            if (offset < lengths.length) expect(page.entries.length).toBeGreaterThan(0);
            visited.push(...page.entries);
            if (page.nextOffset === undefined) break;
            expect(page.nextOffset).toBe(offset + page.entries.length);
            offset = page.nextOffset;
          }
          expect(visited).toHaveLength(lengths.length);
          visited.forEach((text, index) => {
            const whole = texts(index);
            expect(text === whole || (whole.length > budget && text.includes("entry cut"))).toBe(true);
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("cutEntry", () => {
  it("never splits a surrogate pair", () => {
    const keep = cutEntry("x".repeat(5_000), 1_000).indexOf("\n[... entry cut");
    // A text of the same length whose unit at keep - 1 is the high surrogate of an emoji.
    const prefix = "a".repeat(keep - 1);
    const rest = 5_000 - prefix.length;
    const text = prefix + "😀".repeat(Math.floor(rest / 2)) + (rest % 2 === 1 ? "b" : "");
    const cut = cutEntry(text, 1_000);
    expect(cut.indexOf("\n[... entry cut")).toBe(keep - 1);
    expect(cut.slice(0, keep - 1)).toBe(prefix);
    expect(cut.length).toBeLessThanOrEqual(1_000);
    expect(cut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});
