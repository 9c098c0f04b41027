/**
 * At most `maxRunningHandlers` handlers run at once (issue 23): each running handler may return a large
 * answer that exists before the host can count it, so the cap is what bounds those answers. Calls over
 * it wait in arrival order, their deadlines running, and the host reads nothing more until one starts.
 * The peak-RSS scenarios that this bound makes pass are in test/memory/.
 */
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLinkedPair, serve, streamWire, type MemoryWire } from "../../src/index.js";
import type { GuestProgram } from "../../src/guest/serve.js";
import { DEFAULT_HOST_LIMITS, HostFailureCode, HostReplyCode, runHost, type HostOptions } from "../../src/host/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

const hello = { type: "hello", protocol: 1 };

/** Runs `program` under `serve` against runHost. */
function session(program: GuestProgram, options: HostOptions) {
  const [guestEnd, hostEnd] = createLinkedPair();
  void serve({ wire: guestEnd, run: program });
  return runHost(hostEnd, options);
}

/** Turns of the event loop (setImmediate), so handlers settle in an order the test chooses. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Counts the handlers running now and the most that ever ran at once, and the order they started in. */
function runningCounter() {
  const counter = { now: 0, most: 0, started: [] as number[] };
  const enter = (id: number) => {
    counter.started.push(id);
    counter.most = Math.max(counter.most, ++counter.now);
  };
  const leave = () => counter.now--;
  return { counter, enter, leave };
}

async function drain(wire: MemoryWire): Promise<Record<string, unknown>[]> {
  const frames: Record<string, unknown>[] = [];
  for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) frames.push(JSON.parse(line));
  return frames;
}

describe("at most maxRunningHandlers handlers run at once", () => {
  it("defaults to 8", () => {
    expect(DEFAULT_HOST_LIMITS.maxRunningHandlers).toBe(8);
  });

  it("runs at most the cap, starts the others in arrival order as handlers settle, and answers every call (property, seeded)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 30 }),
        async (cap, delays) => {
          const { counter, enter, leave } = runningCounter();
          const report = await session(
            async (ears) => {
              const outcomes = await Promise.all(delays.map((delay, i) => ears.call("work", { i, delay })));
              return outcomes.map((o) => o.content);
            },
            {
              limits: { maxRunningHandlers: cap },
              capabilities: {
                work: async (args, ctx) => {
                  enter(ctx.id);
                  await turns((args as { delay: number }).delay);
                  leave();
                  return `done ${(args as { i: number }).i}`;
                },
              },
            },
          );
          expect(report.ok).toBe(true);
          expect(report.outcome?.structured).toEqual(delays.map((_, i) => `done ${i}`));
          expect(counter.most).toBeLessThanOrEqual(cap);
          expect(counter.started).toEqual(delays.map((_, i) => i + 1)); // ids count up from 1 in call order
        },
      ),
      { seed: 0x23a, numRuns: 60 },
    );
  });

  it("with default limits, 40 calls at once run 8 handlers, then the rest as those settle", async () => {
    const { counter, enter, leave } = runningCounter();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let startedBeforeRelease = 0;
    const report = await session(
      async (ears) => {
        const calls = Array.from({ length: 40 }, () => ears.call("work"));
        await turns(20); // every request has reached the host by now
        startedBeforeRelease = counter.started.length;
        release();
        return (await Promise.all(calls)).filter((o) => o.status === "success").length;
      },
      {
        capabilities: {
          work: async (_args, ctx) => {
            enter(ctx.id);
            await gate;
            leave();
          },
        },
      },
    );
    expect(startedBeforeRelease).toBe(8);
    expect(counter.most).toBe(8);
    expect(report.outcome?.structured).toBe(40);
  });

  it("a call waiting for a slot past its deadline is answered CallTimedOut and its handler never starts", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    const started: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const running = runHost(hostEnd, {
      limits: { maxRunningHandlers: 1, callTimeoutMs: 100 },
      capabilities: {
        slow: async (_args, ctx) => {
          started.push(ctx.id);
          await gate;
          return "slow done";
        },
        quick: (_args, ctx) => (started.push(ctx.id), "quick done"),
      },
    });
    const send = (frame: object) => void guestEnd.send(JSON.stringify(frame)).catch(() => {});
    const frames = drain(guestEnd);
    send(hello);
    send({ type: "request", id: 1, name: "slow", arguments: null });
    send({ type: "request", id: 2, name: "quick", arguments: null });
    await new Promise((resolve) => setTimeout(resolve, 300)); // both deadlines pass while 1 holds the only slot
    release();
    await turns(5);
    // The slot is free again: a later call runs.
    send({ type: "request", id: 3, name: "quick", arguments: null });
    await turns(5);
    send({ type: "result", outcome: { status: "success", content: "done" } });
    guestEnd.end();
    const report = await running;
    expect(report.ok).toBe(true);
    expect(started).toEqual([1, 3]);
    const replies = (await frames).filter((frame) => frame.type === "reply");
    expect(replies.map((frame) => [frame.id, (frame.outcome as { code?: string }).code ?? "ok"])).toEqual([
      [1, HostReplyCode.CallTimedOut],
      [2, HostReplyCode.CallTimedOut],
      [3, "ok"],
    ]);
  });

  it("reads no further frame while a call waits for a slot: a log sent after it arrives once a handler settles", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const running = runHost(hostEnd, {
      limits: { maxRunningHandlers: 1 },
      onLog: (entry) => seen.push(entry.content),
      capabilities: {
        slow: async (_args, ctx) => {
          seen.push(`start ${ctx.id}`);
          await gate;
          return "ok";
        },
      },
    });
    const send = (frame: object) => void guestEnd.send(JSON.stringify(frame)).catch(() => {});
    const frames = drain(guestEnd);
    send(hello);
    send({ type: "request", id: 1, name: "slow", arguments: null });
    send({ type: "request", id: 2, name: "slow", arguments: null });
    send({ type: "log", level: "info", content: "after 2" });
    await turns(10);
    expect(seen).toEqual(["start 1"]);
    release();
    await turns(10);
    expect(seen).toEqual(["start 1", "start 2", "after 2"]);
    send({ type: "result", outcome: { status: "success", content: "done" } });
    guestEnd.end();
    const report = await running;
    expect(report.ok).toBe(true);
    expect((await frames).filter((frame) => frame.type === "reply").map((frame) => frame.id)).toEqual([1, 2]);
  });

  it("is checked like the other limits", () => {
    const [, hostEnd] = createLinkedPair();
    for (const value of [0, -1, 1.5, Infinity, Number.NaN]) {
      expect(() => runHost(hostEnd, { limits: { maxRunningHandlers: value } })).toThrow(
        new RangeError(`runHost: limits.maxRunningHandlers must be a positive integer, got ${String(value)}`),
      );
    }
  });
});

