/**
 * `ears exec` / `ears run --approve NAME,...` (issue 31): each call that needs approval is asked on the
 * terminal. Driven through a real pseudo-terminal (test/helpers/pty-answer.py: python3's pty module types
 * the answers), and without one (stdin a pipe or /dev/null): denied, saying why. The handler counts its
 * runs in a file, so "never ran" is the test's own observation.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QUESTION_RESET } from "../../src/cli/terminal-approval.js";
import { EARS, ears } from "../helpers/spawn-ears.js";

const PTY = resolve("test/helpers/pty-answer.py");
const HEAD = "ears: approval needed; the body's output is held until you answer\r\n";

/** What the terminal showed, without the terminal-state reset written before each line of a question. */
const shown = (out: Buffer) => out.toString("utf8").replaceAll(QUESTION_RESET, "");
const SCRIPT = resolve("fixtures/cli/script.mjs");

/** Runs ears on a pseudo-terminal, typing `answers` at its questions; everything the terminal received. */
function onTerminal(answers: string[], args: string[], cwd: string): Promise<{ code: number | null; out: Buffer }> {
  return new Promise((done, fail) => {
    const child = spawn("python3", [PTY, JSON.stringify(answers), process.execPath, EARS, ...args], {
      cwd,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, out: Buffer.concat(chunks) }));
  });
}

