// Ears' messages and its less travelled paths, in process: each test here was prompted by a mutant Stryker
// found surviving in src/guest/ears.ts (CONTRIBUTING.md, "Mutation testing") and was seen to fail on that mutant.
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { defineCapabilities, type StandardSchemaV1 } from "../../src/contract/contract.js";
import { Ears } from "../../src/guest/ears.js";
import { TransportError } from "../../src/protocol/errors.js";
import { decodeFrame, encodeFrame } from "../../src/protocol/frames.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { streamWire } from "../../src/wires/stdio.js";
import type { Wire } from "../../src/wires/wire.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

/** A Standard Schema with the given validate, as any library's would be. */
function schema(validate: StandardSchemaV1["~standard"]["validate"]): StandardSchemaV1 {
  return { "~standard": { version: 1, vendor: "test", validate } } as StandardSchemaV1;
}
const anything = schema((value) => ({ value }));

/** A wire whose receive waits until `feed` delivers a line (or undefined for the end); sends are recorded. */
function manualWire(send: (line: string) => Promise<void> = async () => {}) {
  const sent: string[] = [];
  const queue: (string | undefined | Error)[] = [];
  let wake: (() => void) | undefined;
  const wire: Wire = {
    async send(line) {
      sent.push(line);
      await send(line);
    },
    async receive() {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const next = queue.shift();
      if (next instanceof Error) throw next;
      return next;
    },
  };
  const feed = (item: string | undefined | Error) => {
    queue.push(item);
    wake?.();
  };
  return { wire, sent, feed };
}

describe("Ears: the texts a program reads", () => {
  it("a call after close() is ScopeClosed with the name, and nothing is sent", async () => {
    const { wire, sent } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    ears.close();
    expect(await ears.call("read")).toEqual(Outcome.failure(FailureCode.ScopeClosed, 'the ears handle is closed; "read" was not called'));
    expect(sent).toEqual([]);
  });

  it("a call the handle closes under, while an asynchronous argument schema runs, is ScopeClosed and never sent", async () => {
    let release: (() => void) | undefined;
    const slow = schema((value) => new Promise((resolve) => (release = () => resolve({ value }))));
    const contract = defineCapabilities({ read: { arguments: slow } });
    const { wire, sent } = manualWire();
    const ears = Ears.open(wire, ["read"], contract);
    const call = ears.call("read", { path: "a" });
    await new Promise((resolve) => setImmediate(resolve));
    ears.close();
    release?.();
    expect(await call).toEqual(Outcome.failure(FailureCode.ScopeClosed, 'the ears handle is closed; "read" was not called'));
    expect(sent).toEqual([]);
  });

  it("a capability the contract does not declare is refused locally with its name", async () => {
    const contract = defineCapabilities({ read: { arguments: anything } });
    const { wire } = manualWire();
    const ears = Ears.open(wire, ["read", "write"], contract);
    const outcome = await (ears as unknown as Ears).call("write", {});
    expect(outcome.content).toBe(`capability "write" is not declared in the guest's capability contract; nothing was sent`);
  });

  it("a timeoutMs that is not a positive number is a RangeError naming the value", async () => {
    const { wire } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    await expect(ears.call("read", {}, { timeoutMs: 0 })).rejects.toThrow(new RangeError("timeoutMs must be a positive number, got 0"));
    await expect(ears.call("read", {}, { timeoutMs: -5 })).rejects.toThrow(new RangeError("timeoutMs must be a positive number, got -5"));
  });

  it("a call left waiting when the program ends is ScopeClosed, saying the request may have executed", async () => {
    const { wire } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    const call = ears.call("read");
    expect(ears.finish()).toBe(1);
    expect(await call).toEqual(
      Outcome.failure(FailureCode.ScopeClosed, 'the program ended before the reply to "read" arrived; the request may have executed'),
    );
  });

  it.each<[string, StandardSchemaV1]>([
    [
      "throws",
      schema(() => {
        throw new Error("schema bug");
      }),
    ],
    ["rejects", schema(() => Promise.reject(new Error("schema bug")))],
  ])("a structured schema that %s makes the reply InvalidReply, saying the schema threw", async (_how, structured) => {
    const contract = defineCapabilities({ read: { structured } });
    const { wire, sent, feed } = manualWire();
    const ears = Ears.open(wire, ["read"], contract);
    const call = ears.call("read");
    await new Promise((resolve) => setImmediate(resolve));
    const { id } = decodeFrame(sent[0]!) as { id: number };
    feed(encodeFrame({ type: "reply", id, outcome: Outcome.success("", { n: 1 }) }));
    expect(await call).toEqual(
      Outcome.failure(
        FailureCode.InvalidReply,
        `the host's reply to "read" does not match the contract's structured schema: the schema threw: schema bug; ` +
          "the request did execute on the host",
      ),
    );
  });
});

