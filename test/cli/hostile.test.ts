// The CLI against hostile guests (fixtures/hostile/guest.mjs): values the decoder refuses never reach a
// handler or an output path, no output path crashes, and guest text cannot drive the terminal or pass
// for one of ears's own notes. Each test spawns the real CLI and a real guest process.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ears } from "../helpers/spawn-ears.js";

const GUEST = "fixtures/hostile/guest.mjs";
const CAPABILITIES = "fixtures/hostile/capabilities.mjs";
const run = (attack: string, ...options: string[]) =>
  ears(["run", "--allow", "probe", "--capabilities", CAPABILITIES, ...options, "--", "node", GUEST, attack]);

/** ESC anywhere but at the start of an SGR, or any C0/C1 control but newline and tab. */
const TERMINAL_CONTROL = /\x1b(?!\[[0-9;:]*m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]/;

describe("ears run against hostile guests", () => {
  it.each([
    ["a result nested 100,000 levels deep", "deep-result", /nested more than 512 levels/],
    ["a result holding 1e400", "overflow-result", /beyond the range of a double/],
    ["a request nested 100,000 levels deep", "deep-request", /nested more than 512 levels/],
    ["a request holding a 400-digit number", "overflow-request", /beyond the range of a double/],
  ])("%s: a protocol violation, reported in human output and as a --json report; no handler sees it", async (_name, attack, reason) => {
    const human = await run(attack);
    expect(human.stderr).toMatch(new RegExp(`ears: the session failed: ProtocolViolation: .*${reason.source}`));
    expect(human.stderr).not.toMatch(/Maximum call stack|RangeError|internal error|probe handler called/);
    expect(human.code).toBe(2);

    const json = await run(attack, "--json");
    expect(json.code).toBe(2);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      outcome?: unknown;
      failure?: { code: string; message: string };
      calls: unknown[];
    };
    expect(report.ok).toBe(false);
    expect(report.outcome).toBeUndefined();
    expect(report.failure?.code).toBe("ProtocolViolation");
    expect(report.failure?.message).toMatch(reason);
    expect(report.calls).toEqual([]);
    expect(json.stderr).not.toMatch(/probe handler called/);
  });

  it("a 20 MiB log level: shown cut and escaped, the run succeeds, no RangeError", async () => {
    const human = await run("huge-level");
    expect(human.code).toBe(0);
    expect(human.stderr).toMatch(/^\[L{100}… \(20971520 characters\)\] a log with a 20 MiB level\n(ears: cpu [^\n]* threads?\n)?$/);
    expect(human.stdout).toBe("done\n");
    const json = await run("huge-level", "--json");
    expect(json.code).toBe(0);
    // The report keeps a log entry within limits.maxLogEntryBytes: the level is cut with a marker, and the
    // entry says how much was cut (onLog, which printed the line above, saw it whole).
    const [entry] = (JSON.parse(json.stdout) as { logs: { level: string; content: string; cutBytes?: number }[] }).logs;
    expect(entry!.level).toMatch(/^L{900,} …\[cut 20971520 bytes to \d+\]$/);
    expect(entry!.content).toBe("a log with a 20 MiB level");
    expect(entry!.cutBytes).toBeGreaterThan(20 * 1024 * 1024 - 1024 * 1024);
  });

  it("terminal control sequences from the guest are shown escaped, and no guest line can pass for an ears: note", async () => {
    const human = await run("terminal");
    expect(human.code).toBe(1);
    expect(human.stdout).not.toMatch(TERMINAL_CONTROL);
    expect(human.stderr).not.toMatch(TERMINAL_CONTROL);
    expect(human.stdout).toContain("\\x1b]52;c;cm0gLXJmIH4K\\x07"); // visible, not acted on
    expect(human.stdout).toContain("\x1b[31mred is fine\x1b[0m"); // colours pass
    expect(human.stdout).toContain("\\x65ars: the session failed: fake note");
    expect(human.stdout).toContain('"csi": "\\u009b2J"'); // JSON.stringify leaves C1 raw; shown as a \u escape
    // ears's own notes are the only stderr lines that start with "ears:"; the guest's lines are prefixed.
    const notes = human.stderr.split("\n").filter((line) => line.startsWith("ears:") && !line.startsWith("ears: cpu "));
    expect(notes).toEqual(["ears: the guest's result is a failure (code Bad\\x1b[2J\\x0aears: fake)"]);
    expect(human.stderr).toContain("[stderr] \\x1b]52;c;");
    expect(human.stderr).toContain("[stderr] ears: the session failed: fake note");
    expect(human.stderr).toContain("[warn\\x1b]0;title\\x07\\x0aears: fake] \\x1b]52;c;");
    expect(human.stderr).toContain("\n  ears: the session failed: fake note");
  });

  it("a log arriving while a guest stderr line is open ends that line, so the guest's next chunk is still prefixed", async () => {
    const human = await run("interleave");
    expect(human.code).toBe(0);
    // The note of what the run cost, where it was measured, comes last.
    expect(human.stderr.replace(/^ears: cpu [^\n]* threads?\n/m, "")).toBe(
      "[stderr] partial line\n[info] a log between\n[stderr] ears: the session failed: fake\n",
    );
  });

  it("an ears: note that quotes guest text (the sdk name in hello) shows it escaped, on one line", async () => {
    const human = await run("hello-sdk");
    expect(human.code).toBe(2);
    expect(human.stderr).not.toMatch(TERMINAL_CONTROL);
    const notes = human.stderr.split("\n").filter((line) => line.startsWith("ears:") && !line.startsWith("ears: cpu "));
    expect(notes[0]).toMatch(
      /^ears: the session failed: ProtocolMismatch: the guest \(evil\\x1b\]52;c;cm0gLXJmIH4K\\x07\\x0aears: the guest matched the recording\) speaks protocol 2/,
    );
    expect(notes.every((line) => !line.startsWith("ears: the guest matched"))).toBe(true);
  });

  it("--json output is unchanged: JSON-escaped text, the exact strings the guest sent", async () => {
    const json = await run("terminal", "--json");
    expect(json.code).toBe(1);
    expect(json.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f]/);
    const report = JSON.parse(json.stdout) as { outcome: { code: string; content: string }; logs: { level: string; content: string }[] };
    expect(report.outcome.code).toBe("Bad\x1b[2J\nears: fake");
    expect(report.logs[0]!.level).toBe("warn\x1b]0;title\x07\nears: fake");
    expect(report.outcome.content).toContain("\x1b]52;c;cm0gLXJmIH4K\x07");
    expect(json.stdout).not.toMatch(/[\x7f-\x9f]/); // C1 and DEL as \u escapes: the same JSON value
    expect((report.outcome as unknown as { structured: unknown }).structured).toEqual({ csi: "\x9b2J", del: "\x7f" });
  });
});

