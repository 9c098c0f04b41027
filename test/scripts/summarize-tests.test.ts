// scripts/summarize-tests.mjs writes the line CI reads ("N passed, N failed"): every failure must count once.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "ears-summarize-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function summarize(...args: string[]) {
  const run = spawnSync(process.execPath, ["scripts/summarize-tests.mjs", ...args], { encoding: "utf8" });
  return { lines: run.stdout.trim().split("\n"), status: run.status };
}

function report(name: string, fields: object): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(fields));
  return path;
}

const passing = { numPassedTests: 5, numFailedTests: 0, numFailedTestSuites: 0, numPendingTests: 1, testResults: [] };

describe("summarize-tests", () => {
  it("adds up reports and passing checks", () => {
    expect(summarize(report("a.json", passing), report("b.json", passing), "--check", "types=0")).toEqual({
      lines: ["11 passed, 0 failed, 2 skipped"],
      status: 0,
    });
  });

  it("counts a failed test once, though vitest also counts the describe block around it as a failed suite", () => {
    const failedInDescribe = {
      numPassedTests: 3,
      numFailedTests: 1,
      numFailedTestSuites: 2,
      testResults: [{ status: "failed", assertionResults: [{ status: "passed" }, { status: "failed" }] }],
    };
    expect(summarize(report("c.json", failedInDescribe))).toEqual({ lines: ["3 passed, 1 failed"], status: 1 });
  });

  it("counts a test file that failed to load, which ran no test", () => {
    const notLoaded = {
      numPassedTests: 2,
      numFailedTests: 0,
      numFailedTestSuites: 1,
      testResults: [{ status: "failed", assertionResults: [] }],
    };
    expect(summarize(report("d.json", notLoaded))).toEqual({ lines: ["2 passed, 1 failed"], status: 1 });
  });

  it("counts a missing report and a failed check, saying which", () => {
    const { lines, status } = summarize(join(dir, "missing.json"), "--check", "lint (ESLint, Prettier)=1");
    expect(lines[0]).toMatch(/^could not read the vitest report .*missing\.json: /);
    expect(lines.slice(1)).toEqual(["lint (ESLint, Prettier) failed (exit status 1)", "0 passed, 2 failed"]);
    expect(status).toBe(1);
  });

  it("prints each labelled group's counts (one per Node version), then the one total line last", () => {
    const failing = { numPassedTests: 2, numFailedTests: 1, testResults: [{ status: "failed", assertionResults: [{ status: "failed" }] }] };
    const { lines, status } = summarize(
      "--check",
      "type tests=0",
      "--label",
      "Node 24.22.3",
      report("e.json", passing),
      report("f.json", passing),
      "--label",
      "Node 22.12.0 (fast part)",
      report("g.json", failing),
      "--check",
      "a=b=0",
    );
    expect(lines).toEqual([
      "other: 1 passed, 0 failed",
      "Node 24.22.3: 10 passed, 0 failed, 2 skipped",
      "Node 22.12.0 (fast part): 3 passed, 1 failed",
      "14 passed, 1 failed, 2 skipped",
    ]);
    expect(status).toBe(1);
  });
});