describe("an answer counts against the unread budget as soon as it exists", () => {
  /** A host over streams whose output the test reads only when it chooses to. */
  function unreadHost(options: HostOptions) {
    const fromGuest = new PassThrough();
    const toGuest = new PassThrough();
    const hostLines: string[] = [];
    const running = runHost(streamWire({ input: fromGuest, output: toGuest }), {
      ...options,
      onFrame: (direction, line) => void (direction === "host" && hostLines.push(line)),
    });
    const send = (frame: object) => void fromGuest.write(`${JSON.stringify(frame)}\n`);
    /** Reads the host's output to its end; resolves with the frames. */
    const readAll = async () => {
      let text = "";
      toGuest.setEncoding("utf8");
      for await (const chunk of toGuest) text += chunk;
      return text
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    };
    return { running, send, readAll, fromGuest, hostLines };
  }

  it("answers that come while the guest leaves too much unread wait unencoded, then all go out in order once it reads", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const host = unreadHost({
      // Larger than what the PassThrough pair itself buffers (16 KiB each side).
      limits: { maxUnreadChars: 1000 },
      capabilities: {
        big: async (_args, ctx) => {
          await gate;
          return String(ctx.id).repeat(100_000);
        },
      },
    });
    host.send(hello);
    for (let id = 1; id <= 5; id++) host.send({ type: "request", id, name: "big", arguments: null });
    await turns(10); // all five handlers run (nothing is unread yet)
    release();
    await turns(10);
    // The first answer went over the budget: the other four exist but were not made into frames.
    expect(host.hostLines.filter((line) => line.startsWith('{"type":"reply"'))).toHaveLength(1);
    const frames = host.readAll();
    await new Promise((resolve) => setTimeout(resolve, 50));
    host.fromGuest.end(`${JSON.stringify({ type: "result", outcome: { status: "success", content: "done" } })}\n`);
    const report = await host.running;
    expect(report.ok).toBe(true);
    const replies = (await frames).filter((frame) => frame.type === "reply");
    expect(replies.map((frame) => frame.id)).toEqual([1, 2, 3, 4, 5]);
    expect(replies.every((frame) => (frame.outcome as { content: string }).content === String(frame.id).repeat(100_000))).toBe(true);
    expect(report.calls.map((call) => call.status)).toEqual(["success", "success", "success", "success", "success"]);
  });

  it("held answers are dropped, never sent, when the run ends before the guest reads them; their records have no status", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const host = unreadHost({
      limits: { maxUnreadChars: 1000, runTimeoutMs: 300 },
      capabilities: {
        big: async () => {
          await gate;
          return "b".repeat(100_000);
        },
      },
    });
    host.send(hello);
    for (let id = 1; id <= 3; id++) host.send({ type: "request", id, name: "big", arguments: null });
    await turns(10);
    release();
    const report = await host.running; // the guest never reads
    expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
    expect(report.calls.map((call) => call.status)).toEqual(["success", undefined, undefined]);
    const frames = await host.readAll();
    expect(frames.filter((frame) => frame.type === "reply").map((frame) => frame.id)).toEqual([1]);
  });
});