describe.runIf(process.platform === "linux")("ears exec --approve: asked on the terminal", () => {
  let dir: string;
  let sent: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-approve-"));
    sent = join(dir, "sent.ndjson");
    writeFileSync(
      join(dir, "caps.mjs"),
      `import { appendFileSync } from "node:fs";\n` +
        `export function send(args) {\n` +
        `  appendFileSync(${JSON.stringify(sent)}, JSON.stringify(args) + "\\n");\n` +
        `  return "sent to " + args.to;\n}\n` +
        `export function peek() { return "peeked"; }\n`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const sentCalls = () =>
    existsSync(sent)
      ? readFileSync(sent, "utf8")
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l))
      : [];
  const reset = () => rmSync(sent, { force: true });

  // Two calls that need approval, one that does not; the body returns what each call answered.
  const BODY =
    'const a = await ears.call("send", { to: "ada", text: input });\n' +
    'const p = await ears.call("peek", {});\n' +
    'const b = await ears.call("send", { to: "bob" });\n' +
    "const show = (r) => (r.status === 'success' ? r.content : r.code + ': ' + r.content);\n" +
    "return [show(a), show(p), show(b)];";
  const args = (input: string) => [
    "exec",
    "--no-sandbox",
    "--capabilities",
    "caps.mjs",
    "--allow",
    "send,peek",
    "--approve",
    "send",
    "--input",
    JSON.stringify(input),
    "--json",
    "--code",
    BODY,
  ];
  const reportOf = (out: Buffer) => {
    const line = out
      .toString("utf8")
      .split(/\r?\n/)
      .find((l) => l.startsWith('{"'));
    return JSON.parse(line!) as {
      outcome: { structured: string[] };
      approvals: { name: string; decision: string; by: string; reason?: string }[];
    };
  };

  it("y approves (the handler runs), anything else denies with 'denied at the terminal' (it never runs)", async () => {
    reset();
    const { code, out } = await onTerminal(["y", "no"], args("hi"), dir);
    const text = shown(out);
    expect(text).toContain(`${HEAD}ears: the body calls send {"to":"ada","text":"hi"}\r\nears: allow this call to send? [y/N] `);
    expect(text).toContain('ears: the body calls send {"to":"bob"}');
    const report = reportOf(out);
    expect(report.outcome.structured).toEqual([
      "sent to ada",
      "peeked",
      expect.stringMatching(/^ApprovalDenied: .*denied at the terminal/),
    ]);
    expect(report.approvals.map(({ name, decision, by, reason }) => ({ name, decision, by, reason }))).toEqual([
      { name: "send", decision: "approved", by: "terminal", reason: undefined },
      { name: "send", decision: "denied", by: "terminal", reason: "denied at the terminal" },
    ]);
    expect(sentCalls()).toEqual([{ to: "ada", text: "hi" }]);
    expect(code).toBe(0);
  });

  it("two calls waiting at once are asked one after the other, each answer for its own question", async () => {
    reset();
    const body =
      'const [a, b] = await Promise.all([ears.call("send", { to: "ada" }), ears.call("send", { to: "bob" })]);\n' +
      "return [a.status, b.status];";
    const cli = ["exec", "--no-sandbox", "--capabilities", "caps.mjs", "--allow", "send", "--approve", "send", "--json", "--code", body];
    const { out } = await onTerminal(["y", "n"], cli, dir);
    const text = shown(out);
    // The second question is written only after the first was answered.
    expect(text).toMatch(
      /allow this call to send\? \[y\/N\] y\r\nears: approval needed; [^\r]*\r\nears: the body calls send \{"to":"(ada|bob)"\}\r\nears: allow this call to send\? \[y\/N\] n\r\n/,
    );
    const first = /the body calls send \{"to":"(\w+)"\}/.exec(text)![1];
    expect(sentCalls()).toEqual([{ to: first }]);
    expect(reportOf(out).outcome.structured).toEqual(first === "ada" ? ["success", "failure"] : ["failure", "success"]);
  });

  it("end of input (Ctrl-D) at the question denies; an empty answer denies", async () => {
    reset();
    const { out } = await onTerminal([""], args("x"), dir);
    const report = reportOf(out);
    expect(report.approvals.map((a) => a.decision)).toEqual(["denied", "denied"]);
    expect(out.toString("utf8")).toContain("ears: the question about send is withdrawn: the terminal's input ended");
    expect(sentCalls()).toEqual([]);
  });

  it("a hostile argument (OSC title, BEL, C1 CSI, right-to-left override) reaches the terminal escaped, never as raw bytes", async () => {
    reset();
    const hostile = "\x1b]0;pwned\x07\x9b2J\rears: fake\u202egnp.exe";
    const { out } = await onTerminal(["n", "n"], args(hostile), dir);
    const question = shown(out)
      .split("\r\n")
      .find((l) => l.startsWith('ears: the body calls send {"to":"ada"'));
    expect(question).toBe('ears: the body calls send {"to":"ada","text":"\\u001b]0;pwned\\u0007\\u009b2J\\rears: fake\\u202egnp.exe"}');
    // No ESC, BEL or C1 byte anywhere the terminal received but ears' own reset (the JSON report escapes them too).
    expect(shown(out)).not.toMatch(/[\x1b\x07\x80-\x9f\u202e]/);
    expect(sentCalls()).toEqual([]);
  });

  it("long arguments are cut in the question, saying how much is not shown", async () => {
    reset();
    const { out } = await onTerminal(["n", "n"], args("z".repeat(5000)), dir);
    expect(shown(out)).toMatch(/ears: the body calls send \{"to":"ada","text":"z+ …\(3\d{3} more characters not shown\)\r\n/);
  });

  it("without a terminal (stdin not a TTY) every such call is denied, saying why, and the others go on", async () => {
    reset();
    const run = await ears(args("hi"), { cwd: dir });
    const report = JSON.parse(run.stdout) as { outcome: { structured: string[] }; approvals: { reason: string; by: string }[] };
    const reason = "no terminal to ask: stdin is not a terminal; run ears with a terminal, or drop --approve";
    const denied = `ApprovalDenied: "send" was not approved: ${reason}; it did not run`;
    expect(report.outcome.structured).toEqual([denied, "peeked", denied]);
    expect(report.approvals.map((a) => [a.by, a.reason])).toEqual([
      ["ears", reason],
      ["ears", reason],
    ]);
    expect(run.stderr).toContain(`ears: send needs approval: denied, ${reason}\n`);
    expect(sentCalls()).toEqual([]);
  });

  it("ears run asks too (the guest's protocol is on its own pipes); --record and --verbose show the approvals", async () => {
    reset();
    const input = JSON.stringify({
      calls: [
        { name: "send", arguments: { to: "cy" } },
        { name: "send", arguments: { to: "di" } },
      ],
    });
    const run = ["run", "--no-sandbox", "--capabilities", "caps.mjs", "--allow", "send", "--approve", "send", "--input", input];
    const { code, out } = await onTerminal(["yes", "n"], [...run, "--record", "t.ndjson", "--verbose", "--", "node", SCRIPT], dir);
    const text = shown(out);
    expect(text).toContain('ears: the body calls send {"to":"cy"}\r\nears: allow this call to send? [y/N] yes\r\n');
    expect(text).toMatch(/ears: \| +[\d.]+ ms {2}\[approved\] #1 send approved by terminal \(decided in \d+ ms\)/);
    expect(text).toMatch(/ears: \| +[\d.]+ ms {2}\[denied\] #2 send denied by terminal: denied at the terminal/);
    expect(sentCalls()).toEqual([{ to: "cy" }]);
    expect(code).toBe(0);
    // The transcript's report note has them, and the timeline page shows them.
    const note = readFileSync(join(dir, "t.ndjson"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { report?: { approvals?: { decision: string; by: string }[] } })
      .find((entry) => entry.report !== undefined);
    expect(note?.report?.approvals?.map((a) => [a.decision, a.by])).toEqual([
      ["approved", "terminal"],
      ["denied", "terminal"],
    ]);
    const page = await ears(["timeline", "t.ndjson", "-o", "-"], { cwd: dir });
    expect(page.stdout).toContain("#1 send approved by terminal");
    expect(page.stdout).toContain("#2 send denied by terminal: denied at the terminal");
  });

  it("a --capabilities handler marked with requireApproval is asked without --approve", async () => {
    reset();
    const host = pathToFileURL(resolve("dist/host/index.js")).href;
    writeFileSync(
      join(dir, "marked.mjs"),
      `import { appendFileSync } from "node:fs";\nimport { requireApproval } from ${JSON.stringify(host)};\n` +
        `const record = (args) => appendFileSync(${JSON.stringify(sent)}, JSON.stringify(args) + "\\n");\n` +
        `export const send = requireApproval((args) => (record(args), "ok"));\n`,
    );
    const body = 'const r = await ears.call("send", { to: "fay" }); return r.status;';
    const cli = ["exec", "--no-sandbox", "--capabilities", "marked.mjs", "--allow", "send", "--code", body];
    const { out, code } = await onTerminal(["y"], cli, dir);
    expect(out.toString("utf8")).toContain('ears: the body calls send {"to":"fay"}');
    expect(sentCalls()).toEqual([{ to: "fay" }]);
    expect(code).toBe(0);
  });

  it("--approve with a name that is no capability, or not allowed, is a usage error", async () => {
    const unknown = await ears(["exec", "--no-sandbox", "--approve", "nope", "--code", "return 1;"], { cwd: dir });
    expect(unknown.stderr).toMatch(/^ears: --approve names "nope", but no such capability exists \(available: read, list\)\n$/);
    expect(unknown.code).toBe(64);
    const notAllowed = await ears(["run", "--approve", "read", "--", "node", "-e", ""], { cwd: dir });
    expect(notAllowed.stderr).toMatch(/^ears: --approve names "read", which --allow does not; .*--allow read --approve read\n$/);
    expect(notAllowed.code).toBe(64);
  });
});
