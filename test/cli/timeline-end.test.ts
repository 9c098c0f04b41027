/**
 * The end of a real recorded run on its timeline: runCode's runner is SIGKILLed by the host once its result
 * is in (nothing in it has anything to clean up), which is a normal end, not a kill, and the end row comes
 * after everything that led to it, whatever the clocks of the report and the recording.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { timelineOf } from "../../src/transcripts/timeline.js";
import { readTranscript } from "../../src/transcripts/transcript.js";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { ears } from "../helpers/spawn-ears.js";
import { requireBuild } from "../helpers/spawned-guest.js";

const dir = mkdtempSync(join(tmpdir(), "ears-timeline-end-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Records `ears exec --code body` and returns the transcript's timeline and `ears timeline`'s page. */
async function recorded(name: string, body: string, sandbox: string[]) {
  requireBuild();
  const path = join(dir, `${name}.ndjson`);
  const run = await ears(["exec", "--record", path, ...sandbox, "--code", body], { cwd: dir });
  const page = await ears(["timeline", path, "-o", "-"], { cwd: dir });
  expect(page.code, page.stderr).toBe(0);
  return { run, timeline: timelineOf(await readTranscript(path)), html: page.stdout };
}

const modes = [
  ...(bwrapPath === undefined ? [] : [{ name: "sandboxed", flags: [] as string[] }]),
  { name: "unconfined", flags: ["--no-sandbox"] },
];

describe.each(modes)("a recorded ears exec run, $name, on its timeline", ({ name, flags }) => {
  it.each([
    { what: "a success", body: 'console.log("working"); return 1;', code: 0 },
    { what: "a body that throws (a failure outcome, no session failure)", body: 'console.log("working"); throw new Error("no");', code: 1 },
  ])("$what ends normally after its result, after every event, with no kill mark", async ({ body, code }) => {
    const { run, timeline, html } = await recorded(`${name}-${code}`, body, flags);
    expect(run.code, run.stderr).toBe(code);
    expect(timeline.result).toBeDefined();
    const end = timeline.marks.filter((mark) => mark.kind === "end");
    expect(end).toHaveLength(1);
    expect(end[0]!.level).toBe("normal");
    expect(end[0]!.text).toMatch(/^the run ended normally after its result/);
    // Nothing is placed before the events that caused it: the end is the last thing on the time axis.
    const times = [...timeline.marks.map((mark) => mark.atMs), timeline.result!.atMs, ...timeline.calls.map((call) => call.startMs)];
    expect(end[0]!.atMs).toBe(Math.max(...times));
    const hello = timeline.marks.find((mark) => mark.text.startsWith("hello"))!;
    expect(end[0]!.atMs).toBeGreaterThan(hello.atMs);
    // The page says so, in place, and nowhere that the guest was killed.
    expect(html).not.toMatch(/killed/);
    expect(html).toContain('<li class="row mark end normal">');
    expect(html.indexOf("the run ended normally after its result")).toBeGreaterThan(html.indexOf("hello: the guest is ready"));
    expect(html.indexOf("the run ended normally after its result")).toBeGreaterThan(html.indexOf("working"));
  });
});
