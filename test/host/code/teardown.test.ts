/**
 * How runCode ends its runner (issue 33, issue 29.7): at the result and past a deadline the runner is
 * killed at once (it has nothing to clean up), and the report still settles only once the runner, what it
 * started, its directory and its cgroup are gone. Real processes, found from outside by a marker.
 */
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HostFailureCode, runCode } from "../../../src/host/index.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { exists, liveWith, markersKilledAfterEach } from "../../helpers/processes.js";

failOnUnhandledRejections();

const newMarker = markersKilledAfterEach();

/** A body that starts `sleep <marker>` beside itself (in its group, or its sandbox) and reports its directory. */
function startsSleep(marker: string, then: string): string {
  return (
    'const { spawn } = process.getBuiltinModule("node:child_process");\n' +
    `spawn("sleep", ["${marker}"], { stdio: "ignore" });\n` +
    "await ears.log(process.cwd());\n" +
    then
  );
}

const sandboxes = [false, ...(bwrapPath !== undefined ? [true] : [])];

describe.runIf(process.platform === "linux")("runCode ends its runner at once", () => {
  for (const sandbox of sandboxes) {
    const where = sandbox ? "sandboxed" : "unconfined";

    it(`reports a busy loop past runTimeoutMs as RunTimeout once it and its child are gone, not killGraceMs later (${where})`, async () => {
      const marker = newMarker();
      // A grace no test could wait out: the old steps (stdin, killGraceMs, SIGTERM, killGraceMs) never end in time.
      const report = await runCode({
        code: startsSleep(marker, "for (;;) {}"),
        sandbox,
        killGraceMs: 600_000,
        limits: { runTimeoutMs: 1500 },
      });
      expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
      expect(report.forcedStop).toBe("SIGKILL");
      expect(exists(report.pid!)).toBe(false);
      expect(liveWith(marker)).toEqual([]);
      const cwd = report.logs[0]?.content;
      expect(typeof cwd).toBe("string");
      expect(existsSync(cwd as string)).toBe(false);
    });

    it(`ends at its result a runner that would not end itself, reporting once it, its child, its dir are gone (${where})`, async () => {
      const marker = newMarker();
      // An exit handler that never returns: the runner cannot end by itself after its result.
      const report = await runCode({
        code: startsSleep(marker, 'process.on("exit", () => { for (;;) {} });\nreturn "done";'),
        sandbox,
        killGraceMs: 600_000,
      });
      expect(report).toMatchObject({ ok: true, outcome: { structured: "done" } });
      expect(report.forcedStop).toBeUndefined();
      expect(exists(report.pid!)).toBe(false);
      expect(liveWith(marker)).toEqual([]);
      expect(existsSync(report.logs[0]?.content as string)).toBe(false);
    });
  }
});
