/**
 * Approvals inside a run (issue 31), durable: a decision of "pause" ends the run with a signed token;
 * resumeCode, in a new host process, answers the calls made before the pause from the token (their
 * handlers do not run again), applies the decisions, and goes on. A body that takes another path is
 * stopped (ReplayDiverged) before anything runs for it; a token that is not exactly one this key signed
 * is refused and nothing runs.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  ApprovalTokenError,
  requireApproval,
  resumeCode,
  runCode,
  type ApprovalToken,
  type Capabilities,
  type RunReport,
} from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

const KEY = "k".repeat(16) + "0123456789abcdef";
const dist = pathToFileURL(join(import.meta.dirname, "../../../dist/host/index.js")).href;
const dir = mkdtempSync(join(tmpdir(), "ears-resume-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Handlers that count their runs: `lookup` needs no approval, `pay` does. */
function handlers() {
  const runs = { lookup: 0, pay: 0 };
  const capabilities: Capabilities = {
    lookup: ({ who }: { who: string }) => {
      runs.lookup++;
      return { iban: `IBAN-${who}` };
    },
    pay: requireApproval(({ iban, amount }: { iban: string; amount: number }) => {
      runs.pay++;
      return { paid: `${amount} to ${iban}` };
    }) as never,
  } as never;
  return { runs, capabilities };
}

const BODY =
  'const a = await ears.call("lookup", { who: input.who });\n' +
  'const p = await ears.call("pay", { iban: a.structured.iban, amount: 120 });\n' +
  'if (p.status === "failure") return { failed: p.code, why: p.content };\n' +
  'const b = await ears.call("lookup", { who: "again" });\n' +
  "return [p.structured.paid, b.structured.iban];";

async function pausedRun(code = BODY): Promise<{ report: RunReport; runs: { lookup: number; pay: number } }> {
  const { runs, capabilities } = handlers();
  const report = await runCode({
    code,
    input: { who: "ada" },
    capabilities,
    approval: { decide: () => ({ pause: true, by: "queue" }), tokenKey: KEY },
  });
  return { report, runs };
}

