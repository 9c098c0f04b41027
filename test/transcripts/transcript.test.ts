import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/protocol/frames.js";
import { frame, garbageLine, session } from "../../src/testing/arbitraries.js";
import {
  formatTranscriptEntry,
  readTranscript,
  recordTo,
  transcriptEntry,
  TranscriptError,
  type TranscriptEntry,
} from "../../src/transcripts/transcript.js";

const dir = mkdtempSync(join(tmpdir(), "ears-transcript-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = (content?: string | Buffer) => {
  const path = join(dir, `t${counter++}.ndjson`);
  if (content !== undefined) writeFileSync(path, content);
  return path;
};

async function readError(path: string): Promise<TranscriptError> {
  const error = await readTranscript(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TranscriptError);
  return error as TranscriptError;
}

describe("transcript writer and reader", () => {
  it("round-trips any frames written as entries", async () => {
    const entry = fc.record({ from: fc.constantFrom("guest" as const, "host" as const), frame: frame() });
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { maxLength: 12 }), async (entries) => {
        const path = file();
        const recorder = recordTo(path);
        for (const e of entries) recorder.write(e);
        await recorder.close();
        expect(await readTranscript(path)).toEqual(entries);
      }),
      { numRuns: 60 },
    );
  });

  it("keeps every line the host saw, frames and garbage alike, in order", async () => {
    const garbage = fc.record({ from: fc.constantFrom("guest" as const, "host" as const), line: garbageLine() });
    const lines = fc
      .tuple(session(), fc.array(garbage, { maxLength: 4 }))
      .map(([steps, noise]) => [...steps.map((s) => ({ from: s.from, line: encodeFrame(s.frame) })), ...noise]);
    await fc.assert(
      fc.asyncProperty(lines, async (seen) => {
        const path = file();
        const recorder = recordTo(path);
        for (const { from, line } of seen) void recorder.onFrame(from, line);
        await recorder.close();
        expect(await readTranscript(path)).toEqual(seen.map(({ from, line }) => transcriptEntry(from, line)));
      }),
      { numRuns: 60 },
    );
  });

  it("writes one \\n-terminated line per frame, splicing the frame's own JSON text", async () => {
    const path = file();
    const recorder = recordTo(path);
    void recorder.onFrame("guest", '{"type":"hello","protocol":1}');
    void recorder.onFrame("guest", "Debugger listening");
    recorder.write({ from: "host", frame: { type: "invoke", protocol: 1, allowed: [], input: "a\u2028b" } });
    await recorder.close();
    expect(readFileSync(path, "utf8")).toBe(
      '{"from":"guest","frame":{"type":"hello","protocol":1}}\n' +
        '{"from":"guest","text":"Debugger listening"}\n' +
        '{"from":"host","frame":{"type":"invoke","protocol":1,"allowed":[],"input":"a\u2028b"}}\n',
    );
    expect(await readTranscript(path)).toEqual([
      { from: "guest", frame: { type: "hello", protocol: 1 } },
      { from: "guest", text: "Debugger listening" },
      { from: "host", frame: { type: "invoke", protocol: 1, allowed: [], input: "a\u2028b" } },
    ]);
  });

  it("keeps a JSON line whose value JSON.parse would alter as text, so it reads back as written", async () => {
    const path = file();
    const recorder = recordTo(path);
    void recorder.onFrame("guest", '{"type":"reply","id":1e400}');
    await recorder.close();
    expect(readFileSync(path, "utf8")).toBe('{"from":"guest","text":"{\\"type\\":\\"reply\\",\\"id\\":1e400}"}\n');
    expect(await readTranscript(path)).toEqual([transcriptEntry("guest", '{"type":"reply","id":1e400}')]);
    expect(transcriptEntry("guest", '{"type":"reply","id":1e400}')).toEqual({ from: "guest", text: '{"type":"reply","id":1e400}' });
  });

  it("refuses values JSON would alter instead of rewriting them", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const cases: [unknown, RegExp][] = [
      [{ n: NaN }, /frame\.n is NaN/],
      [{ big: 1n }, /frame\.big is a BigInt/],
      [cycle, /frame\.self refers back/],
      [{ when: new Date(0) }, /frame\.when is a Date/],
      [{ gone: undefined }, /frame\.gone is undefined/],
    ];
    for (const [frame, message] of cases) {
      expect(() => formatTranscriptEntry({ from: "guest", frame } as TranscriptEntry)).toThrow(message);
    }
    expect(() => formatTranscriptEntry({ from: "nobody", frame: {} } as unknown as TranscriptEntry)).toThrow(/"guest" or "host"/);
  });

  it("refuses frames after close() and fails early for a path it cannot create", async () => {
    const recorder = recordTo(file());
    await recorder.close();
    await recorder.close(); // idempotent
    expect(() => recorder.onFrame("guest", "{}")).toThrow(/is closed/);
    expect(() => recordTo(join(dir, "missing", "t.ndjson"))).toThrow(TranscriptError);
    expect(() => recordTo(join(dir, "missing", "t.ndjson"))).toThrow(/cannot create transcript .*ENOENT/);
  });

  it.runIf(process.platform === "linux")("close() rejects when the file could not be written (a full disk)", async () => {
    const recorder = recordTo("/dev/full");
    void recorder.onFrame("guest", '{"type":"hello","protocol":1}');
    await expect(recorder.close()).rejects.toThrow(/writing transcript \/dev\/full failed: .*ENOSPC/);
  });

  it("accepts \\r\\n, blank lines and a byte order mark", async () => {
    const path = file('\uFEFF{"from":"guest","frame":1}\r\n\r\n   \n{"from":"host","text":"x"}\n');
    expect(await readTranscript(path)).toEqual([
      { from: "guest", frame: 1 },
      { from: "host", text: "x" },
    ]);
  });
});

