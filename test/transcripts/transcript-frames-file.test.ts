// readTranscript(path, { frames: true }): a transcript read from a file gives frame entries, so
// entry.frame.type narrows (test-d/transcript.test-d.ts), and a line that is not a protocol 1 frame is
// refused with its line number instead of being typed as one.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { encodeFrame } from "../../src/protocol/frames.js";
import { frame } from "../../src/testing/arbitraries.js";
import { testGuest } from "../../src/testing/test-guest.js";
import { formatTranscriptEntry, readTranscript, TranscriptError } from "../../src/transcripts/transcript.js";

const dir = mkdtempSync(join(tmpdir(), "ears-transcript-frames-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = (content: string) => {
  const path = join(dir, `t${counter++}.ndjson`);
  writeFileSync(path, content);
  return path;
};

async function refusal(path: string): Promise<TranscriptError> {
  const error = await readTranscript(path, { frames: true }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TranscriptError);
  return error as TranscriptError;
}

describe("readTranscript with frames: true", () => {
  it("reads back testGuest's transcript as the same frames, typed so entry.frame.type narrows", async () => {
    const report = await testGuest(async (ears) => (await ears.call("read", { path: "a" })).content, { capabilities: { read: () => "A" } });
    const path = file(report.transcript.map((entry) => `${formatTranscriptEntry(entry)}\n`).join(""));
    const entries = await readTranscript(path, { frames: true });
    expect(entries).toEqual(report.transcript);
    expect(entries.map((entry) => entry.frame.type)).toEqual(["hello", "invoke", "request", "reply", "result"]);
  });

  it("reads any valid frame as the codec decodes it (seeded property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom("guest" as const, "host" as const), frame()), { maxLength: 8 }),
        async (frames) => {
          const path = file(frames.map(([from, value]) => `{"from":"${from}","frame":${encodeFrame(value)}}\n`).join(""));
          expect(await readTranscript(path, { frames: true })).toEqual(frames.map(([from, value]) => ({ from, frame: value })));
        },
      ),
      { seed: 1010, numRuns: 50 },
    );
  });

  it("applies protocol 1's defaults, as the host does: a log without level is info, a request without arguments has null", async () => {
    const path = file(
      '{"from":"guest","frame":{"type":"log","content":"x"}}\n{"from":"guest","frame":{"type":"request","id":1,"name":"list"}}\n',
    );
    expect(await readTranscript(path, { frames: true })).toEqual([
      { from: "guest", frame: { type: "log", level: "info", content: "x" } },
      { from: "guest", frame: { type: "request", id: 1, name: "list", arguments: null } },
    ]);
    // Without the option the entries are kept exactly as written.
    expect(await readTranscript(path)).toEqual([
      { from: "guest", frame: { type: "log", content: "x" } },
      { from: "guest", frame: { type: "request", id: 1, name: "list" } },
    ]);
  });

  it("refuses JSON that is not a frame, naming the line and the reason", async () => {
    const error = await refusal(
      file('{"from":"guest","frame":{"type":"hello","protocol":1,"sdk":"x"}}\n\n{"from":"guest","frame":{"type":"nope"}}\n'),
    );
    expect(error.line).toBe(3);
    expect(error.message).toMatch(/ line 3: not a protocol 1 frame \(.+\); read it without frames: true$/);
  });

  it("refuses a text line (the peer wrote something that was not JSON), naming it", async () => {
    const error = await refusal(file('{"from":"guest","text":"Segmentation fault"}\n'));
    expect(error.line).toBe(1);
    expect(error.message).toContain("line 1: not a protocol 1 frame (the line was not JSON (the session broke here))");
    // The same file reads without the option, the text kept.
    expect(await readTranscript(error.path)).toEqual([{ from: "guest", text: "Segmentation fault" }]);
  });

  it("refuses a frame whose values a typed frame cannot hold (a request id that is not a positive integer)", async () => {
    const error = await refusal(file('{"from":"guest","frame":{"type":"request","id":0,"name":"read"}}\n'));
    expect(error.message).toContain("request.id must be a positive integer");
  });
});
