import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Outcome } from "../../src/protocol/outcome.js";
import { outcome as anyOutcome, jsonValue } from "../../src/testing/arbitraries.js";
import { testGuest } from "../../src/testing/test-guest.js";

describe("testGuest", () => {
  it("runs a program against scripted capabilities and returns the report and the transcript", async () => {
    const report = await testGuest(
      async (ears, input) => {
        await ears.log("starting", "debug");
        const read = await ears.call("read", { path: (input as { path: string }).path });
        return { length: read.content.length };
      },
      { input: { path: "a.txt" }, capabilities: { read: (args) => `contents of ${(args as { path: string }).path}` } },
    );
    expect(report.ok).toBe(true);
    expect(report.outcome).toEqual({ status: "success", content: "", structured: { length: "contents of a.txt".length } });
    expect(report.calls).toMatchObject([
      { id: 1, name: "read", arguments: { path: "a.txt" }, outcome: { status: "success", content: "contents of a.txt" } },
    ]);
    expect(report.logs).toMatchObject([{ level: "debug", content: "starting" }]);
    expect(report.guest).toMatchObject({ status: "completed" });
    expect(report.transcript.map((e) => `${e.from}:${(e as { frame?: { type?: string } }).frame?.type}`)).toEqual([
      "guest:hello",
      "host:invoke",
      "guest:log",
      "guest:request",
      "host:reply",
      "guest:result",
    ]);
    expect(report.transcript[1]).toEqual({
      from: "host",
      frame: { type: "invoke", protocol: 1, allowed: ["read"], input: { path: "a.txt" } },
    });
  });

  it("reports a failing program as a GuestFailed outcome, not a rejection", async () => {
    const report = await testGuest(() => {
      throw new Error("boom");
    });
    expect(report.ok).toBe(false);
    expect(report.failure).toBeUndefined();
    expect(report.outcome).toMatchObject({ status: "failure", code: "GuestFailed", content: "boom" });
  });

  it("sends the allowed list, so a name outside it is refused before it reaches any handler", async () => {
    const report = await testGuest((ears) => ears.call("write", "x"), {
      allowed: ["read"],
      capabilities: { read: () => "r", write: () => "w" },
    });
    expect(report.outcome).toMatchObject({ status: "failure", code: "CapabilityDenied" });
    expect(report.calls).toEqual([]);
  });

  it("ends a program stuck on something other than the host at the run deadline", async () => {
    const report = await testGuest(() => new Promise(() => {}), { limits: { runTimeoutMs: 50 } });
    expect(report.failure?.code).toBe("RunTimeout");
    expect(report.guest).toBeUndefined();
  });

  it("passes frames on to a caller's onFrame, in the transcript's order", async () => {
    const seen: string[] = [];
    const report = await testGuest(() => "done", { onFrame: (from, line) => seen.push(`${from} ${line}`) });
    expect(seen.map((s) => s.split(" ")[0])).toEqual(report.transcript.map((e) => e.from));
    expect(report.outcome).toEqual({ status: "success", content: "", structured: "done" });
  });

  it("gives every call the scripted outcome and records the session faithfully", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(jsonValue({ maxDepth: 2 }), anyOutcome()), { maxLength: 6 }), async (script) => {
        let next = 0;
        const report = await testGuest(
          async (ears) => {
            const got = [];
            for (const [args] of script) got.push(Outcome.toJson(await ears.call("tool", args)));
            return got;
          },
          { capabilities: { tool: () => script[next++]![1] } },
        );
        expect(report.outcome?.structured).toEqual(script.map(([, o]) => Outcome.toJson(o)));
        expect(report.calls.map((c) => c.arguments)).toEqual(script.map(([args]) => args));
        expect(report.transcript.filter((e) => e.from === "host")).toHaveLength(1 + script.length);
      }),
      { numRuns: 40 },
    );
  });
});
