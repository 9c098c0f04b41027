/**
 * Recording and replaying production runs from `@posoco/ears/host`, with no test kit: a program that
 * cannot load fast-check (a resolve hook refuses it) records a runCode run and a runGuest run with
 * `record: recordTo(...)`, `ears timeline` draws the first, and `replayGuestCommand` replays the second.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { recordTo, runGuest } from "../../src/host/index.js";
import { readTranscript } from "../../src/transcripts/transcript.js";
import { EARS } from "../helpers/spawn-ears.js";
import { requireBuild } from "../helpers/spawned-guest.js";

const root = resolve(import.meta.dirname, "../..");
// Inside the repository, so "@posoco/ears/host" resolves to this package's build through its own "exports".
const scratch = mkdtempSync(join(root, ".record-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const NO_FAST_CHECK = `
export async function resolve(specifier, context, next) {
  if (specifier === "fast-check" || specifier.startsWith("fast-check/")) throw new Error("fast-check is not installed here");
  return next(specifier, context);
}
`;

const PROGRAM = `
import { recordTo, readTranscript, replayGuestCommand, runCode, runGuest } from "@posoco/ears/host";

const recorder = recordTo("code.ndjson", { timed: true });
const report = await runCode({ code: 'console.log("working"); return 6 * 7;', record: recorder });
await recorder.close();

const guest = recordTo("guest.ndjson", { timed: true });
const run = await runGuest({
  command: process.execPath,
  args: ["guest.mjs"],
  input: { n: 1 },
  capabilities: { read: () => "file text" },
  record: guest,
});
await guest.close();
const replayed = await replayGuestCommand("guest.ndjson", { command: process.execPath, args: ["guest.mjs"] });
let testKit = "loaded";
try {
  await import("@posoco/ears/testing");
} catch (error) {
  testKit = String(error.message);
}
console.log(JSON.stringify({
  code: report.ok && report.outcome.structured,
  guest: run.ok && run.outcome.structured,
  replay: replayed.ok && replayed.matchedRequests,
  entries: (await readTranscript("code.ndjson")).length > 0,
  testKit,
}));
`;

const GUEST = `
import { serve, stdio } from "@posoco/ears";
await serve({ wire: stdio(), run: async (ears, input) => ({ input, read: (await ears.call("read", { path: "x" })).content }) });
`;

describe("recording production runs with @posoco/ears/host", () => {
  it("records runCode and runGuest without the test kit (fast-check refused); ears timeline draws, replayGuestCommand replays", () => {
    requireBuild();
    const dir = join(scratch, "app");
    mkdirSync(dir);
    writeFileSync(join(dir, "no-fast-check.mjs"), NO_FAST_CHECK);
    writeFileSync(
      join(dir, "register.mjs"),
      'import { register } from "node:module";\nregister("./no-fast-check.mjs", import.meta.url);\n',
    );
    writeFileSync(join(dir, "program.mjs"), PROGRAM);
    writeFileSync(join(dir, "guest.mjs"), GUEST);
    const out = execFileSync(process.execPath, ["--import", "./register.mjs", "program.mjs"], { cwd: dir, encoding: "utf8" });
    const result = JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({ code: 42, guest: { input: { n: 1 }, read: "file text" }, replay: 1, entries: true });
    // The hook does refuse fast-check: the test kit does not load here, and recording did not need it.
    expect(result.testKit).toMatch(/fast-check/);
    const page = execFileSync(process.execPath, [EARS, "timeline", join(dir, "code.ndjson"), "-o", "-"], { encoding: "utf8" });
    expect(page).toContain("code: the body, 1 line");
    expect(page).toContain("working");
    expect(page).toContain("the run ended normally after its result");
  });

  it("writes the body, every frame, the stderr and the report, the caller's onFrame and onStderr still called", async () => {
    const path = join(scratch, "guest.ndjson");
    const recorder = recordTo(path, { timed: true });
    const frames: string[] = [];
    let stderr = "";
    const report = await runGuest({
      command: process.execPath,
      args: [
        "-e",
        'process.stderr.write("oops\\n"); process.stdout.write(\'{"type":"hello","protocol":1}\\n\'); setTimeout(() => {}, 100000)',
      ],
      sandbox: false,
      limits: { runTimeoutMs: 2000 },
      record: recorder,
      onFrame: (direction) => void frames.push(direction),
      onStderr: (chunk) => void (stderr += chunk),
    });
    await recorder.close();
    const entries = await readTranscript(path);
    expect(report.ok).toBe(false);
    expect(frames.slice(0, 2)).toEqual(["guest", "host"]);
    expect(stderr).toContain("oops");
    expect(entries.filter((entry) => "frame" in entry)).toHaveLength(frames.length);
    expect(entries.some((entry) => "stderr" in entry && entry.stderr.includes("oops"))).toBe(true);
    expect(entries.at(-1)).toMatchObject({ from: "host", report: { ok: false, failure: { code: report.failure?.code ?? "" } } });
    expect(readFileSync(path, "utf8").endsWith("\n")).toBe(true);
  });

  it("refuses a record option that is not a recorder, naming the option, before anything starts", () => {
    expect(() => runGuest({ command: process.execPath, record: {} as never })).toThrow(/runGuest: options\.record must be a recorder/);
    expect(() => runGuest({ command: process.execPath, record: { onFrame: () => {}, stderr: () => {}, report: 1 } as never })).toThrow(
      /options\.record/,
    );
  });
});
