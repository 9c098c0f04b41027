/**
 * What the host keeps of a guest's traffic is bounded by its limits, never by the guest (issue 8): call
 * payloads up to `maxCallPayloadChars`, logs (level and content) up to `maxLogBytes`, request ids with a
 * low-water mark plus at most `maxScatteredIds` ids above it, and no handler starts while the guest
 * leaves more than `maxUnreadChars` of replies unread. The peak-RSS scenarios are in test/memory/.
 */
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLinkedPair, Outcome, serve, streamWire, type MemoryWire } from "../../src/index.js";
import { HostFailureCode, HostReplyCode, runHost, type HostOptions } from "../../src/host/index.js";
import { cutText, LogBook } from "../../src/host/report/log-book.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

const hello = { type: "hello", protocol: 1 };
const result = { type: "result", outcome: { status: "success", content: "done" } };

/** Runs runHost against frames a raw guest sends all at once, then ends its output. */
async function hostRaw(frames: object[], options: HostOptions) {
  const [guestEnd, hostEnd] = createLinkedPair();
  for (const frame of frames) void guestEnd.send(JSON.stringify(frame)).catch(() => {});
  guestEnd.end();
  const [report, received] = await Promise.all([runHost(hostEnd, options), drain(guestEnd)]);
  return { report, received };
}

async function drain(wire: MemoryWire): Promise<Record<string, unknown>[]> {
  const frames: Record<string, unknown>[] = [];
  for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) frames.push(JSON.parse(line));
  return frames;
}

describe("call records keep payloads up to maxCallPayloadChars", () => {
  it("keeps name, id, status and duration of a call whose payload is over the budget, and counts it", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    const seen: unknown[] = [];
    void serve({
      wire: guestEnd,
      run: async (ears) => {
        for (const args of ["small", "a".repeat(500), "tiny"]) seen.push((await ears.call("echo", args)).content);
        seen.push((await ears.call("fail", null)).status);
      },
    });
    const report = await runHost(hostEnd, {
      limits: { maxCallPayloadChars: 400 },
      capabilities: { echo: (args) => String(args), fail: () => Outcome.failure("Nope", "x".repeat(500)) },
    });
    expect(report.ok).toBe(true);
    // The guest got every answer whole: the budget is about the report only.
    expect(seen).toEqual(["small", "a".repeat(500), "tiny", "failure"]);
    expect(report.calls.map(({ durationMs, ...call }) => (expect(durationMs).toBeGreaterThanOrEqual(0), call))).toEqual([
      { id: 1, name: "echo", arguments: "small", outcome: Outcome.success("small"), status: "success" },
      { id: 2, name: "echo", arguments: null, argumentsDropped: true, outcomeDropped: true, status: "success" },
      { id: 3, name: "echo", arguments: "tiny", outcome: Outcome.success("tiny"), status: "success" },
      { id: 4, name: "fail", arguments: null, outcomeDropped: true, status: "failure" },
    ]);
    expect(report.droppedCallPayloads).toBe(2);
  });

  it("counts the arguments of a denied call against the same budget, so 60 MiB of arguments is not kept", async () => {
    const { report, received } = await hostRaw(
      [
        hello,
        { type: "request", id: 1, name: "secret", arguments: "s".repeat(5000) },
        { type: "request", id: 2, name: "secret", arguments: 1 },
        result,
      ],
      { allowed: [], limits: { maxCallPayloadChars: 1000 } },
    );
    expect(received.slice(1).map((frame) => (frame.outcome as { code?: string }).code)).toEqual(["CapabilityDenied", "CapabilityDenied"]);
    expect(report.calls).toMatchObject([
      {
        id: 1,
        name: "secret",
        arguments: null,
        argumentsDropped: true,
        denied: true,
        status: "failure",
        outcome: { code: "CapabilityDenied" },
      },
      { id: 2, name: "secret", arguments: 1, denied: true, status: "failure", outcome: { code: "CapabilityDenied" } },
    ]);
    expect(report.droppedCallPayloads).toBe(1);
  });
});

