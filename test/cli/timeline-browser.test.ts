/**
 * `ears timeline` in a real browser: headless Chromium (Debian's chromium package, which .ci/run
 * installs) driven by playwright-core opens the page from a real recorded run with no page error and no
 * network request, shows every call and every failure code, and its search box filters the rows. The
 * screenshot goes to .timeline-screenshots/ (gitignored); EARS_DOCS_SCREENSHOT=1 writes docs/timeline.png.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { readTranscript } from "../../src/transcripts/transcript.js";
import { validateFrame } from "../../src/protocol/frames.js";
import { ears } from "../helpers/spawn-ears.js";
import { requireBuild } from "../helpers/spawned-guest.js";

const ROOT = resolve(import.meta.dirname, "../..");
const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (path): path is string => path !== undefined && existsSync(path),
);
const SCREENSHOTS = process.env.EARS_DOCS_SCREENSHOT === "1" ? join(ROOT, "docs") : join(ROOT, ".timeline-screenshots");

describe.runIf(process.platform === "linux")("ears timeline in headless Chromium", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-timeline-"));
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("opens offline with no page error and no request, shows every call and failure code, and searches", async () => {
    requireBuild();
    if (CHROMIUM === undefined) throw new Error("no Chromium: apt-get install chromium (.ci/run installs it), or set CHROMIUM_PATH");
    const transcript = join(dir, "run.ndjson");
    const run = await ears(
      [
        "run",
        "--allow",
        "read,list,search,fetchPage",
        "--capabilities",
        join(ROOT, "fixtures/timeline/capabilities.mjs"),
        "--record",
        transcript,
        "--quiet",
        "--",
        "node",
        join(ROOT, "fixtures/timeline/guest.mjs"),
      ],
      { cwd: ROOT },
    );
    expect(run.code, run.stderr).toBe(0);
    const page = join(dir, "run.html");
    const made = await ears(["timeline", transcript, "-o", page], { cwd: ROOT });
    expect(made.code, made.stderr).toBe(0);

    // What the page must show: every request and, for each failure reply, its code.
    const frames = (await readTranscript(transcript)).flatMap((entry) => {
      const frame = "frame" in entry ? validateFrame(entry.frame) : undefined;
      return frame === undefined || typeof frame === "string" ? [] : [frame];
    });
    const requests = frames.flatMap((frame) => (frame.type === "request" ? [frame] : []));
    const failureCodes = frames.flatMap((frame) =>
      frame.type === "reply" && frame.outcome.status === "failure" ? [frame.outcome.code] : [],
    );
    expect(requests).toHaveLength(5);
    expect(failureCodes.sort()).toEqual(["NetworkDenied", "PathOutsideRoot"]);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    const tab = await browser.newPage({ viewport: { width: 1280, height: 640 } });
    const problems: string[] = [];
    const fetched: string[] = [];
    tab.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    tab.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(`console ${message.type()}: ${message.text()}`);
    });
    tab.on("request", (request) => fetched.push(request.url()));
    const url = pathToFileURL(page).href;
    await tab.goto(url, { waitUntil: "load" });

    const text = await tab.locator("body").innerText();
    for (const request of requests) expect(text).toContain(`#${request.id} ${request.name}`);
    for (const code of failureCodes) expect(text).toContain(`failure ${code}`);
    expect(text).toContain("[stderr]");
    // The usage, when this machine measured it (a cgroup), as the CLI's usage line says it.
    const note = (await readTranscript(transcript)).at(-1) as { report?: { usage?: { cpuMs?: number } } };
    if (note.report?.usage?.cpuMs !== undefined) expect(text).toMatch(/usage: cpu \d+ ms/);
    expect(text).toContain("[warn]");
    expect(text).toContain("results for otel <b>spans</b>"); // guest text shown as text, not markup
    expect(await tab.locator("b").count()).toBe(0);
    expect(await tab.locator("#rows > li.call").count()).toBe(requests.length);

    await tab.locator("#search").fill("NetworkDenied");
    expect(await tab.locator("#rows > li.call:visible").count()).toBe(1);
    expect(await tab.locator("#shown").innerText()).toMatch(/^1 of \d+ rows$/);
    await tab.locator("#search").fill("");
    expect(await tab.locator("#rows > li:visible").count()).toBe(await tab.locator("#rows > li").count());

    mkdirSync(SCREENSHOTS, { recursive: true });
    await tab.screenshot({ path: join(SCREENSHOTS, "timeline.png"), fullPage: true });
    expect(problems).toEqual([]);
    expect(fetched.filter((requested) => requested !== url)).toEqual([]);
  });
});
