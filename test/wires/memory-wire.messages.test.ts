// Why the in-memory wire refuses a send, by wording: a frame that is not a string, and a send after
// this end was closed (the peer closing is tested in memory-wire.test.ts).
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { createLinkedPair } from "../../src/wires/memory.js";

describe("MemoryWire refusals", () => {
  it("a frame that is not a string is a TypeError that says so", async () => {
    const [a] = createLinkedPair();
    await expect(a.send(42 as never)).rejects.toThrow(new TypeError("a frame must be a string"));
  });

  it("a send after this end was ended is a write-failed TransportError naming this end", async () => {
    const [a, b] = createLinkedPair();
    a.end();
    const error = await a.send("{}").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "write-failed", message: "this end of the wire is closed; the frame was not sent" });
    expect(await b.receive()).toBeUndefined();
  });
});
