// Properties of the guest runtime as a whole, driven by a scripted in-process host.
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { decodeFrame, encodeFrame, type HostFrame, type InvokeFrame } from "../../src/protocol/frames.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { serve, type GuestProgram } from "../../src/guest/serve.js";
import { capabilityName, garbageLine, outcome, session } from "../../src/testing/arbitraries.js";
import { SDK } from "../../src/protocol/version.js";
import { StreamWire } from "../../src/wires/stdio.js";
import { resultOf, runScriptedGuest, startGuest } from "../helpers/memory-guest.js";
import { watchUnhandledRejections } from "../helpers/rejections.js";

let rejections: ReturnType<typeof watchUnhandledRejections>;
beforeEach(() => {
  rejections = watchUnhandledRejections();
});
afterEach(async () => {
  await rejections.settle();
  expect(rejections.stop()).toEqual([]);
});

describe("sessions", () => {
  it("given a session's host frames, the runtime writes exactly the session's guest frames", async () => {
    await fc.assert(
      fc.asyncProperty(session(), async (steps) => {
        const invoke = steps[1]!.frame as InvokeFrame;
        // The program plays the guest side: it waits for each reply where the session has it.
        const run: GuestProgram = async (ears, input) => {
          expect(input).toEqual(invoke.input);
          const calls = new Map<number, Promise<Outcome>>();
          for (const { frame } of steps.slice(2)) {
            if (frame.type === "request") calls.set(frame.id, ears.call(frame.name, frame.arguments));
            else if (frame.type === "log") void ears.log(frame.content, frame.level);
            else if (frame.type === "reply") expect(await calls.get(frame.id)).toEqual(frame.outcome);
            else if (frame.type === "result") return frame.outcome;
          }
          throw new Error("the session has no result");
        };
        const guest = startGuest(run);
        expect(await guest.next()).toEqual({ type: "hello", protocol: 1, sdk: SDK });
        for (const step of steps.slice(1)) {
          if (step.from === "host") await guest.send(step.frame as HostFrame);
          else expect(await guest.next()).toEqual(step.frame);
        }
        expect(await guest.next()).toBeUndefined();
        expect((await guest.report).status).toBe("completed");
      }),
      { numRuns: 150 },
    );
  });
});

