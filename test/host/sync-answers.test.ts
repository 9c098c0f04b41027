/**
 * A handler that answers synchronously is replied to in the turn its request was read (src/host/engine/answer.ts,
 * issue 33), and an asynchronous one as before: the reply must be the same either way, for every kind of value,
 * and a returned value is looked at exactly as `await` looks at it (a `then` getter runs once, a thenable is
 * followed). runHost in process, a serve() guest on the other end of the in-memory pair.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLinkedPair, Outcome, serve, type Json } from "../../src/index.js";
import { runHost, type HostOptions } from "../../src/host/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

/** The guest calls each name once, in order, and returns every outcome as JSON. */
async function replies(names: string[], capabilities: HostOptions["capabilities"]) {
  const [guestEnd, hostEnd] = createLinkedPair();
  void serve({
    wire: guestEnd,
    run: async (ears) => {
      const got: Json[] = [];
      for (const name of names) got.push(Outcome.toJson(await ears.call(name)));
      return got;
    },
  });
  const report = await runHost(hostEnd, { capabilities });
  expect(report.failure).toBeUndefined();
  return report.outcome?.structured as Json[];
}

/** Values a handler may return: JSON, strings, nothing, and what JSON would alter (refused, never "fixed"). */
const returned = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom<unknown>(undefined, NaN, Infinity, -0, 10n, new Date(0), new Map(), [undefined], { a: undefined }, { then: 1 }),
  fc.dictionary(fc.constantFrom("then", "status", "content", "structured", "x"), fc.jsonValue({ maxDepth: 1 })),
);

describe("a handler's answer, synchronous or not", () => {
  it("gives the same reply whether returned, resolved by a promise, or by a thenable (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(returned, async (value) => {
        const [now, later, thenable] = await replies(["now", "later", "thenable"], {
          now: () => value,
          later: async () => value,
          thenable: () => ({ then: (resolve: (v: unknown) => void) => resolve(value) }) as never,
        });
        // A refusal names the capability: the same reply but for that name.
        const named = (reply: Json, name: string) => JSON.parse(JSON.stringify(reply).replaceAll(`\\"${name}\\"`, '\\"NAME\\"')) as Json;
        expect(named(now!, "now")).toEqual(named(later!, "later"));
        expect(named(thenable!, "thenable")).toEqual(named(later!, "later"));
      }),
      { seed: 3305, numRuns: 120 },
    );
  });

  it("reads a returned object's `then` once, as await does, and follows it when it is a function", async () => {
    let reads = 0;
    const [answer] = await replies(["getter"], {
      getter: () =>
        ({
          get then() {
            reads++;
            return (resolve: (v: unknown) => void) => resolve({ from: "then" });
          },
        }) as never,
    });
    expect(reads).toBe(1);
    expect(answer).toEqual({ status: "success", content: "", structured: { from: "then" } });
  });

  it("answers a made Outcome, a synchronous throw and a rejection as before", async () => {
    const [made, thrown, rejected] = await replies(["made", "thrown", "rejected"], {
      made: () => Outcome.failure("NotFound", "no such thing"),
      thrown: () => {
        throw new Error("sync boom");
      },
      rejected: () => Promise.reject(new Error("async boom")),
    });
    expect(made).toEqual({ status: "failure", code: "NotFound", content: "no such thing" });
    expect(thrown).toMatchObject({ status: "failure", code: "CapabilityFailed", content: "sync boom" });
    expect(rejected).toMatchObject({ status: "failure", code: "CapabilityFailed", content: "async boom" });
  });
});
