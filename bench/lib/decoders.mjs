// The contenders of the decode scenarios. Each takes a list of chunks (Buffers) and a deadline
// (performance.now() value) and returns { frames } or { overBudget: true }. Every contender must
// parse every frame; validation is each library's own (see BENCHMARKS.md, "Method").
import { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import { performance } from "node:perf_hooks";
import { decodeFrame, LineSplitter, StreamWire, validateFrame } from "@posoco/ears";
import { ReadBuffer } from "@modelcontextprotocol/sdk/shared/stdio.js";
import ndjson from "ndjson";

/** The same cap for every contender that has one: our default (the MCP default, 10 MB, is too small for the long frames). */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

class OverBudget extends Error {}

/** A byte stream that hands out the chunks one per read, like a pipe does, and gives up past the deadline. */
function source(chunks, deadline) {
  let next = 0;
  return new Readable({
    read() {
      if (performance.now() > deadline) this.destroy(new OverBudget());
      else this.push(next < chunks.length ? chunks[next++] : null);
    },
  });
}

const discard = () => new Writable({ write: (_chunk, _encoding, done) => done() });

/** Ours, as a guest or host reads: StreamWire over a Readable, then decodeFrame on every line. */
export async function earsStreamWire(chunks, deadline) {
  const wire = new StreamWire(source(chunks, deadline), discard(), MAX_FRAME_BYTES);
  let frames = 0;
  try {
    for (;;) {
      const line = await wire.receive();
      if (line === undefined) break;
      decodeFrame(line);
      frames++;
    }
  } catch (error) {
    if (error?.cause instanceof OverBudget) return { overBudget: true };
    throw error;
  } finally {
    await wire.close();
  }
  return { frames };
}

/** Ours, framing only: StreamWire lines without decodeFrame (informational: the cost JSON.parse hides). */
export async function earsStreamWireLines(chunks, deadline) {
  const wire = new StreamWire(source(chunks, deadline), discard(), MAX_FRAME_BYTES);
  let frames = 0;
  try {
    while ((await wire.receive()) !== undefined) frames++;
  } finally {
    await wire.close();
  }
  return { frames };
}

/** Ours without the stream: LineSplitter.push + decodeFrame, synchronous (informational row). */
export async function earsSplitter(chunks, deadline) {
  const splitter = new LineSplitter(MAX_FRAME_BYTES);
  let frames = 0;
  const emit = (line) => {
    decodeFrame(line);
    frames++;
  };
  for (const chunk of chunks) {
    splitter.push(chunk, emit);
    if (performance.now() > deadline) return { overBudget: true };
  }
  splitter.end();
  return { frames };
}

/** MCP TypeScript SDK: ReadBuffer.append + readMessage (which calls deserializeMessage: JSON.parse + zod). */
export async function mcpReadBuffer(chunks, deadline) {
  const buffer = new ReadBuffer({ maxBufferSize: MAX_FRAME_BYTES });
  let frames = 0;
  for (const chunk of chunks) {
    buffer.append(chunk);
    while (buffer.readMessage() !== null) frames++;
    if (performance.now() > deadline) return { overBudget: true };
  }
  return { frames };
}

/** ndjson.parse() piped from the byte stream, then validateFrame on every object (the same checks as ours). */
export async function ndjsonParse(chunks, deadline) {
  let frames = 0;
  const parser = ndjson.parse();
  const input = source(chunks, deadline);
  try {
    await new Promise((resolve, reject) => {
      parser.on("data", (value) => {
        const frame = validateFrame(value);
        if (typeof frame === "string") reject(new Error(frame));
        frames++;
      });
      parser.on("end", resolve);
      parser.on("error", reject);
      input.on("error", reject);
      input.pipe(parser);
    });
  } catch (error) {
    if (error instanceof OverBudget) return { overBudget: true };
    throw error;
  } finally {
    input.destroy();
    parser.destroy();
  }
  return { frames };
}

/**
 * Baseline: the least a reader can do. Decode text, look for `\n` in the new text only, JSON.parse
 * each line. No validation, no size cap, no UTF-8 check.
 */
export async function baselineSplitParse(chunks, deadline) {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  let frames = 0;
  for (const chunk of chunks) {
    const text = decoder.write(chunk);
    let start = 0;
    for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n", start)) {
      const line = pending + text.slice(start, newline);
      pending = "";
      start = newline + 1;
      if (line.length > 0) {
        JSON.parse(line);
        frames++;
      }
    }
    pending += start === 0 ? text : text.slice(start);
    if (performance.now() > deadline) return { overBudget: true };
  }
  return { frames };
}
