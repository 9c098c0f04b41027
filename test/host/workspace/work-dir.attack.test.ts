/**
 * Issue 28 item 6: runCode's private working directory was a directory on the host's disk with no bound (a
 * body wrote 2 GiB and 124,724 files in 20 s). It now holds at most `limits.tmpBytes` bytes: past them, ENOSPC
 * inside the body, and the host's disk holds none of it. A cold sandboxed run's is a tmpfs bubblewrap mounts
 * inside the sandbox (issue 33: no mount for the host to fork), whose files are bounded by the run's memory
 * limit (the kernel charges each one to the run's memory cgroup, as in its /tmp); a pooled runner's is a tmpfs
 * the host mounts (src/host/workspace/bounded-dir.ts), which also stops at filesFor(tmpBytes) files. The
 * limits come from cgroups and the host's mount, so these run where the host is root.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createRunPool, runCode, type RunPool } from "../../../src/host/index.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { filesFor } from "../../../src/host/workspace/bounded-dir.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { goneFromDisk } from "../../helpers/processes.js";
import { within } from "../../helpers/spawned-guest.js";

failOnUnhandledRejections();

const MiB = 1024 * 1024;
const TMPFS_MAGIC = 0x01021994;
const root = process.platform === "linux" && process.getuid?.() === 0;
const plan = hostCgroupPlan();
const hasMemoryCgroup =
  plan.version === "v2" ? plan.controllers.includes("memory") : plan.version === "v1" && plan.parents.memory !== undefined;
const pools: RunPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** Fills the working directory with 1 MiB files until a write fails; what filesystem it is on. */
const FILL = `const fs = process.getBuiltinModule("node:fs");
let written = 0, error = null;
for (let i = 0; i < 64 && error === null; i++) {
  try { fs.writeFileSync("fill-" + i, Buffer.alloc(1024 * 1024)); written += fs.statSync("fill-" + i).size; }
  catch (e) { error = e.code; }
}
return { written, error, type: fs.statfsSync(".").type, cwd: process.cwd() };`;

/** Creates empty files in the working directory until one fails (at most 100,000). */
const MANY = `const fs = process.getBuiltinModule("node:fs");
let made = 0, error = null;
for (; made < 100000 && error === null; made++) {
  try { fs.writeFileSync("f" + made, ""); } catch (e) { error = e.code; made--; }
}
return { made, error };`;

describe.runIf(root && bwrapPath !== undefined)("runCode's private working directory (issue 28.6)", () => {
  const limits = { tmpBytes: 8 * MiB };

  it("a body writing past tmpBytes in its working directory gets ENOSPC; the directory is a tmpfs, gone after", async () => {
    const report = await runCode({ code: FILL, sandbox: true, limits });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    const seen = report.outcome?.structured as { written: number; error: string; type: number; cwd: string };
    expect(seen.error).toBe("ENOSPC");
    expect(seen.written).toBeLessThanOrEqual(8 * MiB);
    expect(seen.written).toBeGreaterThanOrEqual(6 * MiB);
    // Not the host's disk: the kernel says what the directory is on.
    expect(seen.type).toBe(TMPFS_MAGIC);
  });

  // Needs the memory controller: without it memoryBytes cannot be asked for (the run would not start).
  it.runIf(hasMemoryCgroup)(
    "a cold sandboxed body making many files is ended at its memory limit: each file is charged to the run",
    async () => {
      const report = await runCode({ code: MANY, sandbox: true, limits: { ...limits, memoryBytes: 96 * MiB } });
      expect(report.failure?.code, JSON.stringify(report.outcome)).toBe("MemoryLimit");
    },
  );

  it("a cold sandboxed body's files are in its sandbox only: the host's directory stays empty while it runs", async () => {
    const code = `const fs = process.getBuiltinModule("node:fs");
fs.writeFileSync("inside", "x".repeat(1000));
const r = await ears.call("look", { cwd: process.cwd() });
return { host: r.structured, own: fs.readdirSync(".") };`;
    const seen: string[] = [];
    const look = (args: unknown) => {
      const { cwd } = args as { cwd: string };
      seen.push(cwd);
      return { entries: readdirSync(cwd) };
    };
    const report = await runCode({ code, sandbox: true, limits, capabilities: { look } });
    expect(report.ok, JSON.stringify(report.failure)).toBe(true);
    expect(report.outcome?.structured).toEqual({ host: { entries: [] }, own: ["inside"] });
    expect(seen[0]).toMatch(/ears-code-/);
    expect(await goneFromDisk(seen, 5000)).toEqual([]);
  });

  it("a pooled runner's working directory stops at the file bound with ENOSPC (the host's mount)", async () => {
    const pool = createRunPool({ size: 1, sandbox: true, limits });
    pools.push(pool);
    const report = await runCode({ code: MANY, pool });
    expect(report).toMatchObject({ ok: true, pooled: true });
    const seen = report.outcome?.structured as { made: number; error: string };
    expect(seen.error).toBe("ENOSPC");
    expect(seen.made).toBeLessThanOrEqual(filesFor(8 * MiB));
  });

  it("a pooled runner's working directory is bounded the same way", async () => {
    const pool = createRunPool({ size: 1, sandbox: true, limits });
    pools.push(pool);
    const report = await runCode({ code: FILL, pool });
    expect(report).toMatchObject({ ok: true, pooled: true });
    expect(report.outcome?.structured).toMatchObject({ error: "ENOSPC", type: TMPFS_MAGIC });
  });
});

describe.runIf(root)("a bounded directory of a host that is SIGKILLed", () => {
  // A run pool makes each runner's directory before the runner exists (and removes it after the runner is
  // gone): the watchdog must cover the directory itself, from the moment it is made, not only through a runner.
  it("is unmounted and removed by the watchdog, though no runner was ever started in it", async () => {
    const fixture = fileURLToPath(new URL("../../../fixtures/hostile/bounded-dir-host.ts", import.meta.url));
    const host = spawn(process.execPath, ["--import", "tsx", fixture], { stdio: ["ignore", "pipe", "inherit"] });
    const [dir = "", bounded] = await within(
      new Promise<string[]>((resolve, reject) => {
        let said = "";
        host.stdout.on("data", (chunk: Buffer) => {
          said += chunk.toString();
          if (said.includes("ready")) resolve(said.split("\n")[0]?.split(" ") ?? []);
        });
        host.once("exit", () => reject(new Error("the host ended before it made its directory")));
      }),
      "the host's start",
    );
    expect(bounded).toBe("true");
    host.kill("SIGKILL");
    expect(await goneFromDisk([dir], 5000), "directory left 5 s after the host was killed").toEqual([]);
  });
});
