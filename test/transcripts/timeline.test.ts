/**
 * Timed transcripts, their notes (stderr, report) and the timeline built from them: what the recorder
 * writes, what the reader and replay make of it, and what the timeline and its HTML show, with guest
 * text always escaped.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { timelineHtml, escape } from "../../src/cli/timeline-html.js";
import { printTimeline } from "../../src/cli/timeline-text.js";
import { runReport } from "../../src/host/report/report.js";
import { recordingOf } from "../../src/transcripts/recording.js";
import { timelineOf } from "../../src/transcripts/timeline.js";
import {
  formatTranscriptEntry,
  MAX_RECORDED_CODE_CHARS,
  readTranscript,
  recordTo,
  TranscriptError,
  type TranscriptEntry,
} from "../../src/transcripts/transcript.js";
import { excerpt } from "../../src/protocol/text.js";
import { PassThrough } from "node:stream";

const dir = mkdtempSync(join(tmpdir(), "ears-timeline-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const file = (content?: string) => {
  const path = join(dir, `t${counter++}.ndjson`);
  if (content !== undefined) writeFileSync(path, content);
  return path;
};

/** A timed session: two calls (one failing, one never answered), a log, stderr, a result and a report with usage. */
const SESSION: TranscriptEntry[] = [
  { from: "guest", at: 1, frame: { type: "hello", protocol: 1, sdk: "x@1" } },
  { from: "host", at: 2, frame: { type: "invoke", protocol: 1, allowed: ["read", "slow"], input: null } },
  { from: "guest", at: 10, frame: { type: "request", id: 1, name: "read", arguments: { path: "a" } } },
  { from: "guest", at: 11, frame: { type: "request", id: 2, name: "slow", arguments: null } },
  { from: "guest", at: 12, frame: { type: "log", level: "warn", content: "careful" } },
  { from: "host", at: 15, frame: { type: "reply", id: 1, outcome: { status: "failure", code: "NotFound", content: "no a" } } },
  { from: "guest", at: 16, stderr: "oops\n" },
  { from: "guest", at: 20, frame: { type: "result", outcome: { status: "success", content: "", structured: { n: 1 } } } },
  {
    from: "host",
    at: 25,
    report: { ok: true, durationMs: 30, usage: { cpuMs: 120.4, peakMemoryBytes: 48 * 1024 * 1024, peakProcesses: 3, source: "cgroup v2" } },
  },
];

describe("timed recordings and notes", () => {
  it("a timed recorder stamps every line with at, writes stderr and report notes, and the reader gives them back", async () => {
    const path = file();
    const recorder = recordTo(path, { timed: true });
    void recorder.onFrame("guest", '{"type":"hello","protocol":1}');
    recorder.stderr("boom\n");
    void recorder.onFrame("guest", "not json");
    recorder.report(
      runReport({ failure: { code: "GuestCrashed", message: "gone" }, durationMs: 5, logs: [], calls: [], stderr: "boom\n" }),
    );
    await recorder.close();
    const entries = await readTranscript(path);
    expect(entries.map((entry) => Object.keys(entry))).toEqual([
      ["from", "at", "frame"],
      ["from", "at", "stderr"],
      ["from", "at", "text"],
      ["from", "at", "report"],
    ]);
    const times = entries.map((entry) => entry.at!);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // The report note leaves out what the frames and stderr notes hold.
    expect(entries[3]).toMatchObject({ report: { ok: false, failure: { code: "GuestCrashed" }, durationMs: 5 } });
    expect(entries[3]).not.toHaveProperty("report.stderr");
    expect(entries[3]).not.toHaveProperty("report.logs");
    // frames: true leaves notes out; a replay skips them.
    const framesOnly = file(
      '{"from":"guest","at":1,"frame":{"type":"hello","protocol":1}}\n{"from":"guest","at":2,"stderr":"x"}\n{"from":"host","report":{}}\n',
    );
    expect(await readTranscript(framesOnly, { frames: true })).toEqual([{ from: "guest", at: 1, frame: { type: "hello", protocol: 1 } }]);
    expect(() => recordingOf(SESSION)).not.toThrow();
    expect(recordingOf(SESSION).exchanges).toHaveLength(2);
  });

  it("an untimed recorder writes exactly what it always did", async () => {
    const path = file();
    const recorder = recordTo(path);
    void recorder.onFrame("guest", '{"type":"hello","protocol":1}');
    await recorder.close();
    expect(readFileSync(path, "utf8")).toBe('{"from":"guest","frame":{"type":"hello","protocol":1}}\n');
  });

  it("refuses a bad time or a note from the wrong side, naming the line; the writer refuses the same", async () => {
    const bad = [
      ['{"from":"guest","at":-1,"frame":{}}', '"at" must be a number'],
      ['{"from":"guest","at":"5","frame":{}}', '"at" must be a number'],
      ['{"from":"host","stderr":"x"}', "an entry needs"],
      ['{"from":"guest","report":{}}', "an entry needs"],
    ] as const;
    for (const [line, reason] of bad) {
      const error = await readTranscript(file(`{"from":"guest","frame":{"type":"hello","protocol":1}}\n${line}\n`)).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TranscriptError);
      expect((error as TranscriptError).line).toBe(2);
      expect((error as Error).message).toContain(reason);
    }
    expect(() => formatTranscriptEntry({ from: "guest", at: Number.NaN, frame: { type: "hello", protocol: 1 } })).toThrow(/entry\.at/);
    expect(() => formatTranscriptEntry({ from: "host", stderr: "x" } as never)).toThrow(/stderr note/);
    expect(() => formatTranscriptEntry({ from: "host", report: { n: Number.NaN } })).toThrow(/entry\.report/);
  });
});