/** Resumes `token` in a new Node process with counting handlers of its own; resolves with its report and counts. */
async function resumeElsewhere(token: unknown, decisions: unknown): Promise<{ report: RunReport; runs: { lookup: number; pay: number } }> {
  const tokenFile = join(dir, `token-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(tokenFile, JSON.stringify(token));
  const script = join(dir, "resume.mjs");
  writeFileSync(
    script,
    `import { readFileSync } from "node:fs";
import { resumeCode, requireApproval } from ${JSON.stringify(dist)};
const runs = { lookup: 0, pay: 0 };
const capabilities = {
  lookup: ({ who }) => { runs.lookup++; return { iban: "IBAN-" + who }; },
  pay: requireApproval(({ iban, amount }) => { runs.pay++; return { paid: amount + " to " + iban }; }),
};
const report = await resumeCode(readFileSync(process.argv[2], "utf8"), {
  capabilities, approval: { tokenKey: process.argv[3] }, decisions: JSON.parse(process.argv[4]),
});
process.stdout.write(JSON.stringify({ report, runs }));
`,
  );
  const { stdout } = await promisify(execFile)(process.execPath, [script, tokenFile, KEY, JSON.stringify(decisions)]);
  return JSON.parse(stdout) as { report: RunReport; runs: { lookup: number; pay: number } };
}

describe("pause and resume", () => {
  it("a pause ends the run (not a failure) with a token and the pending call; the handler waiting did not run", async () => {
    const { report, runs } = await pausedRun();
    expect(report.ok).toBe(false);
    expect(report.failure).toBeUndefined();
    expect(report.outcome).toBeUndefined();
    expect(report.paused?.pending).toEqual([{ id: 2, name: "pay", arguments: { iban: "IBAN-ada", amount: 120 } }]);
    expect(report.paused?.token).toMatchObject({ format: "ears-approval-token", version: 1 });
    expect(runs).toEqual({ lookup: 1, pay: 0 });
    expect(report.approvals).toEqual([expect.objectContaining({ id: 2, decision: "paused", by: "queue" })]);
    // The token is plain JSON: the body, its input, the answers so far, the pending call.
    const payload = JSON.parse(report.paused!.token.payload) as Record<string, unknown>;
    expect(payload).toMatchObject({ code: BODY, input: { who: "ada" }, pending: [{ id: 2, name: "pay" }] });
    expect(payload.calls).toEqual([
      { id: 1, name: "lookup", arguments: { who: "ada" }, outcome: { status: "success", content: "", structured: { iban: "IBAN-ada" } } },
    ]);
  });

  it("resumed in a new host process: earlier handlers are not run again, the approved call runs once, the result is right", async () => {
    const first = await pausedRun();
    const { report, runs } = await resumeElsewhere(first.report.paused!.token, { 2: { approved: true, by: "ada" } });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual(["120 to IBAN-ada", "IBAN-again"]);
    // lookup ran once before the pause (here) and once after it (the new call, there); pay once, there.
    expect(first.runs).toEqual({ lookup: 1, pay: 0 });
    expect(runs).toEqual({ lookup: 1, pay: 1 });
    expect(report.calls.map((call) => [call.id, call.name, call.replayed ?? false])).toEqual([
      [1, "lookup", true],
      [2, "pay", false],
      [3, "lookup", false],
    ]);
    expect(report.approvals).toEqual([expect.objectContaining({ id: 2, decision: "approved", by: "ada", resumed: true })]);
  });

  it("deny on resume: the body gets ApprovalDenied with the reason; pay never runs", async () => {
    const first = await pausedRun();
    const { report, runs } = await resumeElsewhere(first.report.paused!.token, { 2: { approved: false, reason: "over budget" } });
    expect(report.outcome?.structured).toMatchObject({ failed: "ApprovalDenied" });
    expect(JSON.stringify(report.outcome?.structured)).toContain("over budget");
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });

  it("a resumed run may pause again; its token holds every answer so far", async () => {
    const code = 'await ears.call("pay", { iban: "a", amount: 1 });\nawait ears.call("pay", { iban: "b", amount: 2 });\nreturn "done";';
    const { runs, capabilities } = handlers();
    const first = await runCode({ code, capabilities, approval: { decide: () => ({ pause: true }), tokenKey: KEY } });
    const second = await resumeCode(first.paused!.token, {
      capabilities,
      decisions: { 1: { approved: true } },
      approval: { decide: () => ({ pause: true }), tokenKey: KEY },
    });
    expect(second.paused?.pending).toEqual([{ id: 2, name: "pay", arguments: { iban: "b", amount: 2 } }]);
    const third = await resumeCode(second.paused!.token, {
      capabilities,
      decisions: { 2: { approved: true } },
      approval: { tokenKey: KEY },
    });
    expect(third.outcome?.structured).toBe("done");
    expect(runs.pay).toBe(2);
  });

  it("another call at a step ends with ReplayDiverged naming the step and both calls; nothing runs for it", async () => {
    const code = 'await ears.call("lookup", { who: String(Math.random()) });\nawait ears.call("pay", { iban: "x", amount: 1 });\nreturn 1;';
    const first = await pausedRun(code);
    expect(first.report.paused).toBeDefined();
    const { runs, capabilities } = handlers();
    const report = await resumeCode(first.report.paused!.token, {
      capabilities,
      decisions: { 2: { approved: true } },
      approval: { tokenKey: KEY },
    });
    expect(report.failure?.code).toBe("ReplayDiverged");
    expect(report.failure?.message).toMatch(
      /at step 1 the body called "lookup" with \{"who":"0\.\d+"\}, where the paused run called "lookup"/,
    );
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });

  it("a replay that reaches the pending step with other arguments diverges too, and the approved call does not run", async () => {
    const code = 'await ears.call("lookup", { who: "a" });\nawait ears.call("pay", { iban: "x", amount: Math.random() });\nreturn 1;';
    const first = await pausedRun(code);
    const { runs, capabilities } = handlers();
    const report = await resumeCode(first.report.paused!.token, {
      capabilities,
      decisions: { 2: { approved: true } },
      approval: { tokenKey: KEY },
    });
    expect(report.failure?.code).toBe("ReplayDiverged");
    expect(report.failure?.message).toContain("at step 2");
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });

  it("a body that ends before making the paused run's calls diverges (its result is not taken as the run's)", async () => {
    // The body reads its working directory, which the resumed run does not have: it takes another path.
    const code = 'if (process.getBuiltinModule("node:fs").existsSync("flag")) await ears.call("pay", { iban: "x", amount: 1 });\nreturn 0;';
    const cwd = mkdtempSync(join(dir, "cwd-"));
    writeFileSync(join(cwd, "flag"), "");
    const { runs, capabilities } = handlers();
    const first = await runCode({ code, cwd, capabilities, approval: { decide: () => ({ pause: true }), tokenKey: KEY } });
    expect(first.paused?.pending).toHaveLength(1);
    const report = await resumeCode(first.paused!.token, {
      capabilities,
      decisions: { 1: { approved: true } },
      approval: { tokenKey: KEY },
    });
    expect(report.failure?.code).toBe("ReplayDiverged");
    expect(report.failure?.message).toContain("the body ended without making call 1");
    expect(runs.pay).toBe(0);
  });
});

describe("the token boundary", () => {
  let token: ApprovalToken;
  let capabilities: Capabilities;
  let runs: { lookup: number; pay: number };

  it("is made", async () => {
    const first = await pausedRun();
    token = first.report.paused!.token;
    ({ capabilities, runs } = handlers());
  });

  const resume = (value: unknown, key = KEY) =>
    resumeCode(value, { capabilities, decisions: { 2: { approved: true } }, approval: { tokenKey: key } });

  it("a tampered token is refused before anything runs", () => {
    const payload = JSON.parse(token.payload) as { calls: { outcome: { structured: unknown } }[] };
    payload.calls[0]!.outcome.structured = { iban: "IBAN-mallory" };
    expect(() => resume({ ...token, payload: JSON.stringify(payload) })).toThrow(
      expect.objectContaining({ name: "ApprovalTokenError", problem: "BadSignature" }),
    );
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });

  it("a foreign token (another key) is refused", () => {
    expect(() => resume(token, "z".repeat(32))).toThrow(/signed with another approval.tokenKey/);
  });

  it("not a token, or another version, is refused with a clear error", () => {
    expect(() => resume("not json")).toThrow(expect.objectContaining({ problem: "NotAToken" }));
    expect(() => resume({ hello: 1 })).toThrow(/not an ears pause token/);
    expect(() => resume(null)).toThrow(ApprovalTokenError);
    expect(() => resume({ ...token, version: 0 })).toThrow(/version 0; this ears reads version 1 only/);
    expect(() => resume(token, "short")).toThrow(/at least 32 bytes/);
  });

  it("decisions that do not fit the token are refused before anything runs", () => {
    expect(() => resumeCode(token, { capabilities, decisions: { 7: { approved: true } }, approval: { tokenKey: KEY } })).toThrow(
      /"7", not pending/,
    );
    expect(() => resumeCode(token, { capabilities, decisions: {}, approval: { tokenKey: KEY } })).toThrow(/no decision for pending call 2/);
    expect(() => resumeCode(token, { capabilities, decisions: { 2: { pause: true } as never }, approval: { tokenKey: KEY } })).toThrow(
      /not paused/,
    );
    expect(() => resumeCode(token, { capabilities, decisions: { 2: { approved: false } as never }, approval: { tokenKey: KEY } })).toThrow(
      /reason/,
    );
    expect(() => resumeCode(token, { capabilities, approval: {} } as never)).toThrow(/tokenKey is required/);
    expect(() => resumeCode(token, { code: "return 1", approval: { tokenKey: KEY } } as never)).toThrow(/come from the token/);
  });

  it("any change to a valid token (format, version, payload, signature) is refused and nothing runs", () => {
    const text = JSON.stringify(token);
    const mutation = fc.oneof(
      // Change, insert or delete one character anywhere in the token's JSON text.
      fc
        .record({
          at: fc.nat(text.length - 1),
          char: fc.string({ minLength: 1, maxLength: 1 }),
          op: fc.constantFrom("set", "insert", "delete"),
        })
        .map(({ at, char, op }) =>
          op === "set"
            ? text.slice(0, at) + char + text.slice(at + 1)
            : op === "insert"
              ? text.slice(0, at) + char + text.slice(at)
              : text.slice(0, at) + text.slice(at + 1),
        ),
      // Replace one field with any JSON value.
      fc
        .record({ field: fc.constantFrom("format", "version", "payload", "signature"), value: fc.jsonValue() })
        .map(({ field, value }) => JSON.stringify({ ...token, [field]: value })),
    );
    fc.assert(
      fc.property(mutation, (mutated) => {
        fc.pre(mutated !== text);
        let parsed: unknown;
        try {
          parsed = JSON.parse(mutated);
        } catch {
          parsed = undefined;
        }
        // A change JSON does not see (whitespace between tokens, the same value) leaves the same token: that one runs.
        fc.pre(parsed === undefined || JSON.stringify(parsed) !== text);
        expect(() => resume(mutated)).toThrow(ApprovalTokenError);
      }),
      { seed: 31, numRuns: 400 },
    );
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });
});
