/**
 * Run pools (issue 20): nothing of one pooled run reaches the next. One body leaves a global, a file in
 * /tmp and in its working directory, an environment variable and a background process; the next body on
 * the same pool (size 1, so a fresh runner each time) looks for each. Sandboxed where bubblewrap is here
 * (its own /tmp per runner); unconfined for what a process boundary alone isolates.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createRunPool, runCode, type RunPool } from "../../../src/host/index.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneWithin, killAllWith, uniqueMarker } from "../../helpers/processes.js";

failOnUnhandledRejections();

const pools: RunPool[] = [];
const markers: string[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  for (const marker of markers.splice(0)) killAllWith(marker);
});

/** Leaves everything it can behind: a global, files, an environment variable, a detached `sleep <marker>`. */
const LEAVE = `const fs = process.getBuiltinModule("node:fs");
const { spawn } = process.getBuiltinModule("node:child_process");
globalThis.leftBehind = "global";
process.env.LEFT_BEHIND = "environment";
fs.writeFileSync("/tmp/left-behind", "tmp");
fs.writeFileSync("left-behind", "cwd");
spawn("sleep", [input], { detached: true, stdio: "ignore" }).unref();
return { pid: process.pid, cwd: process.cwd() };`;

/** Looks for each; `input` is the marker (a process with it in its command line is the leftover sleep). */
const LOOK = `const fs = process.getBuiltinModule("node:fs");
const processes = fs.readdirSync("/proc").filter((entry) => /^\\d+$/.test(entry)).filter((pid) => {
  try { return fs.readFileSync("/proc/" + pid + "/cmdline", "utf8").split("\\0").includes(input); } catch { return false; }
});
return {
  global: globalThis.leftBehind ?? null,
  environment: process.env.LEFT_BEHIND ?? null,
  tmp: fs.existsSync("/tmp/left-behind"),
  cwd: fs.existsSync("left-behind"),
  processes: processes.length,
  pid: process.pid,
  dir: process.cwd(),
};`;

const nothingSeen = { global: null, environment: null, cwd: false, processes: 0 };

describe.runIf(bwrapPath !== undefined)("pooled runs, sandboxed", () => {
  it("see nothing the run before left: global, /tmp, working directory, environment, background process; each its own pid", async () => {
    const pool = createRunPool({ size: 1, sandbox: true });
    pools.push(pool);
    const marker = uniqueMarker();
    markers.push(marker);
    const first = await runCode({ code: LEAVE, input: marker, pool });
    expect(first).toMatchObject({ ok: true, pooled: true, sandbox: { mechanism: "bubblewrap" } });
    // The leftover sleep died with its sandbox (the host's view of every process).
    expect(await goneWithin(marker, 5000), "the first run's background process").toEqual([]);
    const second = await runCode({ code: LOOK, input: marker, pool });
    expect(second).toMatchObject({ ok: true, pooled: true });
    const seen = second.outcome?.structured as typeof nothingSeen & { tmp: boolean; pid: number; dir: string };
    expect(seen).toMatchObject({ ...nothingSeen, tmp: false });
    expect(second.pid).not.toBe(first.pid);
    expect(seen.dir).not.toBe((first.outcome?.structured as { cwd: string }).cwd);
  });

  it.runIf(hostCgroupPlan().version !== null)(
    "with limits: each runner has the pool's sandbox and limits, as a cold run with the same options has",
    async () => {
      const limits = { memoryBytes: 256 * 1024 * 1024, processes: 64, tmpBytes: 4 * 1024 * 1024 };
      const pool = createRunPool({ size: 1, sandbox: true, limits });
      pools.push(pool);
      // Writing past tmpBytes into the runner's own /tmp fails inside the sandbox.
      const code = `const fs = process.getBuiltinModule("node:fs");
try { fs.writeFileSync("/tmp/big", Buffer.alloc(8 * 1024 * 1024)); return "wrote"; } catch (e) { return e.code; }`;
      const pooled = await runCode({ code, pool, limits: { runTimeoutMs: 30_000 } });
      const cold = await runCode({ code, sandbox: true, limits });
      expect(pooled).toMatchObject({ ok: true, pooled: true, outcome: { structured: "ENOSPC" } });
      expect(cold.outcome?.structured).toBe("ENOSPC");
      expect(pooled.limits).toEqual(cold.limits);
      expect(pooled.limits?.memoryBytes).toMatchObject({
        value: limits.memoryBytes,
        requested: true,
        enforcedBy: expect.stringMatching(/^cgroup/),
      });
      expect({ ...pooled.sandbox, readable: undefined, writable: undefined }).toEqual({
        ...cold.sandbox,
        readable: undefined,
        writable: undefined,
      });
    },
  );
});

describe.runIf(process.platform === "linux")("pooled runs, unconfined", () => {
  it("see no global, environment variable, working directory file or background process of the run before", async () => {
    const pool = createRunPool({ size: 1, sandbox: false });
    pools.push(pool);
    const marker = uniqueMarker();
    markers.push(marker);
    const first = await runCode({ code: LEAVE.replace('fs.writeFileSync("/tmp/left-behind", "tmp");\n', ""), input: marker, pool });
    expect(first).toMatchObject({ ok: true, pooled: true });
    const second = await runCode({ code: LOOK, input: marker, pool });
    // A process that left the runner's session is ended by the run's cgroup; without one it is the documented limit.
    const { processes: _processes, ...rest } = nothingSeen;
    expect(second.outcome?.structured).toMatchObject(hostCgroupPlan().version !== null ? nothingSeen : rest);
    expect(second.pid).not.toBe(first.pid);
  });
});
