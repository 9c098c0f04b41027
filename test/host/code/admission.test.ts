/**
 * Run admission (issue 28 item 4): a host-wide bound on the guest processes alive at once and on their
 * memory limits, with a bounded queue, a queue deadline and aborts while queued, for cold runCode, runGuest,
 * pooled runs and a pool's own runners. Real processes: the runners alive are counted by a capability the
 * bodies call, which probes /proc for the code runners under this process (fixtures/cli/capabilities-runners.mjs).
 */
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  createRunAdmission,
  createRunPool,
  defaultRunAdmission,
  HostFailureCode,
  runCode,
  runGuest,
  type RunPool,
  type RunReport,
} from "../../../src/host/index.js";
import { availableParallelism, totalmem } from "node:os";
import { failOnUnhandledRejections } from "../../helpers/host.js";
// @ts-expect-error: a plain .mjs fixture, shared with the ears mcp tests
import { liveRunners, resetRunners, runners } from "../../../fixtures/cli/capabilities-runners.mjs";

failOnUnhandledRejections();

const linux = process.platform === "linux";
const MIB = 1024 * 1024;
const PROBE = 'const r = await ears.call("runners"); if (r.status === "failure") return r; return r.structured.most;';
const pools: RunPool[] = [];
afterEach(async () => {
  resetRunners();
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** Waits until `check()` holds (a run reaches the queue once its body is compiled, a turn or more later). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((done) => setTimeout(done, 10));
}

/** A capability that answers once `release()` is called: a run that calls it holds its slot until then. */
function holder() {
  let release!: () => void;
  const held = new Promise<string>((done) => (release = () => done("released")));
  let called!: () => void;
  const reached = new Promise<void>((done) => (called = done));
  return {
    capabilities: {
      hold: () => {
        called();
        return held;
      },
    },
    release,
    reached,
  };
}
const HOLD = 'await ears.call("hold"); return "held";';

function mostOf(reports: RunReport[]): number {
  for (const report of reports) expect(report, JSON.stringify(report.failure)).toMatchObject({ ok: true });
  return Math.max(...reports.map((report) => (report.outcome as { structured: number }).structured));
}

describe.runIf(linux)("run admission: never more runs alive than the cap", () => {
  it("12 concurrent cold runCode calls with maxConcurrentRuns 2 never have more than 2 runners alive", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 2 });
    const reports = await Promise.all(
      Array.from({ length: 12 }, () => runCode({ code: PROBE, capabilities: { runners }, sandbox: false, admission })),
    );
    const most = mostOf(reports);
    expect(most).toBeGreaterThanOrEqual(1);
    expect(most).toBeLessThanOrEqual(2);
    expect(admission).toMatchObject({ running: 0, queued: 0, memoryInUse: 0 });
  });

  it("a pool of 2 under 12 concurrent runs, with maxConcurrentRuns 2: its warm runners count, never more than 2 alive", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 2 });
    const pool = createRunPool({ size: 2, sandbox: false, admission });
    pools.push(pool);
    const reports = await Promise.all(Array.from({ length: 12 }, () => runCode({ code: PROBE, capabilities: { runners }, pool })));
    expect(mostOf(reports)).toBeLessThanOrEqual(2);
    for (const report of reports) expect(report.pooled).toBe(true);
    await pool.close();
    expect(liveRunners()).toBe(0);
    expect(admission).toMatchObject({ running: 0, queued: 0 });
  });

  it("the memory budget: runs whose memoryBytes do not fit together wait; one over the budget alone is refused", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 8, memoryBytes: 300 * MIB });
    const limits = { memoryBytes: 200 * MIB };
    const reports = await Promise.all(
      Array.from({ length: 4 }, () => runCode({ code: PROBE, capabilities: { runners }, sandbox: false, limits, admission })),
    );
    expect(mostOf(reports)).toBe(1);
    expect(() => runCode({ code: "return 1;", sandbox: false, limits: { memoryBytes: 400 * MIB }, admission })).toThrow(
      new RangeError(
        "runCode: limits.memoryBytes (419430400 bytes) is over the run admission's memory budget of 314572800 bytes, so it could " +
          "never run; give a smaller limits.memoryBytes, or an admission with a larger memoryBytes",
      ),
    );
    expect(() => createRunPool({ size: 2, sandbox: false, limits, admission })).toThrow(/2 runners of limits\.memoryBytes 209715200/);
  });
});

