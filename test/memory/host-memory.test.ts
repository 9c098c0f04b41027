/**
 * Host memory is bounded by configuration, never by the guest (issues 8 and 23). Each scenario runs a
 * child host (fixtures/hostile/memory-host.mjs, or the ears CLI with its built-in read) with the default
 * limits against an attacking guest (fixtures/hostile/memory-guest.mjs), and checks the host's peak RSS
 * against 512 MiB and that the run ended as it should. Slow (gigabytes through pipes):
 * `npm run test:memory`, not part of `npm test`.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
if (!existsSync(`${root}dist/host/index.js`)) throw new Error("run `npm run build:fast` before these tests");

const LIMIT_KIB = 512 * 1024;
const MiB = 1024 * 1024;

interface Measured {
  maxRssKiB: number;
  guestGone: boolean;
  ok: boolean;
  outcome?: { status: string; content: string };
  failure?: { code: string; message: string };
  calls: number;
  keptCallChars: number;
  logs: { level: number; content: number; cutBytes?: number }[];
  droppedLogs: number;
  droppedLogBytes?: number;
  droppedCalls?: number;
  droppedCallPayloads?: number;
}

/** Runs one scenario in a child host and returns what it measured. */
async function hostScenario(scenario: string): Promise<Measured> {
  const { stdout } = await promisify(execFile)(process.execPath, [`${root}fixtures/hostile/memory-host.mjs`, scenario], {
    cwd: root,
    maxBuffer: 16 * MiB,
  });
  const measured = JSON.parse(stdout) as Measured;
  console.log(`${scenario}: host peak RSS ${(measured.maxRssKiB / 1024).toFixed(0)} MiB`);
  return measured;
}

