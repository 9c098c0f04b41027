// testGuest's transcript is typed FrameEntry[] (entry.frame is a protocol 1 Frame): both ends are this
// package's own code, so every line must be a complete frame. This checks the claim the type makes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Outcome, validateFrame } from "../../src/index.js";
import { jsonValue, testGuest } from "../../src/testing/index.js";

const step = fc.oneof(
  fc.record({ kind: fc.constant("call" as const), name: fc.constantFrom("read", "nope", "boom"), args: jsonValue({ maxDepth: 2 }) }),
  fc.record({ kind: fc.constant("log" as const), text: fc.string() }),
);

describe("testGuest transcripts hold only complete frames", () => {
  it("every entry has a frame that validates to itself (property, seeded)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 6 }),
        jsonValue({ maxDepth: 2 }),
        fc.option(jsonValue({ maxDepth: 2 })),
        async (steps, input, result) => {
          const report = await testGuest(
            async (ears) => {
              for (const s of steps) {
                if (s.kind === "log") await ears.log(s.text);
                else await ears.call(s.name, s.args);
              }
              if (result === null) throw new Error("the program gives up");
              return result;
            },
            {
              input,
              allowed: ["read", "boom"],
              capabilities: {
                read: (args) => Outcome.success("", args),
                boom: () => {
                  throw new Error("handler failed");
                },
              },
            },
          );
          expect(report.transcript.length).toBeGreaterThanOrEqual(3);
          for (const entry of report.transcript) {
            expect(Object.keys(entry).sort()).toEqual(["frame", "from"]);
            expect(validateFrame(entry.frame)).toEqual(entry.frame);
          }
        },
      ),
      { seed: 13, numRuns: 60 },
    );
  });
});
