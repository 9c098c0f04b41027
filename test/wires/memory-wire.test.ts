// The in-memory linked pair: ordered delivery, half-close (EOF) and close (peer sends fail like EPIPE).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { createLinkedPair } from "../../src/wires/memory.js";

describe("createLinkedPair", () => {
  it("delivers every frame in order, whether the receiver waits or the sender runs ahead", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string(), { maxLength: 30 }), fc.array(fc.boolean(), { maxLength: 30 }), async (frames, waitFirst) => {
        const [guest, host] = createLinkedPair();
        const received: (string | undefined)[] = [];
        for (const [i, frame] of frames.entries()) {
          if (waitFirst[i]) {
            const waiting = host.receive();
            await guest.send(frame);
            received.push(await waiting);
          } else {
            await guest.send(frame);
            received.push(await host.receive());
          }
        }
        expect(received).toEqual(frames);
      }),
    );
  });

  it("end() is a half-close: the peer reads what was sent, then undefined, and can still send back", async () => {
    const [guest, host] = createLinkedPair();
    await host.send("a");
    await host.send("b");
    host.end();
    expect(await guest.receive()).toBe("a");
    expect(await guest.receive()).toBe("b");
    expect(await guest.receive()).toBeUndefined();
    expect(await guest.receive()).toBeUndefined();
    await guest.send("reply");
    expect(await host.receive()).toBe("reply");
    await expect(host.send("more")).rejects.toMatchObject({ kind: "write-failed" });
  });

  it("end() wakes a receiver that is already waiting", async () => {
    const [guest, host] = createLinkedPair();
    const waiting = guest.receive();
    host.end();
    expect(await waiting).toBeUndefined();
  });

  it("close() ends output and stops reading: the peer sees EOF and its later sends fail like EPIPE", async () => {
    const [guest, host] = createLinkedPair();
    const waiting = guest.receive();
    guest.close();
    expect(await waiting).toBeUndefined();
    expect(await host.receive()).toBeUndefined();
    const error = await host.send("x").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "write-failed", message: expect.stringMatching(/other end of the wire is closed \(EPIPE\)/) });
  });

  it("refuses a second receive while one is pending, and a frame that is not a string", async () => {
    const [guest, host] = createLinkedPair();
    void guest.receive();
    await expect(guest.receive()).rejects.toThrow(/called again before the previous call settled/);
    await expect(host.send(42 as never)).rejects.toThrow(TypeError);
  });
});
