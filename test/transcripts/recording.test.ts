import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecording, recordingOf, RecordingError } from "../../src/transcripts/recording.js";
import { formatTranscriptEntry, type TranscriptEntry } from "../../src/transcripts/transcript.js";

describe("recordingOf refuses transcripts that cannot be replayed", () => {
  const hello: TranscriptEntry = { from: "guest", frame: { type: "hello", protocol: 1 } };
  const invoke: TranscriptEntry = { from: "host", frame: { type: "invoke", protocol: 1, allowed: [], input: null } };

  it.each<[string, TranscriptEntry[], RegExp]>([
    ["no invoke", [hello], /no invoke frame from the host/],
    ["a second invoke", [hello, invoke, invoke], /entry 3 \(from host\) is a second invoke/],
    ["a host line that is not JSON", [hello, { from: "host", text: "oops" }], /entry 2 \(from host\) is not a frame/],
    [
      "an invalid host frame",
      [hello, { from: "host", frame: { type: "reply", id: 0 } }],
      /entry 2 \(from host\) is not a valid frame: reply.id/,
    ],
    [
      "a reply to a request never sent",
      [hello, invoke, { from: "host", frame: { type: "reply", id: 7, outcome: { status: "success" } } }],
      /entry 3 \(from host\) replies to request id 7/,
    ],
    [
      "a guest frame from the host",
      [hello, invoke, { from: "host", frame: { type: "log", content: "x" } }],
      /entry 3 \(from host\) is a log frame/,
    ],
  ])("%s", (_name, entries, message) => {
    expect(() => recordingOf(entries)).toThrow(RecordingError);
    expect(() => recordingOf(entries)).toThrow(message);
  });

  it("skips guest lines that are not frames: they are where a recorded session broke", () => {
    const recording = recordingOf([
      hello,
      invoke,
      { from: "guest", text: "Debugger listening" },
      { from: "guest", frame: { type: "nope" } },
    ]);
    expect(recording).toEqual({ hello: hello.frame, invoke: invoke.frame, exchanges: [], result: undefined });
  });
});

describe("loadRecording", () => {
  const request = { type: "request", id: 1, name: "read", arguments: {} } as const;
  const entries: TranscriptEntry[] = [
    { from: "guest", frame: { type: "hello", protocol: 1 } },
    { from: "host", frame: { type: "invoke", protocol: 1, allowed: ["read"], input: null } },
    { from: "guest", frame: request },
  ];

  it("takes transcript entries, a transcript file, or a recording as it is", async () => {
    const recording = recordingOf(entries);
    expect(recording.exchanges).toEqual([{ request }]);
    expect(await loadRecording(entries)).toEqual(recording);
    expect(await loadRecording(recording)).toBe(recording);
    const dir = mkdtempSync(join(tmpdir(), "ears-recording-"));
    try {
      const path = join(dir, "run.ndjson");
      writeFileSync(path, entries.map((entry) => `${formatTranscriptEntry(entry)}\n`).join(""));
      expect(await loadRecording(path)).toEqual(recording);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
