/**
 * A pooled run is reported at its result (issue 33): the runner is killed then, and its teardown (its exit,
 * its group, its cgroup, its directory) goes on after the report, until `pool.settled()` resolves. Real
 * processes: a body leaves a `sleep <marker>` behind, and nothing of it may be alive once the teardown is over;
 * `close()` waits for every teardown; a runner keeps its admission slot until its teardown is over.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createRunAdmission, createRunPool, runCode, type RunPool } from "../../../src/host/index.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { killAllWith, liveWith, uniqueMarker } from "../../helpers/processes.js";

failOnUnhandledRejections();

const linux = process.platform === "linux";
const pools: RunPool[] = [];
const markers: string[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  for (const marker of markers.splice(0)) killAllWith(marker);
});

/**
 * Leaves a `sleep <input>` that ignores SIGTERM in its group (so a teardown takes the run's `killGraceMs`, then
 * SIGKILLs it), and says which of its cgroup directories (cgroup v1 or v2) it sees on the host.
 */
const LEAVE = `const fs = process.getBuiltinModule("node:fs");
const { spawn } = process.getBuiltinModule("node:child_process");
spawn("sh", ["-c", 'trap "" TERM; exec sleep "$0"', input], { stdio: "ignore" }).unref();
const dirs = fs.readFileSync("/proc/self/cgroup", "utf8").split("\\n").map((line) => line.split(":"))
  .filter((f) => f.length === 3 && /\\/ears-[^/]+$/.test(f[2]))
  .map(([, controllers, path]) => "/sys/fs/cgroup" + (controllers === "" ? "" : "/" + controllers.split(",")[0]) + path)
  .filter((dir) => fs.existsSync(dir));
return { dirs };`;

function pool(options: Parameters<typeof createRunPool>[0]): RunPool {
  const made = createRunPool(options);
  pools.push(made);
  return made;
}

function marker(): string {
  const made = uniqueMarker();
  markers.push(made);
  return made;
}

describe.runIf(linux)("a pooled run reported at its result", () => {
  it("has no exit in its report; once pool.settled() resolves, the runner, what it left and its cgroup are gone", async () => {
    const runs = pool({ size: 1, sandbox: false });
    const leftover = marker();
    const report = await runCode({ code: LEAVE, input: leftover, pool: runs });
    expect(report).toMatchObject({ ok: true, pooled: true });
    // The runner is being killed: its exit is not in the report (see docs/code.md, "Warm runs").
    expect(report.exit).toBeUndefined();
    expect(report.usage?.source).toBeDefined();
    await runs.settled();
    // Checked at once, not polled: the teardown was over when settled() resolved.
    expect(liveWith(leftover), "the body's background process").toEqual([]);
    expect(existsSync(`/proc/${report.pid}`), "the runner").toBe(false);
    const { dirs } = report.outcome?.structured as { dirs: string[] };
    if (hostCgroupPlan().version !== null) expect(dirs.length).toBeGreaterThan(0);
    for (const dir of dirs) expect(existsSync(dir), dir).toBe(false);
  });

  it.runIf(bwrapPath !== undefined)(
    "sandboxed: once pool.settled() resolves, bubblewrap and everything in its sandbox are gone",
    async () => {
      const runs = pool({ size: 1, sandbox: true });
      const leftover = marker();
      const report = await runCode({ code: LEAVE, input: leftover, pool: runs });
      expect(report).toMatchObject({ ok: true, pooled: true, sandbox: { mechanism: "bubblewrap" } });
      expect(report.exit).toBeUndefined();
      await runs.settled();
      expect(liveWith(leftover)).toEqual([]);
      expect(existsSync(`/proc/${report.pid}`), "bubblewrap").toBe(false);
    },
  );

  it("close() waits for every teardown: nothing of the runs is left once it resolves", async () => {
    const runs = pool({ size: 2, sandbox: false });
    const leftover = marker();
    const reports = await Promise.all(
      Array.from({ length: 4 }, (_, at) => runCode({ code: at % 2 === 0 ? LEAVE : HEAVY, input: leftover, pool: runs })),
    );
    expect(reports.map((report) => report.ok)).toEqual([true, true, true, true]);
    await runs.close();
    expect(liveWith(leftover)).toEqual([]);
    for (const report of reports) expect(existsSync(`/proc/${report.pid}`)).toBe(false);
  });

  it("a runner holds its admission slot until its teardown is over: never more runners alive than the cap", async () => {
    const admission = createRunAdmission({ maxConcurrentRuns: 2 });
    const runs = pool({ size: 2, sandbox: false, admission });
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, liveRunners())), 1);
    try {
      for (let round = 0; round < 2; round++) {
        const reports = await Promise.all(Array.from({ length: 6 }, () => runCode({ code: HEAVY, pool: runs })));
        expect(reports.every((report) => report.ok)).toBe(true);
      }
      await runs.settled();
    } finally {
      clearInterval(watch);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  });

  it("a run that fails is reported once its runner is gone, with its exit, as before", async () => {
    const runs = pool({ size: 1, sandbox: false });
    const report = await runCode({ code: "process.exit(3);", pool: runs });
    expect(report.ok).toBe(false);
    expect(report.exit).toEqual({ code: 3, signal: null });
    expect(existsSync(`/proc/${report.pid}`)).toBe(false);
  });
});

/** Touches 256 MiB, so the kernel takes a while to end the runner once it is killed (its teardown is long). */
const HEAVY = "globalThis.kept = Buffer.alloc(256 * 1024 * 1024, 1); return kept.length;";

/**
 * How many of this process's children are alive but the watchdog and the mount helper (one each per host): the
 * runners, counted until the kernel has ended them (a dying process's environment and command line are gone
 * before it is, its stat is not).
 */
function liveRunners(): number {
  let count = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const [state, parent] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z" || Number(parent) !== process.pid) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (command.includes("ears-watchdog") || command.includes("ears-mount-linux")) continue;
      count += 1;
    } catch {
      // Gone meanwhile.
    }
  }
  return count;
}
