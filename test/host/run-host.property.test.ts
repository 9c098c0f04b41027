/**
 * Properties of the host engine over the in-memory wire: any sequence of guest lines ends in a report
 * (never a hang) whose verdict matches a small model of protocol 1; and any valid session is hosted
 * exactly, replies going out in the order the handlers complete.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLinkedPair, decodeFrame, encodeFrame, Outcome, type MemoryWire } from "../../src/index.js";
import { HostFailureCode, runHost, type Capabilities, type HostFailureCode as Code } from "../../src/host/index.js";
import { garbageLine, guestFrame, helloFrame, hostFrame, jsonValue, session } from "../../src/testing/arbitraries.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

const ALLOWED = ["read", "write", "slow"];

/** A line a guest might write: frames of every kind (small ids, so some repeat), other protocols, garbage. */
const guestLine: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: guestFrame().map(encodeFrame) },
  {
    weight: 3,
    arbitrary: fc
      .record({ id: fc.integer({ min: 1, max: 4 }), name: fc.constantFrom(...ALLOWED, "secret"), arguments: jsonValue({ maxDepth: 2 }) })
      .map(({ id, name, arguments: args }) => encodeFrame({ type: "request", id, name, arguments: args })),
  },
  { weight: 1, arbitrary: fc.integer({ min: -2, max: 4 }).map((protocol) => encodeFrame({ type: "hello", protocol })) },
  { weight: 1, arbitrary: hostFrame().map(encodeFrame) },
  { weight: 1, arbitrary: garbageLine() },
);

/** Lines, usually opened by a proper hello so the run gets past the first frame. */
const guestLines = fc
  .tuple(fc.option(helloFrame(), { freq: 5, nil: undefined }), fc.array(guestLine, { maxLength: 12 }))
  .map(([hello, lines]) => (hello === undefined ? lines : [encodeFrame(hello), ...lines]));

/** What protocol 1 says the host must conclude from these lines followed by end of stream. */
function expected(lines: string[]): { code?: Code; result?: Outcome } {
  let phase: "hello" | "running" | "done" = "hello";
  let result: Outcome | undefined;
  const ids = new Set<number>();
  for (const line of lines) {
    if (phase === "done") return { code: HostFailureCode.ProtocolViolation, result };
    let frame;
    try {
      frame = decodeFrame(line);
    } catch {
      return { code: HostFailureCode.ProtocolViolation };
    }
    if (phase === "hello") {
      if (frame.type !== "hello") return { code: HostFailureCode.ProtocolViolation };
      if (frame.protocol !== 1) return { code: HostFailureCode.ProtocolMismatch };
      phase = "running";
      continue;
    }
    if (frame.type === "request") {
      if (ids.has(frame.id)) return { code: HostFailureCode.ProtocolViolation };
      ids.add(frame.id);
    } else if (frame.type === "result") {
      result = frame.outcome;
      phase = "done";
    } else if (frame.type !== "log") {
      return { code: HostFailureCode.ProtocolViolation };
    }
  }
  if (phase === "hello") return { code: HostFailureCode.NoHello };
  if (phase === "running") return { code: HostFailureCode.NoResult };
  return { result };
}

async function drain(wire: MemoryWire): Promise<string[]> {
  const lines: string[] = [];
  for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) lines.push(line);
  return lines;
}