describe("the timeline of a transcript", () => {
  it("lays out calls as intervals with outcome and code, marks in place, the result and the report's usage", () => {
    const timeline = timelineOf(SESSION);
    expect(timeline.timed).toBe(true);
    // The report note's own time: the report's durationMs (30) counts on the host's clock, not the recording's.
    expect(timeline.durationMs).toBe(25);
    expect(timeline.calls).toEqual([
      { id: 1, name: "read", arguments: '{"path":"a"}', startMs: 10, endMs: 15, status: "failure", code: "NotFound", content: "no a" },
      { id: 2, name: "slow", arguments: "null", startMs: 11, status: "unanswered" },
    ]);
    expect(timeline.marks.map((mark) => [mark.kind, mark.atMs, mark.level])).toEqual([
      ["session", 1, undefined],
      ["session", 2, undefined],
      ["log", 12, "warn"],
      ["stderr", 16, undefined],
      ["end", 25, "normal"],
    ]);
    expect(timeline.result).toEqual({ atMs: 20, status: "success", content: "", structured: '{"n":1}' });
    expect(timeline.report?.usage).toEqual({ cpuMs: 120.4, peakMemoryBytes: 48 * 1024 * 1024, peakProcesses: 3, source: "cgroup v2" });
    expect(timelineHtml(timeline, "run.ndjson")).toContain("usage: cpu 120 ms, memory 48 MiB peak, 3 processes");
  });

  it("a transcript without times is laid out in order", () => {
    const untimed = SESSION.map(({ at: _at, ...entry }) => entry as TranscriptEntry);
    const timeline = timelineOf(untimed);
    expect(timeline.timed).toBe(false);
    expect(timeline.calls.map((call) => [call.startMs, call.endMs])).toEqual([
      [2, 5],
      [3, undefined],
    ]);
    expect(timelineHtml(timeline, "t.ndjson")).toContain("has no times");
  });

  it("the page and the text show every call, failure code, log, stderr chunk and the usage", () => {
    const timeline = timelineOf(SESSION);
    const html = timelineHtml(timeline, "run.ndjson");
    for (const text of ["#1 read", "failure NotFound", "#2 slow", "no reply", "[warn]", "careful", "[stderr]", "oops", "cpu 120 ms"]) {
      expect(html).toContain(text);
    }
    expect(html).toContain("default-src 'none'");
    const out = new PassThrough();
    let printed = "";
    out.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    printTimeline(timeline, out);
    expect(printed).toContain("ears: timeline: 25.0 ms, 2 calls (2 not successful), 1 logs\n");
    expect(printed).toContain('ears: |    10.0 ms  #1 read {"path":"a"}  5.0 ms  failure NotFound\n');
    expect(printed).toContain("ears: |    11.0 ms  #2 slow null  no reply  unanswered\n");
    expect(printed).toContain("ears: |    16.0 ms  [stderr] oops\n");
    expect(printed).toContain("ears: |    20.0 ms  result success\nears: |    25.0 ms  [end] the run ended normally after its result\n");
  });

  it("guest text never becomes markup in the page, nor a second line or escape sequence in the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.string({ maxLength: 60 }), (name, content) => {
        const entries: TranscriptEntry[] = [
          { from: "guest", at: 1, frame: { type: "request", id: 1, name, arguments: { content } } },
          { from: "host", at: 2, frame: { type: "reply", id: 1, outcome: { status: "failure", code: name, content } } },
          { from: "guest", at: 3, frame: { type: "log", level: name, content } },
          { from: "guest", at: 4, stderr: content },
        ];
        const timeline = timelineOf(entries);
        const html = timelineHtml(timeline, name);
        // Only the page's own script and style elements, whatever the guest wrote.
        expect(html.split("<script").length).toBe(2);
        expect(html.split("<style").length).toBe(2);
        expect(html).toContain(escape(excerpt(content, 300)));
        const out = new PassThrough();
        let printed = "";
        out.on("data", (chunk: Buffer) => (printed += chunk.toString()));
        printTimeline(timeline, out);
        for (const line of printed.split("\n").slice(0, -1)) expect(line).toMatch(/^ears: /);
        expect(printed).not.toMatch(/\x1b/);
      }),
      { seed: 21, numRuns: 300 },
    );
  });
});

