// Back-pressure from onFrame: a promise returned for a guest line holds the host's read loop until it
// settles (what --record uses so a slow transcript sink slows the guest instead of growing memory).
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { recordToStream, testGuest } from "../../src/testing/index.js";

const flood = (count: number) => async (ears: { log(text: string): unknown }) => {
  for (let i = 0; i < count; i++) ears.log(`line ${i} ${"x".repeat(1000)}`);
  return "done";
};

describe("onFrame back-pressure", () => {
  it("the host reads no further guest frame while onFrame's promise is pending, then goes on", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let guestLines = 0;
    const run = testGuest(flood(100), {
      onFrame: (direction) => {
        if (direction !== "guest") return undefined;
        guestLines++;
        return guestLines === 2 ? gate : undefined; // hold after the first log
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(guestLines).toBe(2);
    release();
    const report = await run;
    expect(report.ok).toBe(true);
    expect(guestLines).toBe(1 + 100 + 1); // hello, the logs, the result
  });

  it("a gate that never opens cannot hang the run: the run deadline still ends it", async () => {
    const report = await testGuest(flood(10), {
      onFrame: (direction) => (direction === "guest" ? new Promise<void>(() => {}) : undefined),
      limits: { runTimeoutMs: 200 },
    });
    expect(report.failure?.code).toBe("RunTimeout");
  });

  it("a thenable whose then() throws holds nothing, and the run goes on", async () => {
    const broken = {
      then: () => {
        throw new Error("broken then");
      },
    };
    const report = await testGuest(flood(3), { onFrame: (direction) => (direction === "guest" ? broken : undefined) });
    expect(report.ok).toBe(true);
  });

  it("a rejected gate opens it like a settled one", async () => {
    const report = await testGuest(flood(3), {
      onFrame: (direction) => (direction === "guest" ? Promise.reject(new Error("sink failed")) : undefined),
    });
    expect(report.ok).toBe(true);
  });

  it("recordToStream over a slow sink keeps its queue near the high-water mark while a guest floods", async () => {
    let peakQueued = 0;
    let written = 0;
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _encoding, done) {
        written += chunk.length;
        setTimeout(done, 1); // a sink that takes a moment per chunk
      },
    });
    const recorder = recordToStream(slow, "slow sink");
    const report = await testGuest(flood(3000), {
      onFrame: (direction, line) => {
        const gate = recorder.onFrame(direction, line);
        peakQueued = Math.max(peakQueued, slow.writableLength);
        return gate;
      },
    });
    await recorder.close();
    expect(report.ok).toBe(true);
    expect(written).toBeGreaterThan(3000 * 1000);
    // Without back-pressure the whole flood (3 MB) would sit in the queue; with it, at most the
    // high-water mark plus the frames the host sent or took before it stopped reading.
    expect(peakQueued).toBeLessThan(64 * 1024 + 8 * 1024);
  });
});
