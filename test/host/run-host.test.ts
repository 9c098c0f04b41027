/**
 * runHost in process: a guest using `serve` (or a scripted raw guest) on one end of the in-memory
 * pair, the engine on the other.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { createLinkedPair, Outcome, serve, streamWire, type Json, type MemoryWire } from "../../src/index.js";
import type { GuestProgram } from "../../src/guest/serve.js";
import { HostFailureCode, HostReplyCode, runHost, type HostOptions, type RunReport } from "../../src/host/index.js";
import { activeTimers, captureWarnings, failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

/** Runs `program` under `serve` against runHost; returns the host's report. */
async function session(program: GuestProgram, options: HostOptions = {}) {
  const [guestEnd, hostEnd] = createLinkedPair();
  void serve({ wire: guestEnd, run: program });
  return { report: await runHost(hostEnd, options) };
}

/** A guest scripted frame by frame: what it sends is exactly what the test writes. */
function rawGuest() {
  const [guestEnd, hostEnd] = createLinkedPair();
  return {
    hostEnd,
    send(...frames: (object | string)[]) {
      for (const frame of frames) void guestEnd.send(typeof frame === "string" ? frame : JSON.stringify(frame)).catch(() => {});
    },
    end: () => guestEnd.end(),
    /** Everything the host sent, up to its end of the wire. */
    async received(): Promise<Record<string, unknown>[]> {
      return drain(guestEnd);
    },
  };
}

async function drain(wire: MemoryWire): Promise<Record<string, unknown>[]> {
  const frames: Record<string, unknown>[] = [];
  for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) frames.push(JSON.parse(line));
  return frames;
}

const hello = { type: "hello", protocol: 1, sdk: "test" };

