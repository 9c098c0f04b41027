// Transcripts read from files narrow like testGuest's: with { frames: true } every entry holds a protocol 1
// frame, so entry.frame.type narrows the frame (test/transcripts/transcript-frames-file.test.ts runs it).
import { expectTypeOf } from "vitest";
import type { Frame, Json } from "@posoco/ears";
import { readTranscript, type FrameEntry, type TranscriptEntry } from "@posoco/ears/testing";

const frames = await readTranscript("run.ndjson", { frames: true, maxLineBytes: 1024 });
expectTypeOf(frames).toEqualTypeOf<FrameEntry[]>();
for (const entry of frames) {
  expectTypeOf(entry.frame).toExtend<Frame>();
  expectTypeOf(entry.frame.type).toEqualTypeOf<Frame["type"]>();
  if (entry.frame.type === "request") expectTypeOf(entry.frame.arguments).toEqualTypeOf<Json>();
  if (entry.frame.type === "result") expectTypeOf(entry.frame.outcome.status).toEqualTypeOf<"success" | "failure">();
}
// A frame entry is a transcript entry: it goes wherever one does (replay, recordingOf).
expectTypeOf<FrameEntry>().toExtend<TranscriptEntry>();

// Without the option, a file may hold anything a broken peer wrote: entries stay loose.
const loose = await readTranscript("run.ndjson");
expectTypeOf(loose).toEqualTypeOf<TranscriptEntry[]>();
const first = loose[0]!;
// @ts-expect-error: a frame read without frames: true is any JSON value, not a protocol 1 frame
void ("frame" in first && first.frame.type);
// frames: false (or a boolean not known to be true) keeps the loose type.
expectTypeOf(await readTranscript("run.ndjson", { frames: false })).toEqualTypeOf<TranscriptEntry[]>();

// Notes (the run's code body, the guest's stderr, the closing report) are entries too; isNote tells them apart,
// and "at" is optional.
import { isNote, MAX_RECORDED_CODE_CHARS } from "@posoco/ears/testing";
if (isNote(first)) {
  if ("stderr" in first) expectTypeOf(first.stderr).toEqualTypeOf<string>();
  else if ("code" in first) {
    expectTypeOf(first.code).toEqualTypeOf<string>();
    expectTypeOf(first.droppedChars).toEqualTypeOf<number | undefined>();
  } else expectTypeOf(first.report).toEqualTypeOf<Json>();
}
expectTypeOf(MAX_RECORDED_CODE_CHARS).toEqualTypeOf<number>();
expectTypeOf(first.at).toEqualTypeOf<number | undefined>();
