// `ears run --record <path>`: the transcript holds everything the guest read, so it is private, it is
// never written through a symlink or into a hard-linked file, and a slow sink slows the guest instead
// of growing the host's memory.
import { execFileSync, spawn } from "node:child_process";
import { linkSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EARS, ears, type EarsRun } from "../helpers/spawn-ears.js";

const dir = mkdtempSync(join(tmpdir(), "ears-record-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ECHO = ["node", "fixtures/guests/echo.mjs"];
const record = (path: string, guest = ECHO) => ears(["run", "--allow", "read", "--record", path, "--", ...guest]);

describe("ears run --record", () => {
  it("refuses a symlink at the path (exit 64) and leaves its target untouched", async () => {
    const target = join(dir, "precious.txt");
    writeFileSync(target, "keep me\n");
    const link = join(dir, "link.ndjson");
    symlinkSync(target, link);
    const run = await record(link);
    expect(run.code).toBe(64);
    expect(run.stderr).toMatch(
      /^ears: --record: cannot create transcript .*link\.ndjson: it is a symbolic link, which ears does not follow/,
    );
    expect(readFileSync(target, "utf8")).toBe("keep me\n");
    // A dangling link is refused too: following it would create a file wherever it points.
    const dangling = join(dir, "dangling.ndjson");
    symlinkSync(join(dir, "created-through-link"), dangling);
    expect((await record(dangling)).code).toBe(64);
    expect(() => statSync(join(dir, "created-through-link"))).toThrow(/ENOENT/);
  });

  it("creates the transcript with mode 0600", async () => {
    const path = join(dir, "new.ndjson");
    const run = await record(path);
    expect(run.code).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toContain('"type":"hello"');
  });

  it("an existing world-readable file is made 0600, then replaced", async () => {
    const path = join(dir, "old.ndjson");
    writeFileSync(path, "old contents\n", { mode: 0o644 });
    const run = await record(path);
    expect(run.code).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).not.toContain("old contents");
  });

  it("refuses a file with other hard links (exit 64) and leaves it untouched", async () => {
    const original = join(dir, "original.txt");
    writeFileSync(original, "shared\n", { mode: 0o644 });
    const alias = join(dir, "alias.ndjson");
    linkSync(original, alias);
    const run = await record(alias);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain("it has 2 hard links");
    expect(readFileSync(original, "utf8")).toBe("shared\n");
    expect(statSync(original).mode & 0o777).toBe(0o644);
  });

  it("refuses a FIFO nobody reads, at once, instead of blocking", async () => {
    const fifo = join(dir, "unread.fifo");
    execFileSync("mkfifo", [fifo]);
    const run = await record(fifo);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain("it is a FIFO that no process is reading");
  });

  it.runIf(process.platform === "linux")(
    "a slow sink slows the guest: the host's memory stays bounded while a guest floods 190 MiB of logs",
    async () => {
      const fifo = join(dir, "slow.fifo");
      execFileSync("mkfifo", [fifo]);
      // The reader opens the FIFO at once, then reads nothing for 8 s, then drains it and counts lines.
      const reader = spawn(
        process.execPath,
        [
          "-e",
          `
        const fs = require("node:fs");
        const fd = fs.openSync(${JSON.stringify(fifo)}, "r");
        setTimeout(() => {
          const buffer = Buffer.alloc(1 << 20); let lines = 0, bytes = 0, n;
          while ((n = fs.readSync(fd, buffer)) > 0) { bytes += n; for (let i = 0; i < n; i++) if (buffer[i] === 10) lines++; }
          process.stdout.write(JSON.stringify({ lines, bytes }));
        }, 8000);`,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      let counted = "";
      reader.stdout.setEncoding("utf8").on("data", (chunk: string) => (counted += chunk));
      const readerDone = new Promise((resolve) => reader.on("close", resolve));
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the reader open its end

      const cli = spawn(process.execPath, [EARS, "run", "--quiet", "--record", fifo, "--", "node", "fixtures/hostile/guest.mjs", "flood"], {
        stdio: ["ignore", "pipe", "pipe"],
        // A heap far smaller than the flood: the run can only finish if the host holds a bounded part of it.
        env: { ...process.env, NODE_OPTIONS: "--max-old-space-size=96" },
      });
      let peakKiB = 0;
      const poll = setInterval(() => {
        try {
          const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${cli.pid}/status`, "utf8"));
          if (hwm) peakKiB = Math.max(peakKiB, Number(hwm[1]));
        } catch {
          // the process has just exited
        }
      }, 20);
      const result = await new Promise<EarsRun>((resolve) => {
        let stdout = "";
        let stderr = "";
        cli.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
        cli.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
        cli.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
      });
      clearInterval(poll);
      await readerDone;
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout).toBe("flooded\n");
      // hello, invoke, 12,000 logs, the result and the report note: nothing lost while the host waited.
      expect(JSON.parse(counted)).toMatchObject({ lines: 12_004 });
      // Without back-pressure the host queued the flood for the stalled reader (measured: 337 MiB peak
      // RSS; the queue is Buffers, outside the capped heap). With it, 130-140 MiB: Node itself, the logs
      // the report keeps (16 MiB by default) and the frames in flight.
      expect(peakKiB).toBeGreaterThan(0);
      // Node 24 itself starts about 60 MiB larger than Node 20 (measured here: 247 MiB peak with back-pressure).
      const bound = Number(process.versions.node.split(".")[0]) >= 24 ? 288 : 224;
      expect(peakKiB / 1024).toBeLessThan(bound);
    },
    90_000,
  );
});

describe("ears exec --record holds the body (issue 29.12)", () => {
  const body = "const n = 20 + 1;\nthrow new Error(`at line 2: ${n}`);";

  it("writes the code as the first note, the timeline page shows it, and --verbose marks it", async () => {
    const path = join(dir, "exec-code.ndjson");
    const run = await ears(["exec", "--record", path, "--verbose", "--code", body]);
    expect(run.code, run.stderr).toBe(1);
    const [first] = readFileSync(path, "utf8").split("\n");
    expect(JSON.parse(first!)).toEqual({ from: "host", at: expect.any(Number), code: body });
    expect(run.stderr).toMatch(/\[session\] code: the body, 2 lines/);
    const page = join(dir, "exec-code.html");
    const timeline = await ears(["timeline", path, "-o", page]);
    expect(timeline.code, timeline.stderr).toBe(0);
    expect(readFileSync(page, "utf8")).toContain("2  throw new Error(`at line 2: ${n}`);");
  });

  it("--no-record-code leaves the body out of both, and the run is recorded as before", async () => {
    const path = join(dir, "exec-no-code.ndjson");
    const run = await ears(["exec", "--record", path, "--verbose", "--no-record-code", "--code", body]);
    expect(run.code, run.stderr).toBe(1);
    const text = readFileSync(path, "utf8");
    const entries = text
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.filter((entry) => "code" in entry)).toEqual([]);
    expect(text).not.toContain("20 + 1");
    expect(text).toContain('"type":"hello"');
    expect(run.stderr).not.toContain("code: the body");
  });
});