describe("logs are bounded by maxLogBytes, level included", () => {
  it("cuts an entry alone over the budget, with a marker, and counts what it dropped; onLog sees it whole", async () => {
    const live: number[] = [];
    const { report } = await hostRaw([hello, { type: "log", level: "L".repeat(5000), content: "c".repeat(50_000) }, result], {
      limits: { maxLogBytes: 2000 },
      onLog: (entry) => live.push(entry.level.length + entry.content.length),
    });
    expect(live).toEqual([55_000]);
    const [cut] = report.logs;
    expect(cut!.level).toMatch(/^L{900,1024}/);
    expect(Buffer.byteLength(cut!.level)).toBeLessThanOrEqual(1024);
    expect(cut!.level).toMatch(/…\[cut 5000 bytes to 1024\]$/);
    expect(cut!.content).toMatch(/^c+ …\[cut 50000 bytes to \d+\]$/);
    expect(Buffer.byteLength(cut!.level) + Buffer.byteLength(cut!.content)).toBeLessThanOrEqual(2000);
    expect(cut!.cutBytes).toBe(55_000 - Buffer.byteLength(cut!.level) - Buffer.byteLength(cut!.content));
    expect(report.droppedLogs).toBe(0);
    expect(report.droppedLogBytes).toBe(cut!.cutBytes);
  });

  it("cuts an entry over maxLogEntryBytes though the total budget has room, and keeps the others whole", async () => {
    const { report } = await hostRaw(
      [hello, { type: "log", level: "info", content: "before" }, { type: "log", level: "warn", content: "w".repeat(3000) }, result],
      { limits: { maxLogBytes: 100_000, maxLogEntryBytes: 1000 } },
    );
    expect(report.logs).toMatchObject([
      { level: "info", content: "before" },
      { level: "warn", content: expect.stringMatching(/^w+ …\[cut 3000 bytes to 996\]$/) },
    ]);
    expect(Buffer.byteLength(report.logs[1]!.content)).toBeLessThanOrEqual(996);
    expect(report.logs[1]!.cutBytes).toBe(3004 - 4 - Buffer.byteLength(report.logs[1]!.content));
    expect(report.droppedLogBytes).toBe(report.logs[1]!.cutBytes);
  });

  it("counts a long level against the budget: older entries are dropped for it", async () => {
    const { report } = await hostRaw(
      [hello, { type: "log", level: "info", content: "first" }, { type: "log", level: "v".repeat(995), content: "x" }, result],
      { limits: { maxLogBytes: 1000 } },
    );
    expect(report.logs).toMatchObject([{ level: "v".repeat(995), content: "x" }]);
    expect(report.droppedLogs).toBe(1);
    expect(report.droppedLogBytes).toBe(9);
  });

  it("never holds more than maxLogBytes or maxLogs, and keeps each entry whole or a marked cut of it", () => {
    const text = fc.string({ unit: "binary", maxLength: 300 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.record({ level: text, content: text }), { maxLength: 30 }),
        (maxEntries, maxBytes, maxEntryBytes, entries) => {
          const book = new LogBook(maxEntries, maxBytes, maxEntryBytes);
          entries.forEach((entry, atMs) => book.add({ ...entry, atMs }));
          const kept = book.list();
          const bytes = (s: string) => Buffer.byteLength(s);
          expect(kept.length).toBeLessThanOrEqual(maxEntries);
          expect(kept.reduce((sum, e) => sum + bytes(e.level) + bytes(e.content), 0)).toBeLessThanOrEqual(maxBytes);
          // The newest entries, in order, the newest always among them.
          if (entries.length > 0) expect(kept.at(-1)!.atMs).toBe(entries.length - 1);
          expect(kept.map((e) => e.atMs)).toEqual(kept.map((_, i) => entries.length - kept.length + i));
          for (const entry of kept) {
            const original = entries[entry.atMs]!;
            expect(bytes(entry.level) + bytes(entry.content)).toBeLessThanOrEqual(Math.min(maxBytes, maxEntryBytes));
            if (entry.cutBytes === undefined) {
              expect(entry).toEqual({ ...original, atMs: entry.atMs });
            } else {
              expect(entry.cutBytes).toBe(bytes(original.level) + bytes(original.content) - bytes(entry.level) - bytes(entry.content));
              expect(isCutOf(entry.level, original.level) && isCutOf(entry.content, original.content)).toBe(true);
            }
          }
          expect(book.dropped).toBe(entries.length - kept.length);
          // Nothing is lost from the count: every byte is either kept or counted as dropped.
          const total = entries.reduce((sum, e) => sum + bytes(e.level) + bytes(e.content), 0);
          const keptBytes = kept.reduce((sum, e) => sum + bytes(e.level) + bytes(e.content), 0);
          expect(keptBytes + book.droppedBytes).toBe(total);
        },
      ),
      { seed: 0x8e4, numRuns: 300 },
    );
  });

  it("cutText cuts at a character boundary and never splits a surrogate pair", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 100 }), fc.integer({ min: 0, max: 400 }), (text, maxBytes) => {
        const cut = cutText(text, maxBytes);
        expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(Math.max(maxBytes, 0));
        expect(isCutOf(cut, text)).toBe(true);
        expect(cut.includes("\uFFFD") && !text.includes("\uFFFD")).toBe(false);
      }),
      { seed: 0x8e5, numRuns: 500 },
    );
  });
});

