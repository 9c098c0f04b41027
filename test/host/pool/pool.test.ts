/**
 * Run pools (issue 20): warm code runners serve pooled runCode bodies, one body per runner, with the
 * report and guarantees of a cold run; concurrent runs, crashes, idle deaths, start failures, close()
 * and options that differ from the pool's. Real processes; the runners are found through /proc by a
 * marker the pool's environment gives them.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createRunPool, HostFailureCode, runCode, type RunPool } from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { countReaches, liveWithEnvironment, uniqueMarker } from "../../helpers/processes.js";

failOnUnhandledRejections();

const linux = process.platform === "linux";
const pools: RunPool[] = [];
/** An unconfined pool whose runners carry `EARS_POOL_MARK=<marker>` in their environment. */
function markedPool(size: number, extra: { cwd?: string } = {}) {
  const marker = uniqueMarker();
  const env = { ...process.env, EARS_POOL_MARK: marker };
  const pool = createRunPool({ size, sandbox: false, env, ...extra });
  pools.push(pool);
  return { pool, env, entry: `EARS_POOL_MARK=${marker}` };
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe("a run pool", () => {
  it("runs a body with a capability call on a warm runner: the report of a cold run, plus pooled: true", async () => {
    const { pool } = markedPool(1);
    const code = 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum * 2;';
    const capabilities = {
      add: (args: unknown) => {
        const { a, b } = args as { a: number; b: number };
        return { sum: a + b };
      },
    };
    const pooled = await runCode({ code, capabilities, pool, sandbox: false });
    const cold = await runCode({ code, capabilities, sandbox: false });
    // Reported at its result while the host kills the runner (report-at-result.test.ts): no exit yet, unlike a cold run's.
    expect(pooled).toMatchObject({ ok: true, pooled: true, outcome: { structured: 6 } });
    expect(pooled.exit).toBeUndefined();
    expect(cold.exit).toBeDefined();
    expect(cold.pooled).toBeUndefined();
    expect(pooled.calls.map((call) => call.name)).toEqual(["add"]);
    // The same keys as a cold run's report, plus pooled, but for the exit.
    expect(Object.keys(pooled).sort()).toEqual([...Object.keys(cold).filter((key) => key !== "exit"), "pooled"].sort());
    expect(pooled.hello).toEqual(cold.hello);
    expect(pooled.usage?.calls).toBe(1);
  });

  it.runIf(linux)("runs 12 bodies at once on a pool of 2: every result its own, every run on a fresh runner, none left after", async () => {
    const { pool, entry } = markedPool(2);
    const reports = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        runCode({ code: "await new Promise((r) => setTimeout(r, 10));\nreturn { n: input, pid: process.pid };", input: n, pool }),
      ),
    );
    const results = reports.map((report) => report.outcome?.structured as { n: number; pid: number });
    expect(reports.every((report) => report.ok && report.pooled)).toBe(true);
    expect(results.map((result) => result.n)).toEqual([...Array(12).keys()]);
    expect(new Set(results.map((result) => result.pid)).size).toBe(12);
    expect(reports.map((report) => report.pid)).toEqual(results.map((result) => result.pid));
    await pool.close();
    expect(liveWithEnvironment(entry)).toEqual([]);
  });

  it("runs the next body after one that crashed its runner, and after one that killed it", async () => {
    const { pool } = markedPool(1);
    const exited = await runCode({ code: "process.exit(7);", pool });
    expect(exited).toMatchObject({ ok: false, pooled: true, exit: { code: 7 }, failure: { code: HostFailureCode.GuestCrashed } });
    const killed = await runCode({ code: 'process.kill(process.pid, "SIGKILL");\nawait new Promise(() => {});', pool });
    expect(killed).toMatchObject({ ok: false, pooled: true, exit: { signal: "SIGKILL" }, failure: { code: HostFailureCode.GuestCrashed } });
    const next = await runCode({ code: "return 'fine';", pool });
    expect(next).toMatchObject({ ok: true, pooled: true, outcome: { structured: "fine" } });
  });

  it.runIf(linux)("replaces a runner that dies while it waits", async () => {
    const { pool, entry } = markedPool(1);
    expect(await countReaches(() => pool.ready, 1, 10_000)).toBe(1);
    const [idle] = liveWithEnvironment(entry);
    process.kill(idle!, "SIGKILL");
    // The pool starts a replacement when it sees the exit (a run taking the runner in that instant fails as a crash would).
    const replaced = () => liveWithEnvironment(entry).filter((pid) => pid !== idle).length;
    expect(await countReaches(replaced, 1, 10_000)).toBe(1);
    const report = await runCode({ code: "return process.pid;", pool });
    expect(report).toMatchObject({ ok: true, pooled: true });
    expect(report.outcome?.structured).not.toBe(idle);
  });

  it.runIf(linux)("close() stops the idle runners and resolves only once no process of the pool is left", async () => {
    const { pool, entry } = markedPool(3);
    expect(await countReaches(() => pool.ready, 3, 10_000)).toBe(3);
    expect(liveWithEnvironment(entry)).toHaveLength(3);
    expect((await runCode({ code: "return 1;", pool })).ok).toBe(true);
    await pool.close();
    expect(pool.closed).toBe(true);
    expect(liveWithEnvironment(entry)).toEqual([]);
    await pool.close(); // again: the same, settled
  });

  it.runIf(linux)("close() while its runners are still starting leaves no process and no directory of theirs", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "ears-pool-close-"));
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = scratch;
    try {
      const { pool, entry } = markedPool(3);
      await pool.close();
      expect(liveWithEnvironment(entry)).toEqual([]);
      expect(readdirSync(scratch)).toEqual([]);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("lets a run under way finish on close(), ends a run waiting for a runner with Aborted, and refuses runs after", async () => {
    const { pool } = markedPool(1);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const inCall = new Promise<void>((resolve) => (holding = resolve));
    const hold = () => {
      holding();
      return held.then(() => "");
    };
    const running = runCode({ code: 'await ears.call("hold");\nreturn "finished";', pool, capabilities: { hold } });
    await inCall;
    const waiting = runCode({ code: "return 'never';", pool });
    const closing = pool.close();
    let closed = false;
    void closing.then(() => (closed = true));
    expect(await waiting).toMatchObject({ ok: false, pooled: true, failure: { code: HostFailureCode.Aborted } });
    expect((await waiting).failure?.message).toContain("pool was closed");
    expect(() => runCode({ code: "return 1;", pool })).toThrow(/pool is closed/);
    expect(closed).toBe(false); // the run under way holds close() until it is over
    release();
    expect(await running).toMatchObject({ ok: true, pooled: true, outcome: { structured: "finished" } });
    await closing;
  });

  it("gives a run that waits longer than its helloTimeoutMs for a runner HelloTimeout, and an aborted one Aborted", async () => {
    const { pool } = markedPool(1);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const busy = runCode({ code: 'await ears.call("hold");', pool, capabilities: { hold: () => held.then(() => "") } });
    await new Promise((resolve) => setTimeout(resolve, 0));
    const late = await runCode({ code: "return 1;", pool, limits: { helloTimeoutMs: 1 } });
    expect(late).toMatchObject({ ok: false, pooled: true, failure: { code: HostFailureCode.HelloTimeout } });
    expect(late.failure?.message).toContain("no runner of the run pool was ready");
    const stop = new AbortController();
    const aborted = runCode({ code: "return 1;", pool, signal: stop.signal });
    stop.abort(new Error("enough"));
    expect(await aborted).toMatchObject({ ok: false, pooled: true, failure: { code: HostFailureCode.Aborted } });
    release();
    expect((await busy).ok).toBe(true);
  });

  it("reports a runner that cannot start on the next run, and recovers once it can (with back-off, never a hang)", async () => {
    const base = mkdtempSync(join(tmpdir(), "ears-pool-cwd-"));
    const cwd = join(base, "later");
    try {
      const { pool } = markedPool(1, { cwd });
      const first = await runCode({ code: "return 1;", pool });
      expect(first).toMatchObject({ ok: false, pooled: true, failure: { code: HostFailureCode.SpawnFailed } });
      expect(first.failure?.message).toContain("the run pool's runner did not start");
      expect(first.failure?.message).toContain("ENOENT");
      // Backing off, not spinning: a second later, a handful of starts were tried, not hundreds.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const later = await runCode({ code: "return 1;", pool });
      const tries = Number(/\((\d+) failed starts in a row; the pool tries again in (\d+) ms/.exec(later.failure?.message ?? "")?.[1]);
      expect(tries).toBeGreaterThanOrEqual(2);
      expect(tries).toBeLessThanOrEqual(6);
      mkdirSync(cwd);
      // The pool tries again after its back-off (100 ms, then 200, 400, ...): a run soon gets a runner.
      let report = await runCode({ code: "return process.cwd();", pool });
      for (let tries = 0; !report.ok && tries < 100; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        report = await runCode({ code: "return process.cwd();", pool });
      }
      expect(report).toMatchObject({ ok: true, pooled: true, outcome: { structured: cwd } });
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  describe("options", () => {
    it("refuses a run whose sandbox, cwd, env or pool-wide limit differs from the pool's, naming it", () => {
      const { pool, env } = markedPool(1);
      expect(() => runCode({ code: "", pool, sandbox: true })).toThrow(TypeError);
      expect(() => runCode({ code: "", pool, sandbox: true })).toThrow(/options\.sandbox differs from the pool's/);
      expect(() => runCode({ code: "", pool, cwd: tmpdir() })).toThrow(/options\.cwd differs/);
      expect(() => runCode({ code: "", pool, env: { ...env, EXTRA: "1" } })).toThrow(/options\.env differs/);
      for (const limit of ["memoryBytes", "processes", "cpuTimeMs", "tmpBytes", "maxFrameBytes", "maxStderrBytes"] as const) {
        expect(() => runCode({ code: "", pool, limits: { [limit]: 12345 } }), limit).toThrow(
          new RegExp(`options\\.limits\\.${limit} differs`),
        );
      }
      expect(() => runCode({ code: "", pool: {} as RunPool })).toThrow(/must be a pool made by createRunPool/);
    });

    it("takes a run that repeats the pool's options, and per-run options of its own", async () => {
      const { pool, env } = markedPool(1);
      const report = await runCode({
        code: "await ears.log('hi');\nreturn input;",
        pool,
        sandbox: false,
        env: { ...env },
        input: { x: 1 },
        limits: { runTimeoutMs: 30_000, callTimeoutMs: 1000, memoryBytes: 1024 * 1024 * 1024, maxLogs: 5 },
        killGraceMs: 100,
      });
      expect(report).toMatchObject({ ok: true, pooled: true, outcome: { structured: { x: 1 } }, logs: [{ content: "hi" }] });
    });

    it("gives the run's onStderr the runner's stderr, and checks types before taking a runner (a CompileError uses none)", async () => {
      const { pool } = markedPool(1);
      expect(await countReaches(() => pool.ready, 1, 10_000)).toBe(1);
      const refused = await runCode({ code: "const n: number = 'text';\nreturn n;", typecheck: true, pool });
      expect(refused).toMatchObject({ ok: false, failure: { code: HostFailureCode.CompileError } });
      expect(refused.pooled).toBeUndefined();
      expect(pool.ready).toBe(1);
      const chunks: string[] = [];
      const report = await runCode({
        code: 'process.stderr.write("to the run\'s stderr\\n");\nreturn 1;',
        pool,
        onStderr: (chunk) => chunks.push(chunk),
      });
      expect(report).toMatchObject({ ok: true, pooled: true });
      expect(chunks.join("")).toContain("to the run's stderr\n");
      expect(report.stderr).toContain("to the run's stderr\n");
    });

    it("refuses bad pool options: size, a per-run limit, an unknown option, a bad sandbox", () => {
      expect(() => createRunPool({ size: 0 })).toThrow(RangeError);
      expect(() => createRunPool({ size: 1.5 })).toThrow(/size must be an integer from 1 to 64/);
      expect(() => createRunPool({ limits: { runTimeoutMs: 5 } })).toThrow(/limits\.runTimeoutMs is each run's/);
      expect(() => createRunPool({ capabilities: {} } as never)).toThrow(/unknown option "capabilities"/);
      expect(() => createRunPool({ sandbox: "yes" as never })).toThrow(/createRunPool: options\.sandbox must be/);
      expect(() => createRunPool({ limits: { memoryBytes: -1 } })).toThrow(RangeError);
    });
  });
});

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});
