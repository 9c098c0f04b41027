/**
 * Nothing outlives the run (issue 8 item 4): a guest's descendants are stopped with it, after a
 * successful run, at a deadline, and when the host process itself is SIGKILLed. Real processes, found
 * from outside through /proc by a marker in their command line. Linux only (/proc).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HostFailureCode, runGuest } from "../../src/host/index.js";
import { hostCgroupPlan } from "../../src/host/limits/cgroup.js";
import { failOnUnhandledRejections } from "../helpers/host.js";
import { goneWithin, liveWith, markersKilledAfterEach } from "../helpers/processes.js";

failOnUnhandledRejections();

const root = fileURLToPath(new URL("../../", import.meta.url));
const grandchild = `${root}fixtures/hostile/grandchild.mjs`;
const newMarker = markersKilledAfterEach();
/** The requirement: gone within 5 s of the host's death (or of the run's end). */
const GONE_MS = 5000;

for (const sandbox of [false, true] as const) {
  describe.runIf(process.platform === "linux")(`a guest's grandchild (${sandbox ? "sandboxed" : "unconfined"})`, () => {
    it("does not outlive a successful run", async () => {
      const marker = newMarker();
      const report = await runGuest({
        command: process.execPath,
        args: [grandchild, marker, "return"],
        cwd: root,
        sandbox,
        killGraceMs: 500,
      });
      expect(await goneWithin(marker, GONE_MS), "processes left after the run").toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.sandbox === null).toBe(!sandbox);
    });

    it("does not outlive a successful run when it holds the guest's stdout and stderr", async () => {
      const marker = newMarker();
      const report = await runGuest({
        command: process.execPath,
        args: [grandchild, marker, "return", "pipes"],
        cwd: root,
        sandbox,
        killGraceMs: 500,
      });
      expect(report.ok).toBe(true);
      expect(await goneWithin(marker, GONE_MS), "processes left after the run").toEqual([]);
    });

    // Unconfined, the run's cgroup holds what left the session; only without one is it the documented limit.
    const held = sandbox || hostCgroupPlan().version !== null;
    it(
      held
        ? "does not outlive the run even when it left the guest's session (setsid)"
        : "outlives the run when it left the guest's session (setsid): the documented limit (no cgroup)",
      async () => {
        const marker = newMarker();
        const report = await runGuest({
          command: process.execPath,
          args: [grandchild, marker, "return", "setsid"],
          cwd: root,
          sandbox,
          killGraceMs: 500,
        });
        expect(report.ok).toBe(true);
        if (held) expect(await goneWithin(marker, GONE_MS), "processes left after the run").toEqual([]);
        else expect(liveWith(marker)).toHaveLength(1); // afterEach kills it
      },
    );

    it("does not outlive a timed-out run", async () => {
      const marker = newMarker();
      const report = await runGuest({
        command: process.execPath,
        args: [grandchild, marker, "hang"],
        cwd: root,
        sandbox,
        killGraceMs: 500,
        limits: { runTimeoutMs: 1500 },
      });
      expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
      expect(await goneWithin(marker, GONE_MS), "processes left after the run").toEqual([]);
    });

    it("is gone with the guest within 5 s when the host process is SIGKILLed", async () => {
      const marker = newMarker();
      const host = spawn(process.execPath, [`${root}fixtures/hostile/host.mjs`, marker, sandbox ? "sandbox" : "unconfined"], {
        cwd: root,
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise((resolve) => host.on("exit", resolve));
      await new Promise<void>((resolve, reject) => {
        host.stdout.setEncoding("utf8").on("data", (text: string) => text.includes("ready") && resolve());
        host.on("exit", (code, signal) => reject(new Error(`the host ended before the guest started (${code ?? signal})`)));
      });
      // The guest (node ... marker) and its grandchild (sleep marker) are both running now.
      expect(liveWith(marker).length).toBeGreaterThanOrEqual(2);
      host.kill("SIGKILL");
      await exited;
      expect(await goneWithin(marker, GONE_MS), "processes left 5 s after the host was killed").toEqual([]);
    });
  });
}
