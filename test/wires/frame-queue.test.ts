// FrameQueue against a plain array model: first in, first out, with the right size, whatever the mix
// of pushes, takes and clears.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameQueue } from "../../src/wires/frame-queue.js";

type Step = { op: "push"; frame: string } | { op: "take" } | { op: "clear" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 6 }).map((frame) => ({ op: "push" as const, frame })) },
  { weight: 3, arbitrary: fc.constant({ op: "take" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "clear" as const }) },
);

describe("FrameQueue", () => {
  it("behaves like an array used as a queue, for any sequence of push, take and clear", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const queue = new FrameQueue();
        const model: string[] = [];
        for (const s of steps) {
          if (s.op === "push") {
            queue.push(s.frame);
            model.push(s.frame);
          } else if (s.op === "take") {
            expect(queue.take()).toBe(model.shift());
          } else {
            queue.clear();
            model.length = 0;
          }
          expect(queue.size).toBe(model.length);
        }
      }),
      { seed: 13_016, numRuns: 500 },
    );
  });

  it("an empty queue gives undefined, and stays usable", () => {
    const queue = new FrameQueue();
    expect(queue.take()).toBeUndefined();
    expect(queue.size).toBe(0);
    queue.push("a");
    queue.push("b");
    expect(queue.take()).toBe("a");
    expect(queue.size).toBe(1);
    queue.clear();
    expect(queue.size).toBe(0);
    expect(queue.take()).toBeUndefined();
  });
});