describe("host peak RSS under 512 MiB with the default limits", () => {
  it("300 sequential calls answered with 16 MiB each: the report keeps the payloads up to its budget", async () => {
    const run = await hostScenario("sequential-reads");
    expect(run.outcome).toEqual({ status: "success", content: "read 300" });
    expect(run.calls).toBe(300);
    expect(run.droppedCallPayloads).toBe(300); // each 16 MiB answer alone is over maxCallPayloadChars
    expect(run.keptCallChars).toBeLessThan(16 * MiB);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("200 requests for 16 MiB answers that the guest leaves unread: no handler starts while too much is unread", async () => {
    const run = await hostScenario("unread-replies");
    // The guest reads again after 3 s and checks that every reply came.
    expect(run.outcome).toEqual({ status: "success", content: "read 200 replies" });
    expect(run.calls).toBe(200);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("30 requests with 60 MiB arguments to a denied name: the arguments are not kept", async () => {
    const run = await hostScenario("denied-arguments");
    expect(run.outcome).toEqual({ status: "success", content: "sent 30" });
    expect(run.calls).toBe(30);
    expect(run.droppedCallPayloads).toBe(30);
    expect(run.keptCallChars).toBeLessThan(16 * MiB);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("20 log frames of 64 MiB: each kept entry is cut to maxLogEntryBytes with a marker, within maxLogBytes", async () => {
    const run = await hostScenario("huge-logs");
    expect(run.outcome).toEqual({ status: "success", content: "logged 20" });
    expect(run.logs.length + run.droppedLogs).toBe(20);
    expect(run.logs.every((log) => log.level + log.content <= MiB && log.cutBytes! > 62 * MiB)).toBe(true);
    expect(run.logs.reduce((sum, log) => sum + log.level + log.content, 0)).toBeLessThanOrEqual(16 * MiB);
    expect(run.droppedLogBytes).toBeGreaterThan(20 * 62 * MiB);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("20 log frames of 64 MiB of two-byte characters (Ω): the same bound when the long lines are not ASCII", async () => {
    const run = await hostScenario("huge-logs-utf8");
    expect(run.outcome).toEqual({ status: "success", content: "logged 20" });
    expect(run.logs.length + run.droppedLogs).toBe(20);
    expect(run.logs.every((log) => log.content <= MiB && log.cutBytes! > 62 * MiB)).toBe(true);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("10 logs with a 60 MiB level: the level counts against maxLogBytes and is cut", async () => {
    const run = await hostScenario("huge-levels");
    expect(run.outcome).toEqual({ status: "success", content: "logged 10" });
    // Each entry alone is over maxLogBytes: all ten are kept, each cut (its level to 1 KiB).
    expect(run.logs).toHaveLength(10);
    expect(run.logs.every((log) => log.level <= 1024 && log.content === 4 && log.cutBytes! >= 60 * MiB - 1024)).toBe(true);
    expect(run.droppedLogBytes).toBeGreaterThanOrEqual(10 * (60 * MiB - 1024));
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("200 requests for 16 MiB answers in one burst, never read: at most maxRunningHandlers answers exist; RunTimeout ends it", async () => {
    const run = await hostScenario("burst-unread");
    expect(run.failure?.code).toBe("RunTimeout");
    expect(run.guestGone).toBe(true);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });

  it("3 million small requests: ids of answered calls are not kept, records stop at maxCallRecords", async () => {
    const run = await hostScenario("many-requests");
    expect(run.outcome).toEqual({ status: "success", content: "sent 3M" });
    expect(run.calls).toBe(100_000);
    expect(run.droppedCalls).toBe(2_900_000);
    expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
  });
});

/** Runs the built ears CLI (with a preload that reports its peak RSS as it exits) and collects its output. */
function earsCli(args: string[]): Promise<{ code: number | null; stdout: string; maxRssKiB: number }> {
  return new Promise((done, fail) => {
    const preload = `${root}fixtures/hostile/max-rss-at-exit.mjs`;
    const child = spawn(process.execPath, ["--import", preload, `${root}dist/cli/main.js`, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", fail);
    child.on("close", (code) => {
      const rss = /\nmaxRssKiB=(\d+)\n/.exec(stderr);
      if (rss === null) fail(new Error(`the CLI did not report its peak RSS; stderr: ${stderr.slice(-2000)}`));
      else done({ code, stdout, maxRssKiB: Number(rss[1]) });
    });
  });
}

describe("the ears CLI's peak RSS under 512 MiB with the default limits", () => {
  /** 16 MiB of text lines: exactly the built-in read's largest file. */
  const lines = (first: string) => {
    const line = `${"0123456789abcdef".repeat(4)}\n`;
    return Buffer.from(first + line.repeat((16 * MiB) / line.length)).subarray(0, 16 * MiB);
  };

  /** The CLI answering 200 reads of big.txt sent in one burst by a guest that never reads; its peak RSS. */
  async function burstReads(file: Buffer, label: string): Promise<void> {
    const files = mkdtempSync(join(tmpdir(), "ears-memory-"));
    try {
      writeFileSync(join(files, "big.txt"), file);
      const guest = ["--", process.execPath, `${root}fixtures/hostile/memory-guest.mjs`, "burst-reads"];
      const run = await earsCli(["run", "--allow", "read", "--root", files, "--timeout", "10", "--no-sandbox", "--json", ...guest]);
      console.log(`burst-reads (${label}): ears CLI peak RSS ${(run.maxRssKiB / 1024).toFixed(0)} MiB`);
      expect(run.code).toBe(2);
      const report = JSON.parse(run.stdout) as { failure?: { code: string }; pid?: number; calls: { status?: string }[] };
      expect(report.failure?.code).toBe("RunTimeout");
      // A read was answered (the file is within the cap); the answers after it wait for the guest to read.
      expect(report.calls.some((call) => call.status === "success")).toBe(true);
      expect(() => process.kill(report.pid!, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
      expect(run.maxRssKiB).toBeLessThan(LIMIT_KIB);
    } finally {
      rmSync(files, { recursive: true, force: true });
    }
  }

  it("200 built-in reads of a 16 MiB file in one burst, never read: the deadline ends the run (exit 2) and the guest is gone", async () => {
    await burstReads(lines(""), "ASCII");
  });

  it("the same with one character beyond Latin-1 in the file: each answer is a two-byte string of twice the size", async () => {
    await burstReads(lines("Ω"), "one Ω");
  });
});