describe("runHost answering a serve() guest", () => {
  it("maps each kind of handler answer to its reply", async () => {
    const { report } = await session(
      async (ears) =>
        [
          await ears.call("text"),
          await ears.call("nothing"),
          await ears.call("json", { n: 1 }),
          await ears.call("made"),
          await ears.call("fails"),
        ].map((o) => Outcome.toJson(o)),
      {
        capabilities: {
          text: () => "plain",
          nothing: () => undefined,
          json: (args) => ({ got: args }),
          made: async () => Outcome.success("made", null),
          fails: () => Outcome.failure("NotFound", "no such thing", { path: "x" }),
        },
      },
    );
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toEqual([
      { status: "success", content: "plain" },
      { status: "success", content: "" },
      { status: "success", content: "", structured: { got: { n: 1 } } },
      { status: "success", content: "made", structured: null },
      { status: "failure", code: "NotFound", content: "no such thing", structured: { path: "x" } },
    ]);
    expect(report.calls.map((c) => c.name)).toEqual(["text", "nothing", "json", "made", "fails"]);
    expect(report.calls.every((c) => c.outcome !== undefined && c.durationMs >= 0)).toBe(true);
  });

  it("turns a throwing handler into a CapabilityFailed reply that keeps the message", async () => {
    const { report } = await session((ears) => ears.call("boom", null), {
      capabilities: {
        boom: () => {
          throw new Error("disk on fire");
        },
      },
    });
    expect(report.outcome).toEqual({ status: "failure", code: HostReplyCode.CapabilityFailed, content: "disk on fire" });
    expect(report.failure).toBeUndefined();
    expect(report.ok).toBe(false); // the guest's outcome is a failure, though the session was fine
  });

  it("refuses an answer JSON would alter, saying why, instead of sending it altered", async () => {
    const { report } = await session(async (ears) => [Outcome.toJson(await ears.call("nan")), Outcome.toJson(await ears.call("big"))], {
      capabilities: {
        nan: () => ({ ratio: NaN }),
        big: () => Outcome.success("ok", { n: 10n } as unknown as Json),
      },
    });
    const [nan, big] = report.outcome?.structured as Record<string, string>[];
    expect(nan).toMatchObject({ status: "failure", code: "CapabilityFailed" });
    expect(nan!.content).toContain("$.ratio is NaN");
    expect(big).toMatchObject({ status: "failure", code: "CapabilityFailed" });
    expect(big!.content).toContain("structured.n is a BigInt");
  });

  it("answers CapabilityMissing for an allowed name without a handler", async () => {
    const { report } = await session((ears) => ears.call("ghost"), { allowed: ["ghost"] });
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.CapabilityMissing });
  });

  it("answers CallTimedOut when a handler is too slow, aborting its signal", async () => {
    let reason: unknown;
    const { report } = await session((ears) => ears.call("slow"), {
      limits: { callTimeoutMs: 50 },
      capabilities: {
        slow: (_args, { signal }) =>
          new Promise((resolve) =>
            signal.addEventListener("abort", () => {
              reason = signal.reason;
              resolve("too late");
            }),
          ),
      },
    });
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.CallTimedOut });
    expect(report.outcome?.content).toContain("may have run");
    expect((reason as DOMException).name).toBe("TimeoutError");
    expect(report.calls[0]!.outcome).toEqual(report.outcome);
  });

  it("times out each slow call in turn, answers the quick ones between them, and aborts a signal read late", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let readLate!: () => void;
    const lateRead = new Promise<void>((resolve) => (readLate = resolve));
    let lateSignal: AbortSignal | undefined;
    const { report } = await session(
      async (ears) => {
        const first = ears.call("slow", 1);
        const quick = await ears.call("quick");
        const second = ears.call("slow", 2);
        const outcomes = [await first, quick, await second];
        await ears.call("peek"); // only now does the first slow handler read its signal
        return outcomes.map((o) => (o.status === "success" ? o.content : o.code));
      },
      {
        limits: { callTimeoutMs: 50 },
        capabilities: {
          slow: async (args, ctx) => {
            if (args !== 1) return new Promise(() => {});
            await gate;
            lateSignal = ctx.signal;
            readLate();
            return "too late";
          },
          quick: () => "quick",
          peek: async () => {
            release();
            await lateRead;
            return "ok";
          },
        },
      },
    );
    expect(report.outcome?.structured).toEqual([HostReplyCode.CallTimedOut, "quick", HostReplyCode.CallTimedOut]);
    expect(lateSignal?.aborted).toBe(true);
    expect((lateSignal?.reason as DOMException).name).toBe("TimeoutError");
    expect(report.calls.map((call) => call.outcome?.status === "failure" && call.outcome.code)).toEqual([
      HostReplyCode.CallTimedOut,
      false,
      HostReplyCode.CallTimedOut,
      false,
    ]);
  });

  it("answers TooManyCalls past maxInFlight, and never runs more handlers at once", async () => {
    let running = 0;
    let most = 0;
    let refused = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { report } = await session(
      async (ears) => {
        const outcomes = await Promise.all(Array.from({ length: 20 }, () => ears.call("work")));
        return outcomes.map((o) => (o.status === "success" ? "ok" : o.code));
      },
      {
        limits: { maxInFlight: 5 },
        // The 20 requests arrive together; the handlers are held until the other 15 have been refused.
        onFrame: (direction, line) => {
          if (direction === "host" && line.includes("TooManyCalls") && ++refused === 15) release();
        },
        capabilities: {
          work: async () => {
            most = Math.max(most, ++running);
            await gate;
            running--;
          },
        },
      },
    );
    const codes = report.outcome?.structured as string[];
    expect(codes.filter((c) => c === "ok")).toHaveLength(5);
    expect(codes.filter((c) => c === "TooManyCalls")).toHaveLength(15);
    expect(report.calls.find((c) => c.outcome?.status === "failure")?.outcome?.content).toContain(
      "already running 5 calls (limits.maxInFlight)",
    );
    expect(most).toBe(5);
  });

  it("streams logs to onLog live and in order, bounding what the report keeps", async () => {
    const live: string[] = [];
    const { report } = await session(
      async (ears) => {
        for (let i = 0; i < 50; i++) await ears.log(`line ${i}`, "debug");
        await ears.log("x".repeat(300), "warn");
        return live.length; // the host has seen every log frame before the result
      },
      { limits: { maxLogs: 10, maxLogBytes: 330 }, onLog: (entry) => live.push(entry.content) },
    );
    expect(report.outcome?.structured).toBe(51);
    expect(live).toHaveLength(51);
    // At most 330 bytes of level and content: the 304-byte warn entry plus the two newest 12-byte ones.
    expect(report.logs.at(-1)).toMatchObject({ level: "warn", content: "x".repeat(300) });
    expect(report.logs.map((l) => l.content).slice(0, -1)).toEqual(["line 48", "line 49"]);
    expect(report.droppedLogs).toBe(48);
    expect(report.droppedLogBytes).toBe(10 * 11 + 38 * 12); // "debug" + "line 0".."line 47"
    expect(report.logs.every((entry, i) => i === 0 || entry.atMs >= report.logs[i - 1]!.atMs)).toBe(true);
  });

  it("replaces an answer over maxReplyBytes with a failure that says so", async () => {
    const { report } = await session((ears) => ears.call("huge"), {
      limits: { maxReplyBytes: 1000 },
      capabilities: { huge: () => "é".repeat(600) },
    });
    expect(report.outcome).toMatchObject({ status: "failure", code: "CapabilityFailed" });
    expect(report.outcome?.content).toContain("over the 1000-byte limit (limits.maxReplyBytes)");
  });

  it("keeps at most maxCallRecords call records and counts the rest", async () => {
    const { report } = await session(
      async (ears) => {
        for (let i = 0; i < 8; i++) await ears.call("ping", i);
      },
      { limits: { maxCallRecords: 3 }, capabilities: { ping: (n) => n } },
    );
    expect(report.calls.map((c) => c.arguments)).toEqual([0, 1, 2]);
    expect(report.droppedCalls).toBe(5);
    expect(report.ok).toBe(true);
  });

  it("passes every frame both ways to onFrame, in order", async () => {
    const frames: string[] = [];
    await session(
      async (ears) => {
        await ears.log("hi");
        await ears.call("echo", 1);
      },
      { capabilities: { echo: (n) => n }, onFrame: (direction, line) => frames.push(`${direction} ${JSON.parse(line).type}`) },
    );
    expect(frames).toEqual(["guest hello", "host invoke", "guest log", "guest request", "host reply", "guest result"]);
  });

  it("keeps going when onLog or onFrame throws, warning once per callback", async () => {
    const { messages: warnings, restore } = captureWarnings();
    try {
      const { report } = await session(
        async (ears) => {
          await ears.log("one");
          await ears.log("two");
          return "done";
        },
        {
          onLog: () => {
            throw new Error("log sink broke");
          },
          onFrame: () => {
            throw new Error("recorder broke");
          },
        },
      );
      expect(report.ok).toBe(true);
      expect(report.logs).toHaveLength(2);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes("log sink broke"))).toHaveLength(1);
      expect(warnings.filter((w) => w.includes("recorder broke"))).toHaveLength(1);
    } finally {
      restore();
    }
  });
});