describe("approvals and a cut-short end in the timeline (issues 31, 29.12)", () => {
  const base: TranscriptEntry[] = SESSION.slice(0, 3);

  it("each approval in the report note is a mark at its decision, with who decided and why", () => {
    const timeline = timelineOf([
      ...base,
      {
        from: "host",
        at: 40,
        report: {
          ok: true,
          durationMs: 40,
          approvals: [
            { id: 1, name: "read", decision: "denied", by: "ada", reason: "not today", atMs: 10, durationMs: 20 },
            { id: 2, name: "send\u001b[2J", decision: "approved", atMs: 11, durationMs: 5 },
          ],
        },
      },
    ]);
    const marks = timeline.marks.filter((mark) => mark.kind === "approval");
    expect(marks).toEqual([
      { kind: "approval", atMs: 30, level: "denied", text: "#1 read denied by ada: not today (decided in 20 ms)" },
      { kind: "approval", atMs: 16, level: "approved", text: "#2 send\u001b[2J approved (decided in 5 ms)" },
    ]);
    expect(timeline.marks.some((mark) => mark.kind === "end")).toBe(false);
    const html = timelineHtml(timeline, "t.ndjson");
    expect(html).toContain("[approval denied]");
  });

  it("a run stopped at its deadline, killed or paused ends with an end mark saying so", () => {
    const timedOut = timelineOf([
      ...base,
      {
        from: "host",
        at: 50,
        report: {
          ok: false,
          durationMs: 50,
          failure: { code: "RunTimeout", message: "the run took longer than 40 ms" },
          forcedStop: "SIGKILL",
          exit: { code: null, signal: "SIGKILL" },
        },
      },
    ]);
    expect(timedOut.marks.filter((mark) => mark.kind === "end")).toEqual([
      {
        kind: "end",
        atMs: 50,
        text: "RunTimeout: the run took longer than 40 ms; the host had to send SIGKILL; the guest was killed (signal SIGKILL)",
      },
    ]);
    const out = new PassThrough();
    printTimeline(timedOut, out);
    expect(String(out.read())).toContain("[end] RunTimeout");
    const paused = timelineOf([...base, { from: "host", at: 9, report: { ok: false, durationMs: 9, paused: { pending: [{ id: 1 }] } } }]);
    expect(paused.marks.at(-1)).toMatchObject({ kind: "end", text: "paused for approval: 1 call pending" });
  });
});

