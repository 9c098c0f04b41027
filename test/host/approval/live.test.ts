/**
 * Approvals inside a run (issue 31), live: which calls need approval, approve, deny, the decision's
 * deadline, a decision outliving the run's and the call's deadlines, two at once, other calls going on
 * while one waits, an abort while one waits. Real runCode runs (sandboxed runners).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapabilities } from "../../../src/index.js";
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  HostReplyCode,
  requireApproval,
  runCode,
  runHost,
  type ApprovalCall,
  type ApprovalDecision,
} from "../../../src/host/index.js";
import { createLinkedPair, serve } from "../../../src/index.js";
import { expectGone, failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

/** A capability map whose handlers count their runs. */
function counted() {
  const runs = { send: 0, read: 0 };
  const capabilities = {
    send: requireApproval(({ to }: { to: string }) => {
      runs.send++;
      return { sent: to };
    }),
    read: () => {
      runs.read++;
      return "data";
    },
  } as never;
  return { runs, capabilities };
}

describe("live approval", () => {
  it("approve: the handler runs once and the report lists the approval with who decided", async () => {
    const { runs, capabilities } = counted();
    const asked: ApprovalCall[] = [];
    const report = await runCode({
      code: 'const r = await ears.call("send", { to: "ada" }); return r.structured;',
      capabilities,
      approval: {
        decide: (call) => {
          asked.push(call);
          return { approved: true, by: "ada@example.com" };
        },
      },
    });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual({ sent: "ada" });
    expect(runs.send).toBe(1);
    expect(asked).toEqual([{ id: 1, name: "send", arguments: { to: "ada" } }]);
    expect(report.approvals).toEqual([expect.objectContaining({ id: 1, name: "send", decision: "approved", by: "ada@example.com" })]);
    expect(report.approvals![0]!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("deny: the body gets ApprovalDenied with the reason and goes on; the handler never runs", async () => {
    const { runs, capabilities } = counted();
    const report = await runCode({
      code: 'const r = await ears.call("send", { to: "bob" }); const d = await ears.call("read", {}); return { r, d: d.content };',
      capabilities,
      approval: { decide: () => ({ approved: false, reason: "not on a Sunday", by: "policy" }) },
    });
    expect(report.ok).toBe(true);
    const { r, d } = report.outcome!.structured as { r: { status: string; code: string; content: string }; d: string };
    expect(r.status).toBe("failure");
    expect(r.code).toBe(HostReplyCode.ApprovalDenied);
    expect(r.content).toContain("not on a Sunday");
    expect(d).toBe("data");
    expect(runs.send).toBe(0);
    expect(report.approvals).toEqual([expect.objectContaining({ decision: "denied", by: "policy", reason: "not on a Sunday" })]);
  });

  it("a decision past approval.timeoutMs answers ApprovalTimedOut, aborts decide's signal, and the handler never runs", async () => {
    const { runs, capabilities } = counted();
    let aborted: unknown;
    const report = await runCode({
      code: 'const r = await ears.call("send", { to: "x" }); return r;',
      capabilities,
      approval: {
        timeoutMs: 300,
        decide: (_call, { signal }) =>
          new Promise<ApprovalDecision>((resolve) => {
            signal.addEventListener("abort", () => {
              aborted = signal.reason;
              // A decision after the deadline is ignored.
              resolve({ approved: true });
            });
          }),
      },
    });
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.ApprovalTimedOut });
    expect(report.outcome?.content).toContain("approval.timeoutMs");
    expect((aborted as DOMException).name).toBe("TimeoutError");
    expect(runs.send).toBe(0);
    expect(report.approvals![0]!.decision).toBe("timedOut");
    expect(DEFAULT_APPROVAL_TIMEOUT_MS).toBe(600_000);
  });

  it("a pending approval outlives runTimeoutMs and callTimeoutMs: the run still succeeds", async () => {
    const { runs, capabilities } = counted();
    const report = await runCode({
      code: 'const r = await ears.call("send", { to: "slow" }); return r.structured;',
      capabilities,
      limits: { runTimeoutMs: 1500, callTimeoutMs: 1000 },
      approval: { decide: () => new Promise((resolve) => setTimeout(() => resolve({ approved: true }), 2500)) },
    });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual({ sent: "slow" });
    expect(runs.send).toBe(1);
  });

  it("the run's deadline still ends a body that runs too long once nothing waits for approval", async () => {
    const { capabilities } = counted();
    const report = await runCode({
      code: 'await ears.call("send", { to: "x" }); for (;;) {}',
      capabilities,
      limits: { runTimeoutMs: 1500 },
      killGraceMs: 100,
      approval: { decide: () => ({ approved: true }) },
    });
    expect(report.failure?.code).toBe("RunTimeout");
  });

  it("two approvals wait at once, and a call that needs none proceeds while they wait", async () => {
    const { runs, capabilities } = counted();
    const waiting: ((decision: ApprovalDecision) => void)[] = [];
    let bothAsked!: () => void;
    const asked = new Promise<void>((resolve) => (bothAsked = resolve));
    const report = await runCode({
      code:
        'const a = ears.call("send", { to: "a" }); const b = ears.call("send", { to: "b" });\n' +
        'const d = await ears.call("read", {});\n' +
        'await ears.log("read while waiting: " + d.content);\n' +
        "const [ra, rb] = await Promise.all([a, b]); return [ra.status, rb.status, rb.code ?? null];",
      capabilities,
      onLog: (entry) => {
        // Both are asked, and the body's read was answered while neither was decided: now decide.
        if (entry.content.startsWith("read while waiting"))
          void asked.then(() => waiting.forEach((decide, i) => decide(i === 0 ? { approved: true } : { approved: false, reason: "no" })));
      },
      approval: {
        decide: () =>
          new Promise((resolve) => {
            waiting.push(resolve);
            if (waiting.length === 2) bothAsked();
          }),
      },
    });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual(["success", "failure", "ApprovalDenied"]);
    expect(runs).toEqual({ send: 1, read: 1 });
    expect(report.approvals?.map((a) => a.decision)).toEqual(["approved", "denied"]);
  });

  it("an abort while a call waits ends the run (Aborted), aborts decide's signal, and leaves no process", async () => {
    const { runs, capabilities } = counted();
    const controller = new AbortController();
    let signalled = false;
    const report = await runCode({
      code: 'await ears.call("send", { to: "x" }); return 1;',
      capabilities,
      signal: controller.signal,
      killGraceMs: 200,
      approval: {
        decide: (_call, { signal }) => {
          signal.addEventListener("abort", () => (signalled = true));
          setTimeout(() => controller.abort(new Error("user went away")), 50);
          return new Promise(() => {});
        },
      },
    });
    expect(report.failure?.code).toBe("Aborted");
    expect(signalled).toBe(true);
    expect(runs.send).toBe(0);
    expect(report.approvals).toEqual([expect.objectContaining({ decision: "unanswered" })]);
    expectGone(report);
  });
});

describe("which calls need approval", () => {
  const tools = defineCapabilities({
    pay: { arguments: z.object({ amount: z.number() }), requiresApproval: (args) => (args as { amount: number }).amount > 100 },
    note: { arguments: z.object({ text: z.string() }) },
  });

  /** Runs `calls` (a body's ears.call lines) over an in-memory pair and returns the names asked about. */
  async function askedFor(
    options: Parameters<typeof runHost>[1],
    body: (ears: Parameters<Parameters<typeof serve>[0]["run"]>[0]) => Promise<unknown>,
  ) {
    const asked: string[] = [];
    const [guestEnd, hostEnd] = createLinkedPair();
    void serve({ wire: guestEnd, run: body });
    const report = await runHost(hostEnd, {
      ...options,
      approval: {
        ...options?.approval,
        decide: (call) => {
          asked.push(`${call.name}:${JSON.stringify(call.arguments)}`);
          return { approved: true };
        },
      },
    });
    expect(report.failure).toBeUndefined();
    return asked;
  }

  it("a contract spec's requiresApproval predicate asks only for the calls it says", async () => {
    const asked = await askedFor({ capabilities: tools.implement({ pay: () => "paid", note: () => "noted" }) }, async (ears) => {
      await ears.call("pay", { amount: 5 });
      await ears.call("pay", { amount: 500 });
      await ears.call("note", { text: "hi" });
    });
    expect(asked).toEqual(['pay:{"amount":500}']);
  });

  it("approval.required by names and by a predicate over the call", async () => {
    const capabilities = { a: () => "a", b: () => "b", c: () => "c" };
    const byName = await askedFor({ capabilities, approval: { required: ["b"] } }, async (ears) => {
      await ears.call("a", 1);
      await ears.call("b", 2);
    });
    expect(byName).toEqual(["b:2"]);
    const byPredicate = await askedFor({ capabilities, approval: { required: (call) => call.arguments === 3 } }, async (ears) => {
      await ears.call("c", 3);
      await ears.call("c", 4);
    });
    expect(byPredicate).toEqual(["c:3"]);
  });

  it("a predicate that throws or answers anything but false asks (fail closed)", async () => {
    const capabilities = {
      x: requireApproval(
        () => "x",
        () => {
          throw new Error("oops");
        },
      ),
      y: requireApproval(() => "y", (() => undefined) as never),
    };
    const asked = await askedFor({ capabilities }, async (ears) => {
      await ears.call("x", null);
      await ears.call("y", null);
    });
    expect(asked).toEqual(["x:null", "y:null"]);
  });

  it("without approval.decide, a call that needs approval is denied saying so; without a token key, a pause denies", async () => {
    let ran = 0;
    const capabilities = { send: requireApproval(() => ran++) };
    const [guestEnd, hostEnd] = createLinkedPair();
    void serve({ wire: guestEnd, run: (ears) => ears.call("send", {}) });
    const report = await runHost(hostEnd, { capabilities });
    expect(report.outcome).toMatchObject({ status: "failure", code: "ApprovalDenied" });
    expect(report.outcome?.content).toContain("approval.decide");

    const [guest2, host2] = createLinkedPair();
    void serve({ wire: guest2, run: (ears) => ears.call("send", {}) });
    const paused = await runHost(host2, { capabilities, approval: { decide: () => ({ pause: true }) } });
    expect(paused.paused).toBeUndefined();
    expect(paused.outcome).toMatchObject({ status: "failure", code: "ApprovalDenied" });
    expect(paused.outcome?.content).toContain("cannot pause");
    expect(ran).toBe(0);
  });

  it("decide that throws, rejects or answers a malformed decision denies with a generic reason; the report says why", async () => {
    for (const decide of [
      () => {
        throw new Error("db down");
      },
      () => Promise.reject(new Error("db down")),
      () => ({ approved: "yes" }) as never,
    ]) {
      let ran = 0;
      const [guestEnd, hostEnd] = createLinkedPair();
      void serve({ wire: guestEnd, run: (ears) => ears.call("send", {}) });
      const report = await runHost(hostEnd, { capabilities: { send: requireApproval(() => ran++) }, approval: { decide } });
      expect(report.outcome).toMatchObject({ status: "failure", code: "ApprovalDenied" });
      expect(report.outcome?.content).toContain("approval check failed");
      expect(report.outcome?.content).not.toContain("db down");
      expect(report.approvals?.[0]?.reason).toMatch(/db down|malformed/);
      expect(ran).toBe(0);
    }
  });

  it("bad approval options throw at once", () => {
    expect(() => runHost(createLinkedPair()[1], { approval: { decide: 1 as never } })).toThrow(/approval.decide must be a function/);
    expect(() => runHost(createLinkedPair()[1], { approval: { required: [1] as never } })).toThrow(/approval.required/);
    expect(() => runHost(createLinkedPair()[1], { approval: { timeoutMs: 0 } })).toThrow(/approval.timeoutMs/);
    expect(() => runHost(createLinkedPair()[1], { approval: { tokenKey: "short" } })).toThrow(/at least 32 bytes/);
    expect(() => runHost(createLinkedPair()[1], { capabilities: { a: Object.assign(() => 1, { requiresApproval: "yes" }) } })).toThrow(
      /requiresApproval must be a boolean/,
    );
    expect(() => defineCapabilities({ a: { requiresApproval: "yes" as never } })).toThrow(/requiresApproval/);
  });
});