describe("malformed transcripts are reported with their line number", () => {
  const good = '{"from":"guest","frame":{}}\n';

  it.each([
    ["not JSON", `${good}\n${good}{"from":"guest",\n`, 4, /line 4: not JSON/],
    ["not an object", `${good}[1,2]\n`, 2, /line 2: a transcript entry must be an object/],
    ["a bad from", `${good}${good}{"from":"tool","frame":{}}\n`, 3, /line 3: "from" must be "guest" or "host"/],
    ["no frame or text", `{"from":"host"}\n`, 1, /line 1: an entry needs a "frame"/],
    ["a number JSON cannot keep", `${good}{"from":"host","frame":{"n":1e400}}\n`, 2, /line 2: .*frame\.n is Infinity/],
    ["a cut-off last line", `${good}{"from":"guest","frame":{}}`, 2, /line 2: the file ends in the middle of a line/],
  ])("%s", async (_name, content, line, message) => {
    const error = await readError(file(content));
    expect(error.line).toBe(line);
    expect(error.message).toMatch(message);
  });

  it("not UTF-8", async () => {
    const error = await readError(file(Buffer.concat([Buffer.from(good), Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a])])));
    expect(error.line).toBe(2);
    expect(error.message).toMatch(/line 2: not valid UTF-8/);
  });

  it("a line over the limit", async () => {
    const path = file(`${good}{"from":"guest","frame":"${"x".repeat(200)}"}\n`);
    const error = await readTranscript(path, { maxLineBytes: 100 }).catch((e: unknown) => e as TranscriptError);
    expect(error).toBeInstanceOf(TranscriptError);
    expect((error as TranscriptError).line).toBe(2);
    expect((error as TranscriptError).message).toMatch(/line 2: a frame exceeds the 100-byte limit/);
  });

  it("a missing file", async () => {
    const error = await readError(join(dir, "nope.ndjson"));
    expect(error.line).toBe(0);
    expect(error.message).toMatch(/cannot read transcript .*nope\.ndjson.*ENOENT/);
  });

  it("a line split across read chunks keeps its number", async () => {
    // Well past the 64 KiB read chunk, so the long line arrives in pieces.
    const long = `{"from":"guest","frame":"${"y".repeat(200_000)}"}\n`;
    const error = await readError(file(`${good}${long}${long}oops\n`));
    expect(error.line).toBe(4);
  });
});
