/**
 * The host's outbox on its own: the unread-reply budget a frame counts against until its send settles,
 * the read loop's wake-up below half the budget, and the first send error kept for the run's failure.
 * (The session-level behaviour is in memory-bounds.test.ts and running-handlers.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { Outbox } from "../../src/host/engine/outbox.js";
import { sendFrame, type Wire } from "../../src/wires/wire.js";

/** A wire whose promise-free sends settle only when the test says so. */
function heldWire() {
  const sends: { frame: string; done: (error?: Error) => void }[] = [];
  const wire = {
    send: () => Promise.reject(new Error("not used")),
    receive: () => Promise.resolve(undefined),
    [sendFrame]: (frame: string, done: (error?: Error) => void) => sends.push({ frame, done }),
  } as Wire;
  return { wire, sends };
}

describe("Outbox", () => {
  it("counts a frame (its characters and 256 more) until its send settles; at half the budget it drains, then wakes", async () => {
    const { wire, sends } = heldWire();
    const seen: string[] = [];
    const outbox = new Outbox(wire, 1000, (line) => seen.push(line));
    const events: string[] = [];
    outbox.whenDrained(() => events.push("drained"));
    let woken = false;
    void outbox.readerWait().then(() => (woken = true));
    outbox.send("x".repeat(245)); // counts 501
    expect(outbox.full()).toBe(false);
    outbox.send("y".repeat(243)); // 499 more: 1000, not over
    expect(outbox.full()).toBe(false);
    outbox.send("z"); // 257 more: over
    expect(outbox.full()).toBe(true);
    expect(seen).toEqual(["x".repeat(245), "y".repeat(243), "z"]);
    sends[1]!.done();
    sends[2]!.done(); // 501 left: still above half
    await Promise.resolve();
    expect(events).toEqual([]);
    expect(woken).toBe(false);
    expect(outbox.full()).toBe(false);
    sends[0]!.done(); // 0 left: at or below half
    await Promise.resolve();
    expect(events).toEqual(["drained"]);
    expect(woken).toBe(true);
  });

  it("keeps the first send error: reported by the wire's own send, a rejected send, or a send that throws", async () => {
    const { wire, sends } = heldWire();
    const outbox = new Outbox(wire, 1000);
    outbox.send("a");
    outbox.send("b");
    const first = new Error("EPIPE");
    sends[0]!.done(first);
    sends[1]!.done(new Error("later"));
    expect(outbox.sendError).toBe(first);
    expect(outbox.full()).toBe(false);

    const rejecting = new Outbox({ send: () => Promise.reject(new Error("rejected")), receive: () => Promise.resolve(undefined) }, 1000);
    rejecting.send("a");
    await new Promise((resolve) => setImmediate(resolve));
    expect(rejecting.sendError).toMatchObject({ message: "rejected" });

    const throwing = new Outbox(
      {
        send: () => {
          throw new Error("thrown");
        },
        receive: () => Promise.resolve(undefined),
      },
      1000,
    );
    throwing.send("a");
    expect(throwing.sendError).toMatchObject({ message: "thrown" });
    expect(throwing.full()).toBe(false);
  });

  it("a wake-up with no reader waiting is lost by design: the read loop re-checks before it waits", async () => {
    const { wire } = heldWire();
    const outbox = new Outbox(wire, 1000);
    outbox.wakeReader();
    let woken = false;
    void outbox.readerWait().then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    outbox.wakeReader();
    await Promise.resolve();
    expect(woken).toBe(true);
  });
});
