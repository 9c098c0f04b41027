/**
 * The resource limits from the command line: --memory, --processes, --cpu-time, --tmp-size on `ears run`
 * and `ears exec` (parsed, refused when malformed, passed to the host), the failure named in flag terms,
 * and the one-line usage summary (human output) or the numbers (--json).
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReport } from "../../src/host/index.js";
import { hostCgroupPlan } from "../../src/host/limits/cgroup.js";
import { usageLine } from "../../src/cli/report-output.js";
import { inFlagTerms, resourceLimitsOf } from "../../src/cli/run-command.js";
import { parseCount, parseSize, UsageError } from "../../src/cli/usage.js";
import { cliInProcess } from "../helpers/cli-in-process.js";
import { ears } from "../helpers/spawn-ears.js";

const CONSUME = resolve("fixtures/hostile/consume.mjs");
const MiB = 1024 * 1024;

describe("limit flags", () => {
  it("sizes take bytes or K, M, G (powers of 1024); counts whole numbers; anything else is a usage error", () => {
    expect(parseSize("memory", "512M")).toBe(512 * MiB);
    expect(parseSize("memory", "1G")).toBe(1024 * MiB);
    expect(parseSize("memory", "1.5g")).toBe(1536 * MiB);
    expect(parseSize("tmp-size", "64KiB")).toBe(64 * 1024);
    expect(parseSize("tmp-size", "65536")).toBe(65536);
    expect(parseSize("memory", undefined)).toBeUndefined();
    for (const bad of ["", "0", "-1M", "12T", "M", "1e3", "0.1"]) expect(() => parseSize("memory", bad), bad).toThrow(UsageError);
    expect(() => parseSize("memory", "lots")).toThrow('--memory takes a size in bytes, or with K, M or G (e.g. --memory 512M), got "lots"');
    // Under an option's least size is a mistake (10 bytes meant as 10M), refused with the accepted forms (issue 29 item 9).
    expect(() => parseSize("memory", "10")).toThrow(
      "--memory 10 is 10 bytes, under the least of 16 MiB; it takes a size in bytes, or with K, M or G " +
        "(e.g. --memory 512M) of at least 16 MiB",
    );
    expect(parseSize("memory", "16M")).toBe(16 * MiB);
    expect(() => parseSize("tmp-size", "4K")).toThrow("--tmp-size 4K is 4 KiB, under the least of 64 KiB;");
    expect(() => parseSize("max-result", "100")).toThrow("--max-result 100 is 100 bytes, under the least of 1 KiB;");
    expect(parseCount("processes", "64")).toBe(64);
    for (const bad of ["0", "2.5", "-3", "x"]) expect(() => parseCount("processes", bad), bad).toThrow(UsageError);
  });

  it("become the host's limits: --cpu-time in seconds", () => {
    expect(resourceLimitsOf({ memory: "256M", processes: "32", "cpu-time": "1.5", "tmp-size": "8M" })).toEqual({
      memoryBytes: 256 * MiB,
      processes: 32,
      cpuTimeMs: 1500,
      tmpBytes: 8 * MiB,
    });
    expect(resourceLimitsOf({})).toEqual({});
  });

  it.each([["run"], ["exec"]])("ears %s refuses a malformed limit with exit 64 before anything starts", async (command) => {
    const args = command === "run" ? ["run", "--memory", "big", "--", "node", CONSUME] : ["exec", "--memory", "big", "--code", "return 1"];
    const run = await cliInProcess(args);
    expect(run.code).toBe(64);
    expect(run.stderr).toContain("--memory takes a size in bytes");
  });

  it.each([["run"], ["exec"]])("ears %s --help lists the limit flags", async (command) => {
    const run = await cliInProcess([command, "--help"]);
    for (const flag of ["--memory", "--processes", "--cpu-time", "--tmp-size"]) expect(run.stdout).toContain(flag);
  });

  it("names the flag, not the option, in a failure", () => {
    const report = {
      failure: { code: "MemoryLimit", message: "the guest went past its memory limit of 5 bytes (limits.memoryBytes) and was killed" },
    };
    expect(inFlagTerms(report).failure.message).toBe("the guest went past its memory limit of 5 bytes (--memory) and was killed");
    const refused = {
      failure: {
        code: "SandboxUnavailable",
        message: "the guest was not started: limits.tmpBytes (8) was asked for but cannot be enforced: …",
      },
    };
    expect(inFlagTerms(refused).failure.message).toBe("the guest was not started: --tmp-size (8) was asked for but cannot be enforced: …");
  });
});

describe("the usage line", () => {
  it("says cpu, peak memory, processes and threads, each only when measured", () => {
    expect(
      usageLine({ source: "cgroup-v1", cpuMs: 119.6, peakMemoryBytes: 48 * MiB, peakProcesses: 3, peakThreads: 27, wallMs: 1, calls: 0 }),
    ).toBe("cpu 120 ms, memory 48 MiB peak, 3 processes, 27 threads");
    expect(usageLine({ source: "proc", peakProcesses: 1, peakThreads: 1, wallMs: 1, calls: 0 })).toBe("1 process, 1 thread");
    expect(usageLine({ source: "cgroup-v2", cpuMs: 1, peakMemoryBytes: 1.25 * MiB, peakProcesses: 1, wallMs: 1, calls: 0 })).toBe(
      "cpu 1 ms, memory 1.3 MiB peak, 1 process",
    );
    expect(usageLine({ source: "none", wallMs: 5, calls: 2 })).toBeUndefined();
    expect(usageLine(undefined)).toBeUndefined();
  });
});

describe.runIf(process.platform === "linux")("ears exec's usage line", () => {
  it("follows a body that ran, never a CompileError (no process started, nothing was measured)", async () => {
    const ran = await ears(["exec", "--code", "return 1;"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/^ears: cpu \d+ ms, memory [\d.]+ MiB peak, [13] process(es)?, \d+ threads$/m);
    const refused = await ears(["exec", "--code", "return (;"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("ears: the session failed: CompileError: the code was not run: code.ts:1:9");
    expect(refused.stderr).not.toMatch(/cpu|memory|process/);
  });
});

describe.runIf(hostCgroupPlan().version !== null)("ears run with limits", () => {
  it("ends a guest past --memory with MemoryLimit (exit 2), in flag terms, and prints what it cost", async () => {
    const run = await ears(["run", "--memory", "96M", "--input", '{"action":"memory","mib":160}', "--", "node", CONSUME]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "ears: the session failed: MemoryLimit: the guest went past its memory limit of 96 MiB (100663296 bytes; --memory)",
    );
    expect(run.stderr).toMatch(/^ears: cpu \d+ ms, memory \d+ MiB peak(, \d+ process(es)?)?, \d+ threads?$/m);
  });

  it("--json carries the limits and the usage numbers", async () => {
    const run = await ears([
      "run",
      "--json",
      "--processes",
      "64",
      "--cpu-time",
      "30",
      "--input",
      '{"action":"memory","mib":1}',
      "--",
      "node",
      CONSUME,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as RunReport;
    expect(report.limits?.processes).toMatchObject({ value: 64, requested: true });
    expect(report.limits?.cpuTimeMs).toMatchObject({ value: 30_000, requested: true });
    expect(report.usage).toMatchObject({
      cpuMs: expect.any(Number),
      peakMemoryBytes: expect.any(Number),
      peakProcesses: expect.any(Number),
    });
    expect(run.stderr).not.toMatch(/^ears: cpu /m);
  });
});

describe("ears doctor's resource limits", () => {
  it("says what enforces each limit, or why nothing does and the fix", async () => {
    const { limitsText } = await import("../../src/cli/doctor-command.js");
    const fix = "run the host as root where …";
    const text = limitsText({
      cgroup: { version: null, reason: "no cgroup v1 memory, pids or cpuacct hierarchy is mounted", fix },
      limits: {
        memoryBytes: { enforcedBy: null, note: "no cgroup memory controller can be used here", fix },
        processes: { enforcedBy: null, note: "no cgroup pids controller can be used here", fix },
        cpuTimeMs: { enforcedBy: "rlimit", note: "RLIMIT_CPU: per process, not per tree, in whole seconds", fix },
        tmpBytes: { enforcedBy: "bubblewrap" },
      },
    });
    expect(text.split("\n")).toEqual([
      "Resource limits (no cgroup: no cgroup v1 memory, pids or cpuacct hierarchy is mounted):",
      "no  memory (--memory)        no cgroup memory controller can be used here",
      `                             fix: ${fix}`,
      "no  processes (--processes)  no cgroup pids controller can be used here",
      `                             fix: ${fix}`,
      "ok  CPU time (--cpu-time)    rlimit (RLIMIT_CPU: per process, not per tree, in whole seconds)",
      `                             fix: ${fix}`,
      "ok  /tmp size (--tmp-size)   bubblewrap",
      "",
    ]);
  });

  it.runIf(process.platform === "linux")("--json carries them next to the confinement checks", async () => {
    const run = await cliInProcess(["doctor", "--json"]);
    const out = JSON.parse(run.stdout) as { confined: boolean; limits: { limits: Record<string, { enforcedBy: string | null }> } };
    expect(Object.keys(out.limits.limits)).toEqual(["memoryBytes", "processes", "cpuTimeMs", "tmpBytes"]);
    if (hostCgroupPlan().version !== null) expect(out.limits.limits.memoryBytes!.enforcedBy).toMatch(/^cgroup-v[12]$/);
  });
});