describe("allowlist", () => {
  it("for any allowlist and call sequence, no request for a denied name reaches the wire", async () => {
    const scenario = fc.uniqueArray(capabilityName(), { maxLength: 4 }).chain((allowed) =>
      fc.record({
        allowed: fc.constant(allowed),
        names: fc.array(allowed.length > 0 ? fc.oneof(fc.constantFrom(...allowed), capabilityName()) : capabilityName(), { maxLength: 12 }),
        concurrent: fc.boolean(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(scenario, async ({ allowed, names, concurrent }) => {
        const outcomes: Outcome[] = [];
        const { frames, requests } = await runScriptedGuest(
          async (ears) => {
            if (concurrent) outcomes.push(...(await Promise.all(names.map((name, i) => ears.call(name, i)))));
            else for (const [i, name] of names.entries()) outcomes.push(await ears.call(name, i));
          },
          { allowed, answer: (request) => Outcome.success(`host ran ${request.name}`, request.arguments) },
        );
        expect(resultOf(frames)).toEqual(Outcome.success());
        for (const request of requests) expect(allowed).toContain(request.name);
        expect(requests.map((r) => r.arguments)).toEqual(names.flatMap((name, i) => (allowed.includes(name) ? [i] : [])));
        names.forEach((name, i) => {
          if (allowed.includes(name)) expect(outcomes[i]).toEqual(Outcome.success(`host ran ${name}`, i));
          else expect(outcomes[i]).toMatchObject({ status: "failure", code: FailureCode.CapabilityDenied });
        });
      }),
      { numRuns: 150 },
    );
  });
});

describe("correlation", () => {
  it("replies in any order resolve the calls they answer", async () => {
    const scenario = fc.integer({ min: 1, max: 16 }).chain((n) =>
      fc.record({
        order: fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
        outcomes: fc.array(outcome(), { minLength: n, maxLength: n }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(scenario, async ({ order, outcomes }) => {
        let resolved: Outcome[] = [];
        const guest = startGuest(async (ears) => {
          resolved = await Promise.all(outcomes.map((_, i) => ears.call("read", { call: i })));
        });
        await guest.invoke(["read"]);
        const requests = [];
        for (let i = 0; i < outcomes.length; i++) requests.push(await guest.expect("request"));
        // Reply to call i with outcomes[i], in the shuffled order.
        for (const i of order) {
          const request = requests.find((r) => (r.arguments as { call: number }).call === i)!;
          await guest.reply(request.id, outcomes[i]!);
        }
        expect(resultOf(await guest.rest())).toEqual(Outcome.success());
        expect(resolved).toEqual(outcomes);
      }),
      { numRuns: 150 },
    );
  });
});

describe("garbage from the host", () => {
  const script = fc.record({
    calls: fc.integer({ min: 0, max: 4 }),
    answered: fc.nat(4),
    garbage: fc.array(garbageLine(), { minLength: 1, maxLength: 3 }),
    first: fc.boolean(),
    endAfter: fc.boolean(),
    programCatches: fc.boolean(),
  });

  it("garbage lines always end in a result or a TransportError, never a hang or an unhandled rejection", async () => {
    await fc.assert(
      fc.asyncProperty(script, async ({ calls, answered, garbage, first, endAfter, programCatches }) => {
        let ran = false;
        const settled: PromiseSettledResult<Outcome>[] = [];
        const guest = startGuest(async (ears) => {
          ran = true;
          const pending = [...Array(calls).keys()].map((i) => ears.call("read", i));
          settled.push(...(await Promise.allSettled(pending)));
          if (!programCatches) await Promise.all(pending);
          return "done";
        });
        await guest.expect("hello");
        if (!first) {
          await guest.send({ type: "invoke", protocol: 1, allowed: ["read"], input: null });
          for (let i = 0; i < calls; i++) {
            const request = await guest.expect("request");
            if (i < answered) await guest.reply(request.id, Outcome.success("answered"));
          }
        }
        for (const line of garbage) await guest.sendLine(line).catch(() => {}); // the guest may have closed already
        if (endAfter) guest.host.end();
        const rest = await guest.rest();
        const report = await guest.report;
        if (first) {
          expect(rest).toEqual([]);
          expect(report.status).toBe("broken");
          expect((report as { error: unknown }).error).toBeInstanceOf(TransportError);
          expect(ran).toBe(false);
          return;
        }
        expect(report.status).toBe("completed");
        const outcome = resultOf(rest);
        settled.forEach((s, i) => {
          if (i < answered) expect(s).toEqual({ status: "fulfilled", value: Outcome.success("answered") });
          else {
            expect(s.status).toBe("rejected");
            expect((s as PromiseRejectedResult).reason).toBeInstanceOf(TransportError);
          }
        });
        const unanswered = calls > answered;
        if (unanswered && !programCatches)
          expect(outcome).toMatchObject({ code: FailureCode.GuestFailed, content: expect.stringMatching(/may already have executed/) });
        else expect(outcome).toEqual(Outcome.success("", "done"));
        await rejections.settle();
      }),
      { numRuns: 200 },
    );
  });

  it("arbitrary bytes on the input stream always end in a result or a TransportError", async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 200 }),
      fc.array(garbageLine(), { minLength: 1, maxLength: 3 }).map((lines) => Buffer.from(`${lines.join("\n")}\n`)),
    );
    await fc.assert(
      fc.asyncProperty(fc.boolean(), bytes, fc.boolean(), async (afterInvoke, noise, programCatches) => {
        const input = new PassThrough();
        const output = new PassThrough();
        const written: Buffer[] = [];
        output.on("data", (chunk: Buffer) => written.push(chunk));
        const report = serve({
          wire: new StreamWire(input, output),
          run: async (ears) => {
            const call = ears.call("read");
            return programCatches ? call.catch((e: TransportError) => e.kind) : call;
          },
        });
        if (afterInvoke) input.write(`${encodeFrame({ type: "invoke", protocol: 1, allowed: ["read"], input: null })}\n`);
        input.end(noise);
        const done = await report;
        const lines = Buffer.concat(written).toString("utf8").split("\n");
        expect(lines.pop()).toBe("");
        const frames = lines.map(decodeFrame);
        expect(frames[0]?.type).toBe("hello");
        if (done.status === "completed") {
          expect(frames.at(-1)?.type).toBe("result");
          expect(frames.filter((f) => f.type === "result")).toHaveLength(1);
        } else {
          expect(done.error).toBeInstanceOf(TransportError);
          expect(frames.some((f) => f.type === "result")).toBe(false);
        }
        if (afterInvoke) expect(done.status).toBe("completed");
        await rejections.settle();
      }),
      { numRuns: 200 },
    );
  });
});