describe("Ears: how the session breaks", () => {
  it("a receive that fails mid-call rejects the call as closed, naming the read failure", async () => {
    const { wire, feed } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    const call = ears.call("read");
    feed(new Error("EIO"));
    const error = await call.then(
      () => undefined,
      (rejected: unknown) => rejected,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "closed", mayHaveExecuted: true });
    expect((error as Error).message).toBe(
      'reading from the host failed: EIO before replying to "read"; the request may already have executed',
    );
  });

  it("a host frame other than a reply during the run is kind protocol", async () => {
    const { wire, feed } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    const call = ears.call("read");
    feed(encodeFrame({ type: "invoke", protocol: 1, allowed: [], input: null }));
    await expect(call).rejects.toMatchObject({ kind: "protocol" });
  });

  it("the first break wins: a malformed line, then the end of input, leaves later calls malformed", async () => {
    const { wire, feed } = manualWire();
    const ears = Ears.open(wire, ["read"]);
    const first = ears.call("read");
    feed("not json");
    feed(undefined);
    await expect(first).rejects.toMatchObject({ kind: "malformed" });
    await new Promise((resolve) => setImmediate(resolve));
    await expect(ears.call("read")).rejects.toMatchObject({ kind: "malformed" });
  });

  it("the first break wins: a log write that fails after a malformed line does not replace the malformed break", async () => {
    const { wire, feed } = manualWire(async (line) => {
      if (line.includes('"type":"log"')) throw new Error("EPIPE");
    });
    const ears = Ears.open(wire, ["read"]);
    const first = ears.call("read");
    feed("not json");
    await expect(first).rejects.toMatchObject({ kind: "malformed" });
    await ears.log("after the break");
    await expect(ears.call("read")).rejects.toMatchObject({ kind: "malformed" });
  });

  it("a log whose write fails breaks the session: later calls reject write-failed, may have executed", async () => {
    const { wire } = manualWire(async (line) => {
      if (line.includes('"type":"log"')) throw new Error("EPIPE");
    });
    const ears = Ears.open(wire, ["read"]);
    await ears.log("lost");
    const error = await ears.call("read").then(
      () => undefined,
      (rejected: unknown) => rejected,
    );
    expect(error).toMatchObject({ kind: "write-failed", message: 'writing to the host failed: EPIPE; "read" was not sent' });
    // The break itself is the cause: the write that failed may have reached the host.
    expect((error as Error).cause).toMatchObject({ kind: "write-failed", mayHaveExecuted: true });
  });

  it("a wire that fails a send with a TransportError keeps that error's kind", async () => {
    const { wire } = manualWire(async () => {
      throw new TransportError("the pipe is gone", { kind: "closed" });
    });
    const ears = Ears.open(wire, ["read"]);
    const call = ears.call("read");
    await expect(call).rejects.toMatchObject({ kind: "closed" });
  });

  it("a plain write failure is write-failed with mayHaveExecuted true", async () => {
    const { wire } = manualWire(async () => {
      throw new Error("EPIPE");
    });
    const ears = Ears.open(wire, ["read"]);
    await expect(ears.call("read")).rejects.toMatchObject({ kind: "write-failed", mayHaveExecuted: true });
  });
});

describe("Ears over a stream wire (its promise-free send)", () => {
  it("a call is written and answered, and a successful write does not break the session", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const ears = Ears.open(streamWire({ input, output }), ["read"]);
    const call = ears.call("read", { path: "a" });
    const written = await new Promise<string>((resolve) => output.once("data", (chunk: Buffer) => resolve(chunk.toString("utf8"))));
    const { id } = decodeFrame(written.trim()) as { id: number };
    input.write(`${encodeFrame({ type: "reply", id, outcome: Outcome.success("A") })}\n`);
    expect(await call).toEqual(Outcome.success("A"));
    const second = ears.call("read", { path: "b" });
    const next = await new Promise<string>((resolve) => output.once("data", (chunk: Buffer) => resolve(chunk.toString("utf8"))));
    input.write(`${encodeFrame({ type: "reply", id: (decodeFrame(next.trim()) as { id: number }).id, outcome: Outcome.success("B") })}\n`);
    expect(await second).toEqual(Outcome.success("B"));
  });

  it("a write that fails rejects the call as write-failed", async () => {
    const output = new Writable({
      write(_chunk, _encoding, done) {
        done(new Error("EPIPE"));
      },
    });
    output.on("error", () => {});
    const ears = Ears.open(streamWire({ input: new PassThrough(), output }), ["read"]);
    await expect(ears.call("read")).rejects.toMatchObject({ kind: "write-failed", mayHaveExecuted: true });
  });
});
