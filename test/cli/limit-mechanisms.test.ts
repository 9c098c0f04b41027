/**
 * The mechanism of each limit, on the built CLI: `--json` carries `limits.*.enforcedBy`, `usage.source` and
 * `sandbox.mechanism`; `--verbose`'s timeline and `ears timeline`'s page say them; a limit nothing enforced is
 * a warning on stderr naming it and that it is not enforced (also with --quiet and --json), said once per run
 * and not again as a Node process warning. Without a cgroup (as another uid): test/host/limits/environments.test.ts.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { RunReport } from "../../src/host/index.js";
import { hostCgroupPlan } from "../../src/host/limits/cgroup.js";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { ears } from "../helpers/spawn-ears.js";

const dir = mkdtempSync(join(tmpdir(), "ears-limit-mechanisms-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The cgroup's name as the report gives it, or what stands in without one (rlimits and the watchdog). */
function memoryMechanism(): string {
  const plan = hostCgroupPlan();
  return plan.version === null ? "rlimit+watchdog" : `cgroup-${plan.version}`;
}

const TMP_WARNING =
  "ears: warning: limits.tmpBytes (--tmp-size, default 256 MiB) is not enforced: the guest runs unconfined, " +
  "so it has no private /tmp to bound; install bubblewrap (apt-get install bubblewrap) and run the guest sandboxed";

describe.runIf(process.platform === "linux")("the mechanism of each limit, from the built CLI", () => {
  it("--json carries what enforced each limit, what measured the usage and which sandbox ran; unconfined, /tmp is warned of", async () => {
    const run = await ears(["exec", "--json", "--no-sandbox", "--code", "return 1"]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as RunReport;
    expect(report.sandbox).toBeNull();
    expect(report.limits?.memoryBytes).toMatchObject({ value: 2 ** 30, enforcedBy: memoryMechanism() });
    expect(report.limits?.tmpBytes).toMatchObject({ value: 2 ** 28, enforcedBy: null, note: expect.stringMatching(/^not enforced: /) });
    expect(report.usage?.source).toBe(hostCgroupPlan().version === null ? "proc" : memoryMechanism());
    // Once, on stderr, naming the limit and that it is not enforced; not repeated as Node's own warning.
    expect(run.stderr.split("\n").filter((line) => line.includes("not enforced"))).toEqual([TMP_WARNING]);
    expect(run.stderr).not.toContain("EARS_LIMIT_NOT_ENFORCED");
  });

  it("--quiet still warns of a limit that was not enforced", async () => {
    const run = await ears(["exec", "--quiet", "--no-sandbox", "--code", "return 1"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.trim().split("\n")).toEqual([TMP_WARNING]);
  });

  it.runIf(bwrapPath !== undefined)("sandboxed: no warning; --json names bubblewrap for the sandbox and /tmp", async () => {
    const run = await ears(["exec", "--json", "--code", "return 1"]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as RunReport;
    expect(report.sandbox?.mechanism).toBe("bubblewrap");
    expect(report.limits?.tmpBytes).toMatchObject({ enforcedBy: "bubblewrap" });
    expect(report.limits?.processes).toMatchObject({ value: 256, enforcedBy: expect.any(String) });
    expect(run.stderr).not.toContain("warning");
  });

  it("--verbose's timeline lists each limit with its mechanism, the sandbox and what measured the usage", async () => {
    const run = await ears(["exec", "--verbose", "--no-sandbox", "--processes", "64", "--code", "return 1"]);
    expect(run.code, run.stderr).toBe(0);
    const mechanism = memoryMechanism();
    expect(run.stderr).toContain(`ears: | limits: memory 1 GiB (${mechanism}), processes 64 (${mechanism}), /tmp 256 MiB (NOT ENFORCED)\n`);
    expect(run.stderr).toContain(
      `ears: | sandbox: none (unconfined); usage measured by ${hostCgroupPlan().version === null ? "proc" : mechanism}\n`,
    );
  });

  it("ears timeline's page shows the limits and their mechanisms from the recording", async () => {
    const transcript = join(dir, "run.ndjson");
    const recorded = await ears(["exec", "--no-sandbox", "--record", transcript, "--cpu-time", "20", "--code", "return 1"]);
    expect(recorded.code, recorded.stderr).toBe(0);
    const page = await ears(["timeline", transcript, "-o", "-"]);
    expect(page.code, page.stderr).toBe(0);
    const mechanism = memoryMechanism();
    expect(page.stdout).toContain(
      `<li>limits: memory 1 GiB (${mechanism}), processes 256 (${mechanism}), CPU time 20 s (${mechanism}), ` +
        "/tmp 256 MiB (NOT ENFORCED)</li>",
    );
    expect(page.stdout).toMatch(/<li>usage: cpu \d+ ms.*<li>usage measured by (cgroup-v[12]|proc)<\/li>/);
    expect(readFileSync(transcript, "utf8")).toContain('"enforcedBy"');
  });
});
