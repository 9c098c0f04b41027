// StreamWire over PassThrough pairs: byte-level framing at the edges (cap, BOM, CRLF, truncation,
// invalid UTF-8, ended input) and what it writes (`\n` only, one frame per line).
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { decodeFrame, encodeFrame, type Frame } from "../../src/protocol/frames.js";
import { Outcome } from "../../src/protocol/outcome.js";
import { serve, type GuestProgram } from "../../src/guest/serve.js";
import { DEFAULT_MAX_FRAME_BYTES } from "../../src/protocol/frames.js";
import { stdio, StreamWire, streamWire } from "../../src/wires/stdio.js";
import { logLineOfBytes } from "../helpers/log-line.js";

function pipes() {
  const input = new PassThrough();
  const output = new PassThrough();
  const written: Buffer[] = [];
  output.on("data", (chunk: Buffer) => written.push(chunk));
  return { input, output, bytes: () => Buffer.concat(written) };
}

const invokeLine = (allowed: string[] = ["read"]) => encodeFrame({ type: "invoke", protocol: 1, allowed, input: null });

/** Serves `run` over PassThrough streams fed with `feed` (then ended), and returns what the guest wrote. */
async function serveBytes(feed: (string | Buffer)[], run: GuestProgram, maxFrameBytes?: number) {
  const { input, output, bytes } = pipes();
  const report = serve({ wire: streamWire({ input, output, maxFrameBytes }), run });
  for (const piece of feed) input.write(piece);
  input.end();
  const done = await report;
  const text = bytes().toString("utf8");
  const frames: Frame[] = text
    .split("\n")
    .filter((l) => l !== "")
    .map(decodeFrame);
  return { report: done, text, frames };
}

describe("StreamWire reading", () => {
  it("accepts a frame of exactly maxFrameBytes and refuses one byte more as oversized", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output, 200);
    input.write(`${logLineOfBytes(200)}\n`);
    expect(await wire.receive()).toBe(logLineOfBytes(200));
    input.write(`${logLineOfBytes(201)}\n`);
    const error = await wire.receive().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "oversized", message: "a frame exceeds the 200-byte limit" });
  });

  it("refuses an oversized frame as soon as the cap is passed, without waiting for its newline, and stops reading", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output, 1000);
    const received = wire.receive();
    for (let i = 0; i < 3; i++) input.write(Buffer.alloc(400, 0x61)); // 1200 bytes, no newline, stream still open
    await expect(received).rejects.toMatchObject({ kind: "oversized" });
    expect(input.listenerCount("data")).toBe(0);
    input.write(Buffer.alloc(100_000, 0x61));
    expect(input.readableLength).toBeGreaterThan(0); // left in the stream, not taken into the wire
    await expect(wire.receive()).rejects.toMatchObject({ kind: "oversized" });
  });

  it("defaults the cap to 64 MiB and refuses a cap that is not a positive integer", () => {
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(64 * 1024 * 1024);
    const { input, output } = pipes();
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new StreamWire(input, output, bad)).toThrow(RangeError);
  });

  it("skips a UTF-8 BOM before the invoke, and accepts \\r\\n endings and blank lines", async () => {
    const { frames, report } = await serveBytes(["\uFEFF", "\r\n", `${invokeLine([])}\r\n`, "  \r\n"], () => "ok");
    expect(report.status).toBe("completed");
    expect(frames.at(-1)).toEqual({ type: "result", outcome: Outcome.success("", "ok") });
  });

  it("a truncated last line at end of stream is a TransportError, not a frame", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    input.end(`${invokeLine()}\n{"type":"reply","id":1`);
    expect(await wire.receive()).toBe(invokeLine());
    const error = await wire.receive().catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "truncated" });
    expect((error as Error).message).toMatch(/the stream ended in the middle of a frame \(\d+ bytes without a final newline\)/);
  });

  it("a truncated reply at end of stream rejects the waiting call; the program still gets to write its result", async () => {
    const { report, frames } = await serveBytes([`${invokeLine()}\n`, '{"type":"reply","id":1,"outc'], async (ears) =>
      ears.call("read").catch((e: TransportError) => e.kind),
    );
    expect(report.status).toBe("completed");
    expect(frames.at(-1)).toEqual({ type: "result", outcome: Outcome.success("", "truncated") });
  });

  it("invalid UTF-8 is a malformed-frame TransportError, never silently replaced", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    input.write(
      Buffer.concat([Buffer.from('{"type":"invoke","protocol":1,"allowed":["'), Buffer.from([0xff, 0xfe]), Buffer.from('"]}\n')]),
    );
    await expect(wire.receive()).rejects.toMatchObject({ kind: "malformed", message: "a frame is not valid UTF-8" });
  });

  it("input already ended before serve starts ends the session as broken, promptly", async () => {
    const { input, output, bytes } = pipes();
    input.end();
    input.resume();
    await new Promise((resolve) => input.once("end", resolve));
    expect(input.readableEnded).toBe(true);
    const report = await serve({ wire: new StreamWire(input, output), run: () => "never" });
    expect(report).toMatchObject({ status: "broken", error: { kind: "closed" } });
    expect(decodeFrame(bytes().toString("utf8").trimEnd())).toMatchObject({ type: "hello" });
  });

  it("input destroyed before serve starts ends the session as broken", async () => {
    const { input, output } = pipes();
    input.destroy();
    const report = await serve({ wire: new StreamWire(input, output), run: () => "never" });
    expect(report).toMatchObject({ status: "broken", error: { kind: "closed" } });
  });

  it("does not read before the first receive, then returns undefined at end of stream, every time", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    input.write(`${invokeLine()}\n`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(input.readableFlowing).toBe(null);
    expect(await wire.receive()).toBe(invokeLine());
    input.end();
    expect(await wire.receive()).toBeUndefined();
    expect(await wire.receive()).toBeUndefined();
  });

  it("a burst of thousands of frames the reader has not asked for yet is paused, then delivered whole and in order", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    input.write('{"n":-1}\n');
    expect(await wire.receive()).toBe('{"n":-1}');
    for (let chunk = 0; chunk < 5; chunk++) {
      input.write([...Array(1000).keys()].map((i) => `{"n":${chunk * 1000 + i}}\n`).join(""));
    }
    input.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(input.isPaused()).toBe(true); // the wire stopped taking lines nobody asked for
    const received: string[] = [];
    for (let line = await wire.receive(); line !== undefined; line = await wire.receive()) received.push(line);
    expect(received).toEqual([...Array(5000).keys()].map((n) => `{"n":${n}}`));
  });

  it("an input stream error rejects receive with a TransportError instead of crashing", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    const received = wire.receive();
    input.destroy(new Error("EIO: read failed"));
    await expect(received).rejects.toMatchObject({ kind: "closed", message: "reading from the host failed: EIO: read failed" });
  });
});

