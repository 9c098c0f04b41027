// The one moving-head queue (wires/frame-queue.ts) as the host's deadlines, log book and stderr tail use
// it: peek, replaceOldest and toArray agree with an array model, also past the compaction threshold
// (runs of thousands of operations, so the head passes 1024 and the array is sliced).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameQueue } from "../../src/wires/frame-queue.js";

type Step = { op: "push"; count: number } | { op: "take"; count: number } | { op: "replace"; value: number } | { op: "clear" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 1500 }).map((count) => ({ op: "push" as const, count })) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 1500 }).map((count) => ({ op: "take" as const, count })) },
  { weight: 2, arbitrary: fc.integer().map((value) => ({ op: "replace" as const, value })) },
  { weight: 1, arbitrary: fc.constant({ op: "clear" as const }) },
);

describe("FrameQueue as a general moving-head queue", () => {
  it("peek, take, replaceOldest, size and toArray agree with an array model across compactions", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const queue = new FrameQueue<number>();
        const model: number[] = [];
        let next = 0;
        for (const s of steps) {
          if (s.op === "push") {
            for (let i = 0; i < s.count; i++) {
              queue.push(next);
              model.push(next++);
            }
          } else if (s.op === "take") {
            for (let i = 0; i < s.count; i++) expect(queue.take()).toBe(model.shift());
          } else if (s.op === "replace") {
            queue.replaceOldest(s.value);
            if (model.length > 0) model[0] = s.value;
          } else {
            queue.clear();
            model.length = 0;
          }
          expect(queue.size).toBe(model.length);
          expect(queue.peek()).toBe(model[0]);
        }
        expect(queue.toArray()).toEqual(model);
      }),
      { seed: 11, numRuns: 60 },
    );
  });

  it("replaceOldest on an empty queue changes nothing", () => {
    const queue = new FrameQueue<number>();
    queue.replaceOldest(1);
    expect(queue.size).toBe(0);
    expect(queue.peek()).toBeUndefined();
    expect(queue.toArray()).toEqual([]);
  });
});