describe("runHost enforcing the protocol against a raw guest", () => {
  it("answers CapabilityDenied to a name outside allowed; the handler never runs", async () => {
    const guest = rawGuest();
    const handler = vi.fn(() => "ran");
    guest.send(hello, { type: "request", id: 1, name: "secret", arguments: null }, { type: "result", outcome: { status: "success" } });
    guest.end();
    const [report, frames] = await Promise.all([
      runHost(guest.hostEnd, { allowed: ["read"], capabilities: { read: () => "", secret: handler } }),
      guest.received(),
    ]);
    expect(handler).not.toHaveBeenCalled();
    expect(frames[1]).toEqual({
      type: "reply",
      id: 1,
      outcome: {
        status: "failure",
        code: "CapabilityDenied",
        content: 'capability "secret" is not allowed by the host (allowed: "read"); it did not run',
      },
    });
    expect(report.calls).toMatchObject([{ id: 1, name: "secret", denied: true }]);
    expect(report.ok).toBe(true);
  });

  it("refuses protocol 2 without sending invoke, and closes the wire", async () => {
    const guest = rawGuest();
    guest.send({ type: "hello", protocol: 2 });
    const [report, frames] = await Promise.all([runHost(guest.hostEnd), guest.received()]);
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolMismatch);
    expect(report.failure?.message).toMatch(/^the guest speaks protocol 2, but this host speaks protocol 1; the guest was not invoked/);
    expect(frames).toEqual([]);
  });

  const violations: [what: string, frames: (object | string)[], fragment: string][] = [
    ["a non-frame line", [hello, "Debugger attached."], "not a protocol 1 frame (not JSON"],
    ["a frame that is not hello first", [{ type: "log", content: "early" }], 'first frame must be hello, but it sent a "log" frame'],
    ["a second hello", [hello, hello], "said hello a second time"],
    ["a host frame", [hello, { type: "reply", id: 1, outcome: { status: "success" } }], 'sent a "reply" frame, which only a host sends'],
    ["an invalid request", [hello, { type: "request", id: 0, name: "x" }], "request.id must be a positive integer"],
    [
      "an id reused after its reply",
      [hello, { type: "request", id: 1, name: "denied" }, { type: "request", id: 1, name: "echo" }],
      "reused request id 1 after that call was answered",
    ],
    [
      "an id reused while in flight",
      [hello, { type: "request", id: 1, name: "slow" }, { type: "request", id: 1, name: "echo" }],
      "reused request id 1 while that call was still in flight",
    ],
    [
      "a frame after the result",
      [hello, { type: "result", outcome: { status: "success" } }, { type: "log", content: "late" }],
      "wrote after its result",
    ],
  ];
  it.each(violations)("reports ProtocolViolation for %s", async (_what, frames, fragment) => {
    const guest = rawGuest();
    guest.send(...frames);
    guest.end();
    // `slow` never answers: its call is in flight whenever the next frame comes.
    const report = await runHost(guest.hostEnd, { capabilities: { echo: (n) => n, slow: () => new Promise<never>(() => {}) } });
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    expect(report.failure?.message).toContain(fragment);
    expect(report.ok).toBe(false);
  });

  it("cuts the excerpt of a long offending line", async () => {
    const guest = rawGuest();
    guest.send(hello, "z".repeat(5000));
    const report = await runHost(guest.hostEnd);
    expect(report.failure?.message).toContain(`"${"z".repeat(200)}"… (5000 characters)`);
    expect(report.failure!.message.length).toBeLessThan(400);
  });

  it("reports NoHello when the output ends before hello, NoResult when it ends before the result", async () => {
    const silent = rawGuest();
    silent.end();
    expect((await runHost(silent.hostEnd)).failure?.code).toBe(HostFailureCode.NoHello);
    const quitter = rawGuest();
    quitter.send(hello, { type: "log", content: "bye" });
    quitter.end();
    const report = await runHost(quitter.hostEnd);
    expect(report.failure?.code).toBe(HostFailureCode.NoResult);
    expect(report.logs).toMatchObject([{ content: "bye" }]);
  });

  it("reports HelloTimeout when nothing arrives in time", async () => {
    const guest = rawGuest();
    const report = await runHost(guest.hostEnd, { limits: { helloTimeoutMs: 30 } });
    expect(report.failure?.code).toBe(HostFailureCode.HelloTimeout);
    expect(await guest.received()).toEqual([]); // the host closed its end
  });

  it("ends the run at runTimeoutMs; the guest's pending call then fails as a broken connection", async () => {
    let callError: unknown;
    const { report } = await session(
      async (ears) => {
        await ears.call("stuck").catch((error: unknown) => (callError = error));
      },
      { limits: { runTimeoutMs: 50 }, capabilities: { stuck: () => new Promise(() => {}) } },
    );
    expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
    expect(report.failure?.message).toBe("the guest did not finish within 50 ms (limits.runTimeoutMs); the run was stopped");
    await vi.waitFor(() => expect(callError).toMatchObject({ name: "TransportError", kind: "closed" }));
  });

  it("ends the run when the host aborts, aborting running handlers", async () => {
    const controller = new AbortController();
    let handlerSignal: AbortSignal | undefined;
    const guest = rawGuest();
    guest.send(hello, { type: "request", id: 1, name: "wait" });
    const report = await runHost(guest.hostEnd, {
      signal: controller.signal,
      capabilities: {
        wait: (_args, { signal }) => {
          handlerSignal = signal;
          controller.abort();
          return new Promise(() => {});
        },
      },
    });
    expect(report.failure?.code).toBe(HostFailureCode.Aborted);
    expect(report.failure?.message).toContain("the host aborted the run (This operation was aborted)");
    expect(handlerSignal?.aborted).toBe(true);
    expect((handlerSignal?.reason as DOMException).name).toBe("AbortError");
    expect(report.calls[0]!.outcome).toBeUndefined();
  });

  it("aborts handlers still running when the result arrives, and sends them no reply", async () => {
    const guest = rawGuest();
    let handlerSignal: AbortSignal | undefined;
    guest.send(hello, { type: "request", id: 1, name: "wait" }, { type: "result", outcome: { status: "success", content: "done" } });
    guest.end();
    const [report, frames] = await Promise.all([
      runHost(guest.hostEnd, { capabilities: { wait: (_args, { signal }) => ((handlerSignal = signal), new Promise(() => {})) } }),
      guest.received(),
    ]);
    expect(report.ok).toBe(true);
    expect(handlerSignal?.aborted).toBe(true);
    expect(frames.map((f) => f.type)).toEqual(["invoke"]);
  });

  it("leaves no timer behind, whatever the handlers do", async () => {
    const before = activeTimers();
    const guest = rawGuest();
    guest.send(hello, { type: "request", id: 1, name: "stuck" }, { type: "request", id: 2, name: "stuck" }, "not a frame");
    const report = await runHost(guest.hostEnd, {
      limits: { callTimeoutMs: 60_000, runTimeoutMs: 60_000, helloTimeoutMs: 60_000 },
      capabilities: { stuck: () => new Promise(() => {}) },
    });
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    expect(activeTimers()).toBe(before);
  });

  it("after the result, waits at most closeGraceMs for the guest's output to end", async () => {
    const guest = rawGuest();
    guest.send(hello, { type: "result", outcome: { status: "success" } }); // and never ends its output
    const report: RunReport = await runHost(guest.hostEnd, { limits: { closeGraceMs: 20 } });
    expect(report.ok).toBe(true);
  });

  it("throws synchronously on invalid options", () => {
    const [, hostEnd] = createLinkedPair();
    expect(() => runHost({} as never)).toThrow(/must be a Wire/);
    expect(() => runHost(hostEnd, { allowed: "read" as never })).toThrow(/allowed must be an array/);
    expect(() => runHost(hostEnd, { capabilities: { read: "yes" as never } })).toThrow(/capabilities\["read"\] must be a function/);
    expect(() => runHost(hostEnd, { limits: { maxLogs: 0 } })).toThrow(RangeError);
    expect(() => runHost(hostEnd, { limits: { typo: 1 } as never })).toThrow(/unknown limit "typo"/);
    expect(() => runHost(hostEnd, { input: [undefined] as never })).toThrow(/\$\[0\] is undefined/);
  });
});

describe("runHost over a StreamWire", () => {
  function streams() {
    const fromGuest = new PassThrough();
    const toGuest = new PassThrough();
    toGuest.resume();
    return { fromGuest, wire: streamWire({ input: fromGuest, output: toGuest, maxFrameBytes: 256 }) };
  }

  it("reports FrameTooLarge for a frame over maxFrameBytes", async () => {
    const { fromGuest, wire } = streams();
    fromGuest.write(`${JSON.stringify(hello)}\n${JSON.stringify({ type: "log", content: "y".repeat(1000) })}\n`);
    const report = await runHost(wire);
    expect(report.failure?.code).toBe(HostFailureCode.FrameTooLarge);
    expect(report.failure?.message).toContain("256-byte limit");
  });

  it("reports a stream cut in the middle of a frame as a ProtocolViolation", async () => {
    const { fromGuest, wire } = streams();
    fromGuest.end(`${JSON.stringify(hello)}\n{"type":"res`);
    const report = await runHost(wire);
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    expect(report.failure?.message).toContain("ended in the middle of a frame");
  });
});