describe("StreamWire writing", () => {
  it("writes one frame per line, ended by \\n and never \\r\\n, even for payloads full of line breaks", async () => {
    const payload = "a\r\nb\rc\nd\u2028e\u2029🎉\uD800";
    const { input, output, bytes } = pipes();
    const report = serve({
      wire: new StreamWire(input, output),
      run: async (ears) => {
        await ears.log(payload, "warn");
        return (await ears.call("read", payload)).content;
      },
    });
    input.write(`${invokeLine()}\n`);
    while (!bytes().includes('"type":"request"')) await new Promise((resolve) => output.once("data", resolve));
    input.end(`${encodeFrame({ type: "reply", id: 1, outcome: Outcome.success(payload) })}\n`);
    expect((await report).status).toBe("completed");
    const text = bytes().toString("utf8");
    expect(text.endsWith("\n")).toBe(true);
    expect(text.includes("\r")).toBe(false);
    const frames = text.slice(0, -1).split("\n").map(decodeFrame);
    expect(frames.map((f) => f.type)).toEqual(["hello", "log", "request", "result"]);
    expect(frames[1]).toEqual({ type: "log", level: "warn", content: payload });
    expect(frames[2]).toEqual({ type: "request", id: 1, name: "read", arguments: payload });
    expect(frames[3]).toEqual({ type: "result", outcome: Outcome.success("", payload) });
  });

  it("writes a frame of several MiB whole, with surrogate pairs and multi-byte characters at every MiB boundary", async () => {
    const mib = 1024 * 1024;
    // Surrogate pairs aligned so that one straddles the first 1 MiB boundary of the frame's text.
    const head = encodeFrame({ type: "log", level: "info", content: "" }).length - 2;
    const content = `${"é".repeat(head % 2 === 0 ? 1 : 0)}${"🎉".repeat(mib)}€tail`;
    const frame = encodeFrame({ type: "log", level: "info", content });
    expect(frame.charCodeAt(mib - 1)).toBe(0xd83c); // the high half of a pair sits right before the boundary
    const { input, output, bytes } = pipes();
    const wire = new StreamWire(input, output);
    await wire.send(frame);
    await wire.send('{"type":"log","content":"next"}');
    const text = bytes().toString("utf8");
    expect(text).toBe(`${frame}\n{"type":"log","content":"next"}\n`);
    expect(bytes().length).toBe(Buffer.byteLength(frame) + 1 + Buffer.byteLength('{"type":"log","content":"next"}') + 1);
  });

  it("a write failure in the middle of a large frame rejects its send with a write-failed TransportError", async () => {
    const { input } = pipes();
    let writes = 0;
    const output = new Writable({
      write(_chunk, _encoding, callback) {
        callback(++writes === 2 ? Object.assign(new Error("write EPIPE"), { code: "EPIPE" }) : null);
      },
    });
    const wire = new StreamWire(input, output);
    const error = await wire.send("x".repeat(3 * 1024 * 1024)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "write-failed", message: "writing to the host failed (EPIPE)" });
    await expect(wire.send("{}")).rejects.toBe(error);
  });

  it("an output stream error rejects sends with a write-failed TransportError; later sends reject at once", async () => {
    const { input, output } = pipes();
    const wire = new StreamWire(input, output);
    await wire.send("{}");
    output.destroy(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
    await new Promise((resolve) => setImmediate(resolve));
    const error = await wire.send("{}").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect(error).toMatchObject({ kind: "write-failed", mayHaveExecuted: true, message: "writing to the host failed (EPIPE)" });
    await expect(wire.send("{}")).rejects.toBe(error);
  });

  it("close() ends the output after pending frames, stops reading, and later sends reject", async () => {
    const { input, output, bytes } = pipes();
    const wire = new StreamWire(input, output);
    const waiting = wire.receive();
    void wire.send('{"a":1}');
    await wire.close();
    expect(await waiting).toBeUndefined();
    expect(output.writableEnded).toBe(true);
    expect(input.destroyed).toBe(true);
    expect(bytes().toString()).toBe('{"a":1}\n');
    await expect(wire.send("{}")).rejects.toMatchObject({ kind: "write-failed" });
    expect(await wire.receive()).toBeUndefined();
  });

  it("stdio() given streams makes a plain StreamWire and leaves process.stdout alone", () => {
    const before = process.stdout.write;
    const { input, output } = pipes();
    expect(stdio({ input, output })).toBeInstanceOf(StreamWire);
    expect(process.stdout.write).toBe(before);
  });
});
