/**
 * RunReport is typed as a union on `ok` (RunSucceeded | RunFailedOutcome | RunBroken); the engine must
 * keep to it for anything a guest writes, or the narrowing the types promise would be a lie.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLinkedPair, encodeFrame } from "../../src/index.js";
import { runHost, type RunReport } from "../../src/host/index.js";
import { garbageLine, guestFrame, helloFrame } from "../../src/testing/arbitraries.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

/** Which member of the union a report is, or why it is none. */
function member(report: RunReport): string {
  if (report.ok === true) {
    return report.outcome?.status === "success" && report.failure === undefined ? "RunSucceeded" : "ok without a clean success";
  }
  if (report.ok !== false) return "ok is not a boolean";
  if (report.failure !== undefined) return "RunBroken";
  return report.outcome?.status === "failure" ? "RunFailedOutcome" : "ok: false with neither a failure nor a failure outcome";
}

const guestLines = fc
  .tuple(
    fc.option(helloFrame(), { freq: 5, nil: undefined }),
    fc.array(fc.oneof({ weight: 5, arbitrary: guestFrame().map(encodeFrame) }, { weight: 1, arbitrary: garbageLine() }), { maxLength: 8 }),
  )
  .map(([hello, lines]) => (hello === undefined ? lines : [encodeFrame(hello), ...lines]));

describe("RunReport: the runtime keeps to the union on ok", () => {
  it("every report from any guest lines is exactly one member (property, seeded)", async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(guestLines, async (lines) => {
        const [guestEnd, hostEnd] = createLinkedPair();
        for (const line of lines) void guestEnd.send(line).catch(() => {});
        guestEnd.end();
        const report = await runHost(hostEnd, { capabilities: { read: () => "x" }, limits: { closeGraceMs: 50 } });
        const kind = member(report);
        seen.add(kind);
        expect(["RunSucceeded", "RunFailedOutcome", "RunBroken"]).toContain(kind);
      }),
      { seed: 20, numRuns: 150 },
    );
    // The generator reaches every member, so the property is not vacuous.
    expect([...seen].sort()).toEqual(["RunBroken", "RunFailedOutcome", "RunSucceeded"]);
  });
});