describe.runIf(linux)("run admission: the queue", () => {
  it("a run past maxQueuedRuns fails at once with RunQueueFull (runGuest too), nothing started; the queued one runs later", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 1, maxQueuedRuns: 1 });
    const { capabilities, release, reached } = holder();
    const first = runCode({ code: HOLD, capabilities, sandbox: false, admission });
    await reached;
    const queued = runCode({ code: "return 2;", sandbox: false, admission });
    await until(() => admission.queued === 1);
    expect(admission).toMatchObject({ running: 1, queued: 1 });
    const full = await runCode({ code: "return 3;", sandbox: false, admission });
    expect(full).toMatchObject({ ok: false, failure: { code: HostFailureCode.RunQueueFull }, sandbox: null });
    expect(full.exit).toBeUndefined();
    expect(full.failure?.message).toBe(
      "the host is busy: 1 runs are under way (maxConcurrentRuns) and 1 more are waiting (maxQueuedRuns), so this run was not " +
        "queued and nothing ran; try again in a moment, or run fewer at once",
    );
    const guest = await runGuest({
      command: process.execPath,
      args: [resolve("fixtures/guests/call-input.mjs")],
      input: { name: "x", args: {} },
      sandbox: false,
      admission,
    });
    expect(guest).toMatchObject({ ok: false, failure: { code: HostFailureCode.RunQueueFull } });
    release();
    expect(await first).toMatchObject({ ok: true, outcome: { structured: "held" } });
    expect(await queued).toMatchObject({ ok: true, outcome: { structured: 2 } });
  });

  it("a run that waits queueTimeoutMs fails with QueueTimeout and nothing started", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 1, queueTimeoutMs: 200 });
    const { capabilities, release, reached } = holder();
    const first = runCode({ code: HOLD, capabilities, sandbox: false, admission });
    await reached;
    const late = await runCode({ code: "return 2;", sandbox: false, admission });
    expect(late).toMatchObject({ ok: false, failure: { code: HostFailureCode.QueueTimeout } });
    expect(late.exit).toBeUndefined();
    expect(late.failure?.message).toContain("this run waited 200 ms (queueTimeoutMs) for one of its 1 run slots");
    expect(late.failure?.message).toContain("try again");
    release();
    expect((await first).ok).toBe(true);
    expect(admission).toMatchObject({ running: 0, queued: 0 });
  });

  it("aborting a queued run takes it out of the queue: Aborted, nothing started", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 1 });
    const { capabilities, release, reached } = holder();
    const first = runCode({ code: HOLD, capabilities, sandbox: false, admission });
    await reached;
    const stop = new AbortController();
    const queued = runCode({ code: "return 2;", sandbox: false, admission, signal: stop.signal });
    await until(() => admission.queued === 1);
    stop.abort(new Error("enough"));
    const report = await queued;
    expect(report).toMatchObject({ ok: false, failure: { code: HostFailureCode.Aborted }, sandbox: null });
    expect(report.failure?.message).toContain("before the guest was started (enough)");
    expect(report.exit).toBeUndefined();
    expect(admission.queued).toBe(0);
    release();
    expect((await first).ok).toBe(true);
  });
});