describe("runHost over arbitrary guest output", () => {
  it("always ends in a report whose verdict follows the protocol, and only runs allowed handlers", async () => {
    await fc.assert(
      fc.asyncProperty(guestLines, async (lines) => {
        const [guestEnd, hostEnd] = createLinkedPair();
        const ran: string[] = [];
        const capabilities: Capabilities = {
          read: () => (ran.push("read"), "text"),
          write: async () => (ran.push("write"), await new Promise((resolve) => setImmediate(resolve)), { written: true }),
          slow: (_args, { signal }) => (ran.push("slow"), new Promise((resolve) => signal.addEventListener("abort", resolve))),
          secret: () => (ran.push("secret"), "leaked"),
        };
        for (const line of lines) void guestEnd.send(line).catch(() => {});
        guestEnd.end();
        const hostLines: string[] = [];
        const [report, received] = await Promise.all([
          runHost(hostEnd, { allowed: ALLOWED, capabilities, onFrame: (direction, line) => direction === "host" && hostLines.push(line) }),
          drain(guestEnd),
        ]);

        const want = expected(lines);
        expect(report.failure?.code).toBe(want.code);
        expect(report.ok).toBe(want.code === undefined && want.result?.status === "success");
        if (want.result !== undefined) expect(report.outcome !== undefined && Outcome.equal(report.outcome, want.result)).toBe(true);
        // The host has the final say: a name outside allowed never reaches a handler.
        expect(ran.every((name) => ALLOWED.includes(name))).toBe(true);
        for (const call of report.calls) expect(call.denied === true).toBe(!ALLOWED.includes(call.name));
        // Every reply answers a recorded request, once; the invoke comes first and only after a protocol 1 hello.
        expect(received).toEqual(hostLines);
        const frames = received.map((line) => decodeFrame(line));
        if (frames.length > 0) expect(frames[0]).toMatchObject({ type: "invoke", allowed: ALLOWED, input: null });
        expect(frames.slice(1).every((f) => f.type === "reply")).toBe(true);
        const replied = frames.slice(1).map((f) => (f.type === "reply" ? f.id : 0));
        expect(new Set(replied).size).toBe(replied.length);
        expect(replied.every((id) => report.calls.some((call) => call.id === id))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("hosts any valid session exactly: correlation, completion-order replies, logs and result", async () => {
    await fc.assert(
      fc.asyncProperty(session(), async (steps) => {
        const [guestEnd, hostEnd] = createLinkedPair();
        const invoke = steps[1]!.frame;
        if (invoke.type !== "invoke") throw new Error("a session's second step is the invoke");
        // Each handler waits until the script reaches its reply, then answers with the scripted outcome.
        const release = new Map<number, () => void>();
        const scripted = new Map<number, Outcome>();
        for (const step of steps) if (step.frame.type === "reply") scripted.set(step.frame.id, step.frame.outcome);
        const handler = (_args: unknown, ctx: { id: number }) =>
          new Promise<Outcome>((resolve) => release.set(ctx.id, () => resolve(scripted.get(ctx.id)!)));
        const capabilities = Object.fromEntries(invoke.allowed.map((name) => [name, handler]));
        const running = runHost(hostEnd, { allowed: invoke.allowed, input: invoke.input, capabilities });

        for (const step of steps) {
          if (step.from === "guest") {
            await guestEnd.send(encodeFrame(step.frame));
            continue;
          }
          if (step.frame.type === "reply") {
            const id = step.frame.id;
            // The request may still be in flight to the handler: wait for it to start.
            while (!release.has(id)) await new Promise((resolve) => setImmediate(resolve));
            release.get(id)!();
          }
          const line = await guestEnd.receive();
          expect(line).toBeDefined();
          const got = decodeFrame(line!);
          if (step.frame.type === "invoke") expect(got).toEqual(step.frame);
          else if (step.frame.type === "reply") {
            expect(got).toMatchObject({ type: "reply", id: step.frame.id });
            if (got.type === "reply") expect(Outcome.equal(got.outcome, step.frame.outcome)).toBe(true);
          }
        }
        guestEnd.end();
        const report = await running;
        const result = steps.at(-1)!.frame;
        if (result.type !== "result") throw new Error("a session ends with its result");
        expect(report.failure).toBeUndefined();
        expect(report.ok).toBe(result.outcome.status === "success");
        expect(Outcome.equal(report.outcome!, result.outcome)).toBe(true);
        const requests = steps.flatMap((s) => (s.frame.type === "request" ? [s.frame] : []));
        expect(report.calls.map((c) => [c.id, c.name])).toEqual(requests.map((r) => [r.id, r.name]));
        expect(report.calls.every((c) => Outcome.equal(c.outcome!, scripted.get(c.id)!))).toBe(true);
        const logs = steps.flatMap((s) => (s.frame.type === "log" ? [[s.frame.level, s.frame.content]] : []));
        expect(report.logs.map((l) => [l.level, l.content])).toEqual(logs);
      }),
      { numRuns: 200 },
    );
  });
});