describe("ears replay against a hostile guest", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-hostile-replay-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const transcript = join(dir, "probe.ndjson");
  writeFileSync(
    transcript,
    [
      { from: "guest", frame: { type: "hello", protocol: 1 } },
      { from: "host", frame: { type: "invoke", protocol: 1, allowed: ["probe"], input: null } },
      { from: "guest", frame: { type: "request", id: 1, name: "probe", arguments: { a: [1] } } },
      { from: "host", frame: { type: "reply", id: 1, outcome: { status: "success", content: "probed" } } },
      { from: "guest", frame: { type: "result", outcome: { status: "success", content: "done" } } },
    ]
      .map((entry) => `${JSON.stringify(entry)}\n`)
      .join(""),
  );

  it.each(["", "--json"])("a request nested 100,000 levels deep is a protocol violation, never compared or printed (%s)", async (json) => {
    const run = await ears(["replay", transcript, ...(json ? [json] : []), "--", "node", GUEST, "deep-request"]);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toMatch(/Maximum call stack|RangeError|internal error/);
    if (json)
      expect((JSON.parse(run.stdout) as { report: { failure: { message: string } } }).report.failure.message).toMatch(
        /nested more than 512 levels/,
      );
    else expect(run.stderr).toMatch(/ears: the session failed: ProtocolViolation: .*nested more than 512 levels/);
  });
});
