import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReport } from "../../src/host/index.js";
import { readTranscript } from "../../src/transcripts/transcript.js";
import { ears, isRunning } from "../helpers/spawn-ears.js";

const SCRIPT = resolve("fixtures/cli/script.mjs");
const CAPABILITIES = resolve("fixtures/cli/capabilities.mjs");
const version = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ears-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const calls = (...list: [string, unknown?][]) => JSON.stringify({ calls: list.map(([name, args]) => ({ name, arguments: args ?? null })) });
const reportOf = (stdout: string) => JSON.parse(stdout) as RunReport;
/** Runs the CLI and sends it SIGINT (Ctrl-C) once its stderr contains `marker`; `interrupted` says whether it did. */
async function interruptOn(marker: string, args: string[]) {
  let interrupted = false;
  const run = await ears(args, {
    onStderr: (soFar, child) => {
      if (!interrupted && soFar.includes(marker)) {
        interrupted = true;
        child.kill("SIGINT");
      }
    },
  });
  return { ...run, interrupted };
}
/** How many whole lines of `text` are exactly `line`. */
const linesEqual = (text: string, line: string) => text.split("\n").filter((l) => l === line).length;

describe("ears help and version", () => {
  it("--help describes both commands, the exit statuses and examples", async () => {
    const run = await ears(["--help"]);
    expect(run.code).toBe(0);
    for (const text of [
      "ears run [options] -- <command>",
      "ears replay <transcript.ndjson>",
      "--version",
      "Exit status:",
      "64",
      "Examples:",
    ]) {
      expect(run.stdout).toContain(text);
    }
  });

  it.each([
    [
      "run",
      [
        "--allow",
        "--input",
        "--capabilities",
        "--root",
        "--record",
        "--timeout",
        "--call-timeout",
        "--json",
        "--quiet",
        "--help",
        "PathOutsideRoot",
        "read",
        "list",
        "Exit status:",
      ],
    ],
    ["replay", ["--record", "--timeout", "--call-timeout", "--json", "--quiet", "--help", "Exit status:", "diverge"]],
  ])("ears %s --help lists every option", async (command, texts) => {
    const run = await ears([command, "--help"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    for (const text of texts) expect(run.stdout).toContain(text);
  });

  it("--version prints the package version", async () => {
    const run = await ears(["--version"]);
    expect(run).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it("an unknown option is a usage error (64) with a hint", async () => {
    const run = await ears(["run", "--alow", "read", "--", "node", SCRIPT]);
    expect(run.code).toBe(64);
    expect(run.stderr).toBe("ears: unknown option --alow (did you mean --allow?); see ears run --help\n");
    expect(run.stdout).toBe("");
  });
});

describe("ears run", () => {
  it("runs the demo as npm run demo does: logs stream to stderr, the result goes to stdout", async () => {
    const run = await ears(["run", "--allow", "read,list", "--", "node", "fixtures/guests/demo.mjs"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^README\.md: "@posoco\/ears", \d+ lines, \d+ words, \d+ headings\n\{\n {2}"title": "@posoco\/ears",/);
    expect(run.stderr).toContain("[info] listing the root\n");
    expect(run.stderr).toContain("[info] reading README.md\n");
    expect(run.stderr).toMatch(/\[debug\] summarised \d+ lines\n/);
  });

  it("exits 1 when the guest's result is a failure, and prints it", async () => {
    const run = await ears(["run", "--input", '{"fail":"Nope"}', "--", "node", SCRIPT]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('failing as asked\n{\n  "outcomes": []\n}\n');
    expect(run.stderr).toContain("ears: the guest's result is a failure (code Nope)");
  });

  it.each([
    ["a line that is not a frame", ["node", "-e", "console.log('hello there')"], /ProtocolViolation: .*"hello there"/],
    [
      "a crash",
      ["node", "-e", "process.stderr.write('dying\\n'); process.exit(3)"],
      // Last, the note of what the run cost (where it was measured).
      /^\[stderr\] dying\n[\s\S]*GuestCrashed: [\s\S]*exited with code 3\n(ears: cpu [^\n]* threads?\n)?$/,
    ],
    ["a command that does not exist", ["./no-such-guest"], /SpawnFailed: could not start "\.\/no-such-guest"/],
  ])("exits 2 on %s", async (_name, command, message) => {
    const run = await ears(["run", "--", ...command]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe("");
  });

  it("streams the guest's stderr live, and does not repeat it after a broken run", async () => {
    // The guest writes to stderr, then hangs: the line can only be seen if it is streamed while the guest runs.
    const run = await interruptOn("guest diagnostic é\n", [
      "run",
      "--timeout",
      "20",
      "--input",
      '{"hang":true}',
      "--",
      "node",
      SCRIPT,
      "--stderr",
      "guest diagnostic é",
    ]);
    expect(run.interrupted).toBe(true);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("ears: the session failed: Aborted");
    expect(linesEqual(run.stderr, "[stderr] guest diagnostic é")).toBe(1);
    expect(run.stderr).not.toContain("ears: the guest's stderr");
  });

  it("shows the guest's stderr exactly once after a successful run", async () => {
    const run = await ears(["run", "--", "node", SCRIPT, "--stderr", "guest diagnostic"]);
    expect(run.code).toBe(0);
    expect(linesEqual(run.stderr, "[stderr] guest diagnostic")).toBe(1);
    expect(run.stderr).not.toContain("ears: the guest's stderr");
  });

  it("with --quiet, shows the guest's stderr only as the tail after a broken run, once", async () => {
    const crash = await ears(["run", "--quiet", "--", "node", "-e", "process.stderr.write('dying\\n'); process.exit(3)"]);
    expect(crash.code).toBe(2);
    expect(crash.stderr).toMatch(/GuestCrashed: [\s\S]*\nears: the guest's stderr:\n\[stderr\] dying\n$/);
    expect(linesEqual(crash.stderr, "[stderr] dying")).toBe(1);
    const success = await ears(["run", "--quiet", "--", "node", SCRIPT, "--stderr", "guest diagnostic"]);
    expect(success.code).toBe(0);
    expect(success.stderr).toBe("");
  });

  it("stops a guest past --timeout (exit 2) and leaves no process behind", async () => {
    const run = await ears(["run", "--timeout", "3", "--json", "--input", '{"hang":true}', "--", "node", SCRIPT]);
    expect(run.code).toBe(2);
    const report = reportOf(run.stdout);
    expect(report.failure?.code).toBe("RunTimeout");
    // Its log, when it came before the deadline (on a loaded CPU, Node may not have started by then).
    expect(report.logs.filter((log: { content: string }) => log.content !== "waiting forever")).toEqual([]);
    expect(isRunning(report.pid!)).toBe(false);
  });

  it("stops the guest on Ctrl-C (SIGINT) and exits 2", async () => {
    const run = await interruptOn("waiting forever", ["run", "--json", "--input", '{"hang":true}', "--", "node", SCRIPT]);
    expect(run.interrupted).toBe(true);
    expect(run.code).toBe(2);
    const report = reportOf(run.stdout);
    expect(report.failure?.code).toBe("Aborted");
    expect(report.failure?.message).toContain("SIGINT");
    expect(isRunning(report.pid!)).toBe(false);
  });

  it("reads --input from a file with @ (a byte order mark is allowed)", async () => {
    const path = join(dir, "input.json");
    writeFileSync(path, '\uFEFF{"calls": [], "fail": "FromFile"}');
    const run = await ears(["run", "--input", `@${path}`, "--quiet", "--", "node", SCRIPT]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain("failing as asked");
    expect(run.stderr).toBe("");
  });

  it.each([
    [["--input", "{calls: []}"], /^ears: --input is not valid JSON \(.+\); pass JSON text such as --input '\{"n":1\}'/],
    [["--input", "@missing.json"], /^ears: cannot read --input file missing\.json: ENOENT/],
    [["--input", "[1e999]"], /--input cannot be sent unchanged: input\[0\] is Infinity/],
  ])("a bad --input %j is a usage error", async (options, message) => {
    const run = await ears(["run", ...options, "--", "node", SCRIPT], { cwd: dir });
    expect(run.code).toBe(64);
    expect(run.stderr).toMatch(message);
  });

  it("--json prints the whole report; --quiet keeps stderr clean", async () => {
    const run = await ears(["run", "--json", "--quiet", "--allow", "list", "--input", calls(["list", null]), "--", "node", SCRIPT], {
      cwd: dir,
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    const report = reportOf(run.stdout);
    expect(report).toMatchObject({ ok: true, hello: { protocol: 1 }, exit: { code: 0, signal: null } });
    expect(report.calls).toMatchObject([{ id: 1, name: "list", arguments: null, outcome: { status: "success" } }]);
    expect(report.logs).toMatchObject([{ level: "info", content: "list -> success" }]);
  });

  it("denies names outside --allow (none by default)", async () => {
    const run = await ears(["run", "--json", "--input", calls(["read", { path: "x" }]), "--", "node", SCRIPT]);
    expect(run.code).toBe(0);
    const outcomes = (reportOf(run.stdout).outcome?.structured as { outcomes: unknown[] }).outcomes;
    expect(outcomes).toMatchObject([{ status: "failure", code: "CapabilityDenied" }]);
  });

  it("--capabilities loads handlers from a module, over the built-ins", async () => {
    const run = await ears([
      "run",
      "--capabilities",
      CAPABILITIES,
      "--allow",
      "greet,math.add,read,broken,slow",
      "--call-timeout",
      "0.2",
      "--json",
      "--input",
      calls(["greet", { name: "Ada" }], ["math.add", { a: 2, b: 3 }], ["read", { path: "x" }], ["broken"], ["slow"]),
      "--",
      "node",
      SCRIPT,
    ]);
    expect(run.code).toBe(0);
    const outcomes = (reportOf(run.stdout).outcome?.structured as { outcomes: unknown[] }).outcomes;
    expect(outcomes).toEqual([
      { status: "success", content: "hello Ada" },
      { status: "success", content: "5", structured: { sum: 5 } },
      { status: "success", content: "read from the module: x (call 3)" },
      { status: "failure", code: "CapabilityFailed", content: "this handler always throws" },
      expect.objectContaining({ status: "failure", code: "CallTimedOut" }),
    ]);
  });

  it.each([
    [
      "an --allow name with no handler",
      ["--allow", "read,wrte"],
      /--allow names "wrte", but no such capability exists \(available: read, list\)/,
    ],
    ["a module that does not load", ["--capabilities", "./nope.mjs"], /cannot load --capabilities module \.\/nope\.mjs: .*nope\.mjs/],
    [
      "a module exporting a non-function",
      ["--capabilities", "./bad.mjs"],
      /--capabilities module \.\/bad\.mjs: export "limit" is number, not a handler function/,
    ],
    ["a missing --root", ["--root", "nowhere"], /--root: the root .*nowhere cannot be used: ENOENT/],
    ["an unwritable --record", ["--record", "no/such/dir/t.ndjson"], /--record: cannot create transcript .*ENOENT/],
    ["a bad --timeout", ["--timeout", "soon"], /--timeout takes a positive number of seconds/],
    ["no command after --", [], /no guest command; write it after --/],
  ])("%s is a usage error", async (_name, options, message) => {
    writeFileSync(join(dir, "bad.mjs"), "export const limit = 3;\n");
    const command = options.length === 0 ? ["--"] : ["--", "node", SCRIPT];
    const run = await ears(["run", ...options, ...command], { cwd: dir });
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(64);
  });

  it("wants the guest command after --", async () => {
    const run = await ears(["run", "node", SCRIPT]);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain('unexpected "node" before --; write the guest command after --, e.g. ears run -- node guest.mjs');
  });
});

describe("built-in read and list", () => {
  let root: string;
  beforeAll(() => {
    root = join(dir, "root");
    const outside = join(dir, "outside");
    mkdirSync(join(root, "sub"), { recursive: true });
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(root, "notes.txt"), "hello notes\n");
    writeFileSync(join(root, "sub", "inner.txt"), "inner");
    writeFileSync(join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    writeFileSync(join(outside, "secret.txt"), "secret");
    symlinkSync(join(root, "notes.txt"), join(root, "link-inside"));
    symlinkSync(join(outside, "secret.txt"), join(root, "link-out"));
    symlinkSync(outside, join(root, "dir-out"));
  });

  it("answers inside the root and refuses every way out", async () => {
    const secret = join(dir, "outside", "secret.txt");
    const run = await ears([
      "run",
      "--root",
      root,
      "--allow",
      "read,list",
      "--json",
      "--input",
      calls(
        ["read", { path: "notes.txt" }],
        ["read", { path: "sub/../sub/inner.txt" }],
        ["read", { path: "link-inside" }],
        ["list", null],
        ["list", { path: "sub" }],
        ["read", { path: "../outside/secret.txt" }],
        ["read", { path: secret }],
        ["read", { path: "link-out" }],
        ["read", { path: "dir-out/secret.txt" }],
        ["list", { path: "dir-out" }],
        ["list", { path: ".." }],
        ["read", { path: "missing.txt" }],
        ["read", { path: "sub" }],
        ["list", { path: "notes.txt" }],
        ["read", { path: "latin1.txt" }],
        ["read", {}],
        ["read", "notes.txt"],
      ),
      "--",
      "node",
      SCRIPT,
    ]);
    expect(run.code).toBe(0);
    const outcomes = (
      reportOf(run.stdout).outcome?.structured as { outcomes: { status: string; code?: string; content: string; structured?: unknown }[] }
    ).outcomes;
    expect(outcomes.slice(0, 3).map((o) => o.content)).toEqual(["hello notes\n", "inner", "hello notes\n"]);
    expect(outcomes[3]).toEqual({
      status: "success",
      content: "dir-out\nlatin1.txt\nlink-inside\nlink-out\nnotes.txt\nsub/",
      structured: [
        { name: "dir-out", type: "symlink" },
        { name: "latin1.txt", type: "file" },
        { name: "link-inside", type: "symlink" },
        { name: "link-out", type: "symlink" },
        { name: "notes.txt", type: "file" },
        { name: "sub", type: "directory" },
      ],
    });
    expect(outcomes[4]).toMatchObject({ status: "success", content: "inner.txt" });
    expect(outcomes.slice(5, 11).map((o) => o.code)).toEqual(Array(6).fill("PathOutsideRoot"));
    expect(outcomes[5]!.content).toContain("climbs out of the root");
    expect(outcomes[6]!.content).toContain("is an absolute path");
    expect(outcomes[7]!.content).toContain("through a symbolic link");
    expect(outcomes.slice(11).map((o) => o.code)).toEqual([
      "NotFound",
      "NotAFile",
      "NotADirectory",
      "NotUtf8",
      "InvalidArguments",
      "InvalidArguments",
    ]);
    expect(JSON.stringify(outcomes)).not.toContain('secret"');
  });
});

describe("ears run --record, then ears replay", () => {
  let transcript: string;
  const recorded = calls(["list", null], ["read", { path: "README.md" }]);
  beforeAll(async () => {
    transcript = join(dir, "run.ndjson");
    const run = await ears(["run", "--allow", "read,list", "--record", transcript, "--input", recorded, "--quiet", "--", "node", SCRIPT]);
    expect(run.code).toBe(0);
  });

  it.runIf(process.platform === "linux")("exits 2 when the transcript cannot be written, even though the guest succeeded", async () => {
    const run = await ears(["run", "--record", "/dev/full", "--quiet", "--", "node", SCRIPT]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^ears: writing transcript \/dev\/full failed: .*ENOSPC/);
    expect(run.stdout).toBe('{\n  "outcomes": []\n}\n');
  });

  it("records every frame both ways, timed, and closes with the report", async () => {
    const entries = await readTranscript(transcript);
    expect(entries.every((entry) => typeof entry.at === "number")).toBe(true);
    expect(entries.at(-1)).toMatchObject({ from: "host", report: { ok: true, exit: { code: 0 } } });
    const types = entries.filter((e) => "frame" in e).map((e) => `${e.from}:${(e as { frame?: { type?: string } }).frame?.type}`);
    expect(types).toEqual([
      "guest:hello",
      "host:invoke",
      "guest:request",
      "host:reply",
      "guest:log",
      "guest:request",
      "host:reply",
      "guest:log",
      "guest:result",
    ]);
  });

  it("replays the same guest successfully", async () => {
    const run = await ears(["replay", transcript, "--", "node", SCRIPT]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("ears: the guest matched the recording (2 requests and the result)");
    expect(JSON.parse(run.stdout)).toMatchObject({ outcomes: [{ status: "success" }, { status: "success" }] });
  });

  it("streams the replayed guest's stderr, once", async () => {
    const run = await ears(["replay", transcript, "--", "node", SCRIPT, "--stderr", "replayed diagnostic"]);
    expect(run.code).toBe(0);
    expect(linesEqual(run.stderr, "[stderr] replayed diagnostic")).toBe(1);
    const quiet = await ears(["replay", transcript, "--quiet", "--", "node", SCRIPT, "--stderr", "replayed diagnostic"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
  });

  it("reports a guest that sends different arguments (exit 1)", async () => {
    const changed = JSON.stringify([
      { name: "list", arguments: null },
      { name: "read", arguments: { path: "package.json" } },
    ]);
    const run = await ears(["replay", transcript, "--", "node", SCRIPT, "--calls", changed]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'ears: the guest diverged from the recording: request #2: expected read {"path":"README.md"} ' +
        'but the guest sent read {"path":"package.json"}\n',
    );
    expect(run.stdout).toBe("");
    // The replay ends the guest: what it says on stderr after that (its result could not be written, EPIPE)
    // is noise after the real message and is not printed (report.stderr keeps it).
    expect(run.stderr).not.toContain("[stderr]");
  });

  it("prints nothing the guest says on stderr once the replay stopped it; the report keeps it", async () => {
    const changed = JSON.stringify([{ name: "read", arguments: { path: "package.json" } }]);
    const args = ["--", "node", SCRIPT, "--calls", changed, "--stderr-after-failure", "told it diverged"];
    const run = await ears(["replay", transcript, ...args]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("ears: the guest diverged from the recording: request #1:");
    expect(run.stderr).not.toContain("told it diverged");
    expect(run.stderr).not.toContain("[stderr]");
    const json = await ears(["replay", transcript, "--json", ...args]);
    expect(JSON.parse(json.stdout).report.stderr).toContain("told it diverged\n");
  });

  it("reports a guest that returns a different result, in --json too", async () => {
    const run = await ears(["replay", transcript, "--json", "--", "node", SCRIPT, "--tag", "new"]);
    expect(run.code).toBe(1);
    const replayed = JSON.parse(run.stdout) as { ok: boolean; divergence: string; matchedRequests: number };
    expect(replayed).toMatchObject({ ok: false, matchedRequests: 2, recordedRequests: 2 });
    expect(replayed.divergence).toMatch(
      /^result: expected success .* but the guest returned success .*; first difference at structured\.tag: recorded absent, now "new"$/,
    );
  });

  it("exits 2 when the guest crashes instead of doing what was recorded", async () => {
    const run = await ears(["replay", transcript, "--", "node", "-e", "process.exit(4)"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /ears: the guest diverged from the recording: request #1: expected list null but the guest made only 0 of the 2 recorded requests \(the run ended: GuestCrashed/,
    );
  });

  it("refuses a transcript that is malformed or not a session (64), naming the line", async () => {
    const bad = join(dir, "bad.ndjson");
    writeFileSync(bad, `${readFileSync(transcript, "utf8").split("\n").slice(0, 2).join("\n")}\n{"from":"host"\n`);
    const malformed = await ears(["replay", bad, "--", "node", SCRIPT]);
    expect(malformed.code).toBe(64);
    expect(malformed.stderr).toMatch(/^ears: .*bad\.ndjson line 3: not JSON/);

    const noInvoke = join(dir, "no-invoke.ndjson");
    writeFileSync(noInvoke, '{"from":"guest","frame":{"type":"hello","protocol":1}}\n');
    const notSession = await ears(["replay", noInvoke, "--", "node", SCRIPT]);
    expect(notSession.code).toBe(64);
    expect(notSession.stderr).toContain("cannot be replayed: the transcript has no invoke frame");

    const missing = await ears(["replay", "--", "node", SCRIPT]);
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain("ears: no transcript");
  });
});