/** `cut` is `original` itself, or a prefix of it followed by the cut marker when there was room. */
function isCutOf(cut: string, original: string): boolean {
  if (cut === original) return true;
  const marker = / …\[cut \d+ bytes to \d+\]$/.exec(cut);
  const kept = marker === null ? cut : cut.slice(0, marker.index);
  return original.startsWith(kept);
}

describe("request ids: unique in the run, checked without keeping every id", () => {
  const request = (id: number) => ({ type: "request", id, name: "denied", arguments: null });

  it("flags exactly the first reused id, in any order of ids", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 60 }), async (ids) => {
        const { report } = await hostRaw([hello, ...ids.map(request), result], { allowed: [] });
        const firstReuse = ids.findIndex((id, i) => ids.indexOf(id) < i);
        if (firstReuse === -1) {
          expect(report.failure).toBeUndefined();
          expect(report.calls.map((call) => call.id)).toEqual(ids);
        } else {
          expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
          expect(report.failure?.message).toContain(`reused request id ${ids[firstReuse]} after that call was answered`);
          expect(report.calls.map((call) => call.id)).toEqual(ids.slice(0, firstReuse));
        }
      }),
      { seed: 0x8e6, numRuns: 200 },
    );
  });

  it("accepts ids counting up from 1 with any number of calls, and ids out of order up to maxScatteredIds", async () => {
    const ids = [3, 2, 5, 1, 4, 6, 9, 8, 7, 10];
    const { report } = await hostRaw([hello, ...ids.map(request), result], { allowed: [], limits: { maxScatteredIds: 3 } });
    expect(report.failure).toBeUndefined();
    expect(report.calls).toHaveLength(10);
  });

  it("ends the run when more ids than maxScatteredIds sit above the lowest unused id", async () => {
    const { report, received } = await hostRaw([hello, request(2), request(4), request(6), request(8), result], {
      allowed: [],
      limits: { maxScatteredIds: 3 },
    });
    expect(report.failure).toEqual({
      code: HostFailureCode.ProtocolViolation,
      message:
        "the guest's request ids are too scattered to check that they are unique: " +
        "3 ids above 1, the lowest id not yet used (limits.maxScatteredIds); count ids up from 1",
    });
    expect(received.slice(1).map((frame) => frame.id)).toEqual([2, 4, 6]);
  });
});

