// Transcripts and replay against values the decoder refuses: nothing crashes, nothing is lost.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_FRAME_DEPTH } from "../../src/protocol/json.js";
import { readTranscript, transcriptEntry, transcriptLine, TranscriptError } from "../../src/transcripts/transcript.js";

const dir = mkdtempSync(join(tmpdir(), "ears-transcript-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const deep = (depth: number) => `${"[".repeat(depth)}0${"]".repeat(depth)}`;
const deepLine = `{"type":"request","id":1,"name":"x","arguments":${deep(100_000)}}`;

describe("transcripts and the depth and range limits", () => {
  it("a guest line nested 100,000 levels deep is recorded as text, exactly, without overflowing the stack", () => {
    expect(JSON.parse(transcriptLine("guest", deepLine))).toEqual({ from: "guest", text: deepLine });
    expect(transcriptEntry("guest", deepLine)).toEqual({ from: "guest", text: deepLine });
  });

  it("a line holding 1e400 is recorded as text (the frame value would read back as Infinity)", () => {
    const line = '{"type":"result","outcome":{"status":"success","structured":1e400}}';
    expect(JSON.parse(transcriptLine("guest", line))).toEqual({ from: "guest", text: line });
  });

  it("a frame exactly as deep as the protocol allows is recorded as a frame", () => {
    const line = `{"type":"result","outcome":{"status":"success","content":"","structured":${deep(MAX_FRAME_DEPTH - 2)}}}`;
    expect(transcriptLine("guest", line)).toBe(`{"from":"guest","frame":${line}}`);
  });

  it("reading a transcript whose frame is nested too deep fails with a TranscriptError naming the line", async () => {
    const path = join(dir, "deep.ndjson");
    writeFileSync(path, `{"from":"guest","frame":{"type":"hello","protocol":1}}\n{"from":"guest","frame":${deepLine}}\n`);
    const failure = await readTranscript(path).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TranscriptError);
    expect((failure as TranscriptError).line).toBe(2);
    expect((failure as TranscriptError).message).toMatch(
      /line 2: the frame cannot be read as JSON unchanged: frame\.arguments.* is nested more than 512 levels/,
    );
  });
});