describe("the body's code in a recording and its timeline (issue 29.12)", () => {
  it("a code note holds the body, bounded with what was left out counted, and never half a character", async () => {
    const path = file();
    const recorder = recordTo(path, { timed: true });
    recorder.code('const r = await ears.call("read", { path: "<a>" });\nreturn r;');
    // One character short of the bound, then an emoji across it: the pair is dropped whole.
    const long = `${"x".repeat(MAX_RECORDED_CODE_CHARS - 1)}\u{1F600}tail`;
    recorder.code(long);
    await recorder.close();
    const [short, cut] = await readTranscript(path);
    expect(short).toEqual({ from: "host", at: expect.any(Number), code: 'const r = await ears.call("read", { path: "<a>" });\nreturn r;' });
    expect(cut).toMatchObject({ code: "x".repeat(MAX_RECORDED_CODE_CHARS - 1), droppedChars: long.length - (MAX_RECORDED_CODE_CHARS - 1) });
    // A replay answers from frames only; frames: true leaves the note out.
    expect(recordingOf([short!, ...SESSION]).exchanges).toEqual(recordingOf(SESSION).exchanges);
    expect(await readTranscript(path, { frames: true })).toEqual([]);
  });

  it("a code note from the guest, or with a bad count, is refused by the reader and the writer", async () => {
    for (const [line, reason] of [
      ['{"from":"guest","code":"x"}', "an entry needs"],
      ['{"from":"host","code":"x","droppedChars":-1}', '"droppedChars" must be'],
    ] as const) {
      const error = await readTranscript(file(`${line}\n`)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TranscriptError);
      expect((error as Error).message).toContain(reason);
    }
    expect(() => formatTranscriptEntry({ from: "guest", code: "x" } as never)).toThrow(/code note must be from "host"/);
    expect(() => formatTranscriptEntry({ from: "host", code: "x", droppedChars: 1.5 })).toThrow(/droppedChars/);
  });

  it("the timeline keeps the code and marks it; the page shows it numbered as code.ts, escaped; the text names it", () => {
    const code = 'const a = "</pre><script>alert(1)</script>";\nreturn a;';
    const timeline = timelineOf([{ from: "host", at: 0.2, code }, ...SESSION]);
    expect(timeline.code).toEqual({ text: code, droppedChars: 0 });
    expect(timeline.marks[0]).toEqual({ kind: "session", atMs: 0.2, text: "code: the body, 2 lines" });
    const html = timelineHtml(timeline, "run.ndjson");
    expect(html).toContain("<summary>Code (code.ts)</summary>");
    expect(html).toContain(`1  ${escape('const a = "</pre><script>alert(1)</script>";')}\n2  return a;`);
    expect(html).not.toContain("<script>alert(1)");
    const cut = timelineOf([{ from: "host", code: "x", droppedChars: 7 }]);
    expect(cut.marks[0]?.text).toBe("code: the body, 1 line, 7 more characters not recorded");
    expect(timelineHtml(cut, "run.ndjson")).toContain("7 more characters were not recorded.");
    const out = new PassThrough();
    printTimeline(timeline, out);
    expect(String(out.read())).toContain("[session] code: the body, 2 lines");
    // Without a code note there is no code section.
    expect(timelineHtml(timelineOf(SESSION), "run.ndjson")).not.toContain("Code (code.ts)");
  });

  it("a sandboxed run killed through bubblewrap (exit code 137) is marked as killed; an unconfined exit 137 is not guessed", () => {
    const killed = (sandbox: unknown) =>
      timelineOf([{ from: "host", at: 5, report: { ok: false, durationMs: 5, exit: { code: 137, signal: null }, sandbox } as never }])
        .marks;
    expect(killed({ mechanism: "bubblewrap" })).toEqual([
      { kind: "end", atMs: 5, text: "the guest was killed (SIGKILL, exit code 137 through the sandbox)" },
    ]);
    expect(killed(null)).toEqual([]);
  });
});

describe("the end of a run on its timeline", () => {
  const ran: TranscriptEntry[] = [
    { from: "guest", at: 820, frame: { type: "hello", protocol: 1 } },
    { from: "host", at: 821, frame: { type: "invoke", protocol: 1, allowed: [], input: null } },
    { from: "guest", at: 830, frame: { type: "result", outcome: { status: "success", content: "" } } },
  ];

  it("a kill after the result with nothing failed is a normal end, placed at the report note, after hello", () => {
    // A pooled runner said hello long before the run began: the report's 595 ms count from the run's start.
    for (const exit of [
      { exit: { code: 137, signal: null }, sandbox: { mechanism: "bubblewrap" } },
      { exit: { code: null, signal: "SIGKILL" }, sandbox: null },
    ]) {
      const timeline = timelineOf([...ran, { from: "host", at: 840, report: { ok: true, durationMs: 595, ...exit } as never }]);
      const end = timeline.marks.filter((mark) => mark.kind === "end");
      expect(end).toHaveLength(1);
      expect(end[0]).toMatchObject({ atMs: 840, level: "normal" });
      expect(end[0]!.text).toMatch(
        /^the run ended normally after its result; the host then stopped the guest's process \((SIGKILL|signal)/,
      );
      expect(end[0]!.text).not.toMatch(/killed/);
      expect(timeline.durationMs).toBe(840);
    }
  });

  it("a kill after the result that the report counts as a failure, or a forced stop, is still a kill", () => {
    const limit = timelineOf([
      ...ran,
      {
        from: "host",
        at: 900,
        report: { ok: false, durationMs: 80, failure: { code: "MemoryLimit", message: "over" }, exit: { code: null, signal: "SIGKILL" } },
      },
    ]);
    expect(limit.marks.at(-1)).toEqual({ kind: "end", atMs: 900, text: "MemoryLimit: over; the guest was killed (signal SIGKILL)" });
    const forced = timelineOf([
      ...ran,
      { from: "host", at: 900, report: { ok: true, forcedStop: "SIGKILL", exit: { code: null, signal: "SIGKILL" } } },
    ]);
    expect(forced.marks.at(-1)?.text).toBe("the host had to send SIGKILL; the guest was killed (signal SIGKILL)");
  });

  it("approvals from the report are placed on the recording's clock, the report's end aligned with its note", () => {
    const timeline = timelineOf([
      ...ran,
      {
        from: "host",
        at: 900,
        report: { ok: true, durationMs: 100, approvals: [{ id: 1, name: "send", decision: "approved", atMs: 40, durationMs: 10 }] },
      },
    ]);
    expect(timeline.marks.find((mark) => mark.kind === "approval")?.atMs).toBe(850);
  });
});