describe("no handler starts while the guest leaves too much unread", () => {
  const MiB = 1024 * 1024;

  /** A host over streams whose output the test reads only when it chooses to. */
  function unreadHost(options: HostOptions) {
    const fromGuest = new PassThrough();
    const toGuest = new PassThrough();
    const running = runHost(streamWire({ input: fromGuest, output: toGuest }), options);
    const send = async (frame: object) => {
      fromGuest.write(`${JSON.stringify(frame)}\n`);
      // A turn of the event loop: the host takes the frame and anything it sets off settles.
      await new Promise((resolve) => setImmediate(resolve));
    };
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
    return { running, send, readAll, fromGuest };
  }

  it("with default limits: a 16 MiB answer left unread holds back the next handler until the guest reads", async () => {
    const started: number[] = [];
    const host = unreadHost({ capabilities: { big: (_args, ctx) => (started.push(ctx.id), "b".repeat(16 * MiB + 1)) } });
    await host.send(hello);
    for (let id = 1; id <= 4; id++) await host.send({ type: "request", id, name: "big", arguments: null });
    // Over 16 MiB of the first answer is unread: requests 2.. wait (the host stops reading after one of them).
    expect(started).toEqual([1]);
    const frames = host.readAll();
    await new Promise((resolve) => setTimeout(resolve, 50));
    host.fromGuest.end(`${JSON.stringify(result)}\n`);
    const report = await host.running;
    expect(report.failure).toBeUndefined();
    expect(started).toEqual([1, 2, 3, 4]);
    const replies = (await frames).filter((frame) => frame.type === "reply");
    expect(replies.map((frame) => frame.id)).toEqual([1, 2, 3, 4]);
    expect(replies.every((frame) => (frame.outcome as Outcome).content.length === 16 * MiB + 1)).toBe(true);
  });

  it("a call that waits past its deadline is answered CallTimedOut and its handler never starts", async () => {
    const started: number[] = [];
    const host = unreadHost({
      limits: { maxUnreadChars: 1000, callTimeoutMs: 100 },
      // Larger than what the PassThrough pair itself buffers (16 KiB each side). Asynchronous: the host is
      // reading again, for request 2, when answer 1 comes (a synchronous answer is written while request 1 is
      // taken, and the host then reads nothing more until the guest reads: request 2 would wait unread).
      capabilities: { big: async (_args, ctx) => (started.push(ctx.id), "b".repeat(100_000)) },
    });
    await host.send(hello);
    await host.send({ type: "request", id: 1, name: "big", arguments: null });
    await host.send({ type: "request", id: 2, name: "big", arguments: null });
    await new Promise((resolve) => setTimeout(resolve, 300)); // past call 2's deadline, nothing read
    const frames = host.readAll();
    await new Promise((resolve) => setTimeout(resolve, 50));
    host.fromGuest.end(`${JSON.stringify(result)}\n`);
    const report = await host.running;
    expect(started).toEqual([1]);
    const replies = (await frames).filter((frame) => frame.type === "reply");
    expect(replies.map((frame) => [frame.id, (frame.outcome as { code?: string }).code ?? "ok"])).toEqual([
      [1, "ok"],
      [2, HostReplyCode.CallTimedOut],
    ]);
    expect(report.calls.map((call) => call.status)).toEqual(["success", "failure"]);
  });
});

describe("the stream wire stops reading when its unread frames reach 16 Mi characters", () => {
  it("pauses its input with 1 MiB frames waiting, long before 1024 of them are queued", async () => {
    const input = new PassThrough({ highWaterMark: 1024 * 1024 });
    const output = new PassThrough();
    const wire = streamWire({ input, output });
    const frame = `{"type":"log","level":"info","content":"${"z".repeat(1024 * 1024)}"}\n`;
    let written = 0;
    // Write 100 frames as the stream takes them; a reader that never calls receive again must not get them all.
    const writing = (async () => {
      for (; written < 100; written++) {
        if (!input.write(frame))
          await Promise.race([new Promise((resolve) => input.once("drain", resolve)), new Promise((resolve) => setTimeout(resolve, 200))]);
      }
    })();
    await wire.receive(); // starts reading; the first frame is taken
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(input.isPaused()).toBe(true);
    // About 16 frames are queued in the wire; the rest wait in the stream (or are not written yet).
    expect(written).toBeLessThan(40);
    for (let taken = 1; taken < 100; taken++) await wire.receive(); // a reader that catches up gets every frame
    await writing;
    expect(written).toBe(100);
    await wire.close();
  });
});

describe("the new limits and report fields", () => {
  it("are checked like the others, and a report says it dropped nothing when it dropped nothing", async () => {
    const [, hostEnd] = createLinkedPair();
    for (const key of ["maxCallPayloadChars", "maxUnreadChars", "maxScatteredIds", "maxLogEntryBytes"]) {
      expect(() => runHost(hostEnd, { limits: { [key]: 0 } })).toThrow(
        new RangeError(`runHost: limits.${key} must be a positive integer, got 0`),
      );
      expect(() => runHost(hostEnd, { limits: { [key]: 1.5 } })).toThrow(RangeError);
    }
    const { report } = await hostRaw(
      [hello, { type: "log", level: "info", content: "hi" }, { type: "request", id: 1, name: "echo", arguments: 1 }, result],
      {
        capabilities: { echo: (n) => n },
      },
    );
    expect(report).toMatchObject({ ok: true, droppedLogs: 0, droppedLogBytes: 0, droppedCalls: 0, droppedCallPayloads: 0 });
  });
});