describe.runIf(linux)("run admission: pools", () => {
  it("close() with runs queued behind the admission: they end Aborted, and close resolves once every runner is gone", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 1 });
    const pool = createRunPool({ size: 1, sandbox: false, admission });
    pools.push(pool);
    const { capabilities, release, reached } = holder();
    const running = runCode({ code: HOLD, capabilities, pool });
    await reached;
    // Its replacement waits for the one slot; these two wait for a runner.
    const waiting = [runCode({ code: "return 1;", pool }), runCode({ code: "return 2;", pool })];
    await until(() => admission.queued === 2);
    expect(admission).toMatchObject({ running: 1, queued: 2 });
    let closed = false;
    const closing = pool.close().then(() => (closed = true));
    for (const report of await Promise.all(waiting)) {
      expect(report).toMatchObject({ ok: false, pooled: true, failure: { code: HostFailureCode.Aborted } });
      expect(report.failure?.message).toContain("pool was closed");
    }
    expect(closed).toBe(false); // the run under way holds close() until it is over
    release();
    expect(await running).toMatchObject({ ok: true, pooled: true });
    await closing;
    expect(liveRunners()).toBe(0);
    expect(admission).toMatchObject({ running: 0, queued: 0, memoryInUse: 0 });
  });

  it("a runner waiting for a slot is not charged its helloTimeoutMs, nor a run waiting for it its own", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 1 });
    const pool = createRunPool({ size: 1, sandbox: false, admission, limits: { helloTimeoutMs: 2500 } });
    pools.push(pool);
    const { capabilities, release, reached } = holder();
    const running = runCode({ code: HOLD, capabilities, pool });
    await reached;
    const next = runCode({ code: "return 2;", pool, limits: { helloTimeoutMs: 2000 } });
    // Longer than both start-up deadlines, which are themselves long enough for a start on a loaded machine
    // (300 ms was not, under a load of 12): the replacement and the run wait in the queue meanwhile.
    await new Promise((done) => setTimeout(done, 3000));
    release();
    expect((await running).ok).toBe(true);
    expect(await next).toMatchObject({ ok: true, pooled: true, outcome: { structured: 2 } });
  });

  it("refuses a pool larger than its admission's cap, and a pooled run with another admission", () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 2 });
    expect(() => createRunPool({ size: 3, sandbox: false, admission })).toThrow(
      new RangeError(
        "createRunPool: a pool of 3 runners needs 3 run slots, but its admission allows 2 (maxConcurrentRuns); " +
          "make the pool smaller or the admission larger",
      ),
    );
    const pool = createRunPool({ size: 1, sandbox: false, admission });
    pools.push(pool);
    expect(() => runCode({ code: "return 1;", pool, admission: createRunAdmission() })).toThrow(
      /options\.admission differs from the pool's/,
    );
  });
});

describe("run admission: options", () => {
  it("checks its options, and runs check theirs", () => {
    expect(() => createRunAdmission({ maxConcurrentRuns: 0 })).toThrow(
      new RangeError("createRunAdmission: maxConcurrentRuns must be an integer of at least 1, or Infinity, got 0"),
    );
    expect(() => createRunAdmission({ maxQueuedRuns: -1 })).toThrow(RangeError);
    expect(() => createRunAdmission({ queueTimeoutMs: 1.5 })).toThrow(RangeError);
    expect(() => createRunAdmission({ memoryBytes: Number.NaN })).toThrow(RangeError);
    expect(() => createRunAdmission({ maxRuns: 2 } as never)).toThrow(/unknown option "maxRuns"/);
    expect(() => runCode({ code: "return 1;", admission: {} as never })).toThrow(
      new TypeError("runCode: options.admission must be made by createRunAdmission"),
    );
  });

  it("the process-wide default is derived from the machine: 4 runs a core, at most one per GiB of half the memory, at least 2", () => {
    const admission = defaultRunAdmission();
    expect(defaultRunAdmission()).toBe(admission);
    const budget = Math.floor(totalmem() / 2);
    expect(admission).toMatchObject({
      memoryBytes: budget,
      maxConcurrentRuns: Math.max(2, Math.min(4 * availableParallelism(), Math.floor(budget / 1024 ** 3))),
      maxQueuedRuns: 64,
      queueTimeoutMs: 60_000,
    });
  });
});
