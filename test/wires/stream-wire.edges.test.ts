// StreamWire edges that mutation testing showed untested: why a send is refused (closed wire, output
// ended by someone else), a second concurrent receive, a late input error after close, an input that
// only closes, string chunks, and stdio() using exactly the streams it is given.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { stdio, StreamWire } from "../../src/wires/stdio.js";

function pipes() {
  const input = new PassThrough();
  const output = new PassThrough();
  const written: Buffer[] = [];
  output.on("data", (chunk: Buffer) => written.push(chunk));
  return { input, output, text: () => Buffer.concat(written).toString("utf8") };
}

describe("StreamWire edges", () => {
  it("names the cap it refuses", () => {
    const { input, output } = pipes();
    expect(() => new StreamWire(input, output, 0)).toThrow("maxFrameBytes must be a positive integer, got 0");
  });

  it("a send after close is refused as a closed wire, and nothing is written", async () => {
    const { input, output, text } = pipes();
    const wire = new StreamWire(input, output);
    await wire.close();
    const error = await wire.send("{}").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "write-failed", message: "the wire is closed; the frame was not sent" });
    expect(text()).toBe("");
  });

  it("a send after someone else ended the output is refused as a closed output stream", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    output.end();
    const error = await wire.send("{}").catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "write-failed", message: "the output stream is closed" });
    await expect(wire.send("{}")).rejects.toBe(error);
  });

  it("a second receive while one waits is refused with a clear error; the first still gets its line", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    const first = wire.receive();
    await expect(wire.receive()).rejects.toThrow("receive() called again before the previous call settled");
    input.write('{"a":1}\n');
    expect(await first).toBe('{"a":1}');
  });

  it("an input error after close does not crash the process", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    void wire.receive();
    await wire.close();
    expect(() => input.emit("error", new Error("late"))).not.toThrow();
  });

  it("an input that is destroyed while a receive waits (close without end) ends the stream", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    const waiting = wire.receive();
    input.destroy();
    expect(await waiting).toBeUndefined();
  });

  it("string chunks (an input with an encoding set) are framed like bytes", async () => {
    const { input, output } = pipes();
    input.setEncoding("utf8");
    const wire = new StreamWire(input, output);
    input.write('{"e":"🎉"}\n{"b":2}\n');
    expect(await wire.receive()).toBe('{"e":"🎉"}');
    expect(await wire.receive()).toBe('{"b":2}');
  });

  it("a flood nobody asked for is held in the input stream, not the wire's queue, until the reader drains half of it", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    input.write('{"n":-1}\n');
    expect(await wire.receive()).toBe('{"n":-1}');
    for (let chunk = 0; chunk < 5; chunk++) input.write([...Array(1000).keys()].map((i) => `{"n":${chunk * 1000 + i}}\n`).join(""));
    await new Promise((resolve) => setImmediate(resolve));
    // The input is still open: it is paused because the wire's queue is full, and keeps the rest itself.
    expect(input.isPaused()).toBe(true);
    expect(input.readableLength).toBeGreaterThan(0);
    // Taking one line does not resume it yet (the queue is far above half full).
    expect(await wire.receive()).toBe('{"n":0}');
    expect(input.isPaused()).toBe(true);
    input.end();
    const received: string[] = ['{"n":0}'];
    for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) received.push(line);
    expect(received).toEqual([...Array(5000).keys()].map((n) => `{"n":${n}}`));
  });

  it("stdio() given streams reads from the given input and writes to the given output, even when given only one", async () => {
    const before = process.stdout.write;
    const { input, output, text } = pipes();
    const wire = stdio({ input, output });
    input.write('{"a":1}\n');
    expect(await wire.receive()).toBe('{"a":1}');
    await wire.send('{"b":2}');
    expect(text()).toBe('{"b":2}\n');
    const onlyInput = stdio({ input: new PassThrough() });
    expect(onlyInput).toBeInstanceOf(StreamWire);
    expect(process.stdout.write).toBe(before); // no stdout capture: that is the process wire's job
    await wire.close?.();
  });
});
