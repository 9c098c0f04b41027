/**
 * `ears timeline` from the command line (what it writes, where, and every way it refuses) and
 * `ears run --verbose` (the text timeline after the run). The page in a real browser is
 * timeline-browser.test.ts.
 */
import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliInProcess } from "../helpers/cli-in-process.js";
import { ears } from "../helpers/spawn-ears.js";
import { requireBuild } from "../helpers/spawned-guest.js";

const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "ears-timeline-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const transcript = join(dir, "run.ndjson");

beforeAll(() => {
  writeFileSync(
    transcript,
    [
      '{"from":"guest","at":1,"frame":{"type":"hello","protocol":1}}',
      '{"from":"host","at":2,"frame":{"type":"invoke","protocol":1,"allowed":["read"],"input":null}}',
      '{"from":"guest","at":3,"frame":{"type":"request","id":1,"name":"read","arguments":{"path":"<x>"}}}',
      '{"from":"host","at":9,"frame":{"type":"reply","id":1,"outcome":{"status":"failure","code":"NotFound","content":"no"}}}',
      '{"from":"guest","at":10,"frame":{"type":"result","outcome":{"status":"success","content":"done"}}}',
      "",
    ].join("\n"),
  );
});

describe("ears timeline", () => {
  it("writes run.html next to the transcript by default, private, and says what it holds", async () => {
    const run = await cliInProcess(["timeline", transcript]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(`ears: wrote ${transcript.replace(/\.ndjson$/, ".html")} (1 calls, 1 not successful)\n`);
    const page = transcript.replace(/\.ndjson$/, ".html");
    expect(statSync(page).mode & 0o777).toBe(0o600);
    const html = readFileSync(page, "utf8");
    expect(html).toContain("#1 read");
    expect(html).toContain("failure NotFound");
    expect(html).toContain("{&quot;path&quot;:&quot;&lt;x&gt;&quot;}");
  });

  it("-o - writes the page to stdout", async () => {
    const run = await cliInProcess(["timeline", transcript, "-o", "-"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^<!doctype html>/);
    expect(run.stderr).toBe("");
  });

  it("refuses a missing transcript, a bad line, extra words and a symbolic link as output", async () => {
    expect(await cliInProcess(["timeline"])).toMatchObject({ code: 64, stderr: expect.stringContaining("ears: no transcript") });
    expect(await cliInProcess(["timeline", transcript, "other"])).toMatchObject({
      code: 64,
      stderr: expect.stringContaining('unexpected "other"'),
    });
    const missing = await cliInProcess(["timeline", join(dir, "missing.ndjson")]);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/^ears: cannot read transcript .*missing\.ndjson.*ENOENT/);
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, '{"from":"guest","at":1,"frame":{}}\nnot json\n');
    expect(await cliInProcess(["timeline", bad])).toMatchObject({ code: 64, stderr: expect.stringContaining("line 2: not JSON") });
    const target = join(dir, "elsewhere.txt");
    writeFileSync(target, "keep me\n");
    const link = join(dir, "link.html");
    symlinkSync(target, link);
    const refused = await cliInProcess(["timeline", transcript, "-o", link]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^ears: cannot write .*link\.html: .*ELOOP/);
    expect(readFileSync(target, "utf8")).toBe("keep me\n");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it("ears --help names it, and ears timeline --help explains it", async () => {
    expect((await cliInProcess(["--help"])).stdout).toContain("ears timeline <transcript.ndjson> [-o run.html]");
    const help = await cliInProcess(["timeline", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("-o, --output <file>");
  });
});

describe("ears run --verbose", () => {
  it("ends with a compact timeline: every call with its duration, outcome and failure code, the logs in place", async () => {
    requireBuild();
    const run = await ears(
      [
        "run",
        "--verbose",
        "--allow",
        "read,list,search,fetchPage",
        "--capabilities",
        join(ROOT, "fixtures/timeline/capabilities.mjs"),
        "--",
        "node",
        join(ROOT, "fixtures/timeline/guest.mjs"),
      ],
      { cwd: ROOT },
    );
    expect(run.code, run.stderr).toBe(0);
    const timeline = run.stderr.slice(run.stderr.indexOf("ears: timeline: "));
    expect(timeline).toMatch(/^ears: timeline: [\d.]+ ms, 5 calls \(2 not successful\), 2 logs\n/);
    const rows = timeline.split("\n").slice(1, -1);
    expect(rows.every((row) => row.startsWith("ears: | "))).toBe(true);
    expect(
      rows.filter((row) => / #\d /.test(row)).map((row) => row.replace(/^ears: \|\s+[\d.]+ ms {2}/, "").replace(/ {2}[\d.]+ ms {2}/, "  ")),
    ).toEqual([
      '#1 search {"q":"otel <b>spans</b>"}  success',
      '#2 read {"path":"README.md"}  success',
      '#3 fetchPage {"url":"https://example.invalid/"}  failure NetworkDenied',
      '#4 list {"path":"../"}  failure PathOutsideRoot',
      '#5 search {"q":"more"}  success',
    ]);
    expect(rows.some((row) => row.endsWith("[warn] got success, success, failure"))).toBe(true);
    expect(rows.some((row) => row.endsWith("[stderr] a warning from the guest's own stderr"))).toBe(true);
    expect(rows.at(-2)).toMatch(/ result success$/);
    // Then how the run ended, after the result it ended with.
    expect(rows.at(-1)).toMatch(/ \[end\] the run ended normally after its result; the guest exited \(code 0\)$/);
  });

  it("ears replay --record writes a timed transcript with the guest's stderr and the report, which ears timeline draws", async () => {
    requireBuild();
    const guest = join(ROOT, "fixtures/timeline/guest.mjs");
    const recorded = join(dir, "first.ndjson");
    const replayed = join(dir, "replayed.ndjson");
    const caps = join(ROOT, "fixtures/timeline/capabilities.mjs");
    const first = await ears(
      ["run", "--quiet", "--allow", "read,list,search,fetchPage", "--capabilities", caps, "--record", recorded, "--", "node", guest],
      {
        cwd: ROOT,
      },
    );
    expect(first.code, first.stderr).toBe(0);
    const again = await ears(["replay", recorded, "--quiet", "--record", replayed, "--", "node", guest], { cwd: ROOT });
    expect(again.code, again.stderr).toBe(0);
    const entries = readFileSync(replayed, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.every((entry) => typeof entry.at === "number")).toBe(true);
    expect(entries.filter((entry) => "stderr" in entry).map((entry) => entry.stderr)).toEqual(["a warning from the guest's own stderr\n"]);
    expect(entries.at(-1)).toMatchObject({ from: "host", report: { ok: true } });
    const page = await cliInProcess(["timeline", replayed, "-o", "-"]);
    expect(page.stdout).toContain("failure NetworkDenied");
  });

  it("without --verbose, no timeline", async () => {
    const run = await ears(["run", "--allow", "read", "--", "node", join(ROOT, "fixtures/guests/echo.mjs")], { cwd: ROOT });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toContain("ears: timeline");
  });
});
