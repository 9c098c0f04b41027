/**
 * A host SIGKILLed mid-run leaves no cgroup behind (issue 18): the watchdog kills what is left in the
 * run's cgroups, also a grandchild that left the guest's process group with setsid, and removes them.
 * The host is a real process (fixtures/hostile/limits-host.mjs) running a real guest.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { sandboxMissing } from "../../../src/host/sandbox/index.js";
import { goneFromDisk, goneWithin, markersKilledAfterEach } from "../../helpers/processes.js";
import { within } from "../../helpers/spawned-guest.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const plan = hostCgroupPlan();
const parents = plan.version === null ? [] : plan.version === "v2" ? [plan.parent] : Object.values(plan.parents);
const newMarker = markersKilledAfterEach();

/** The run cgroups a host process with this pid made. */
function cgroupsOf(pid: number): string[] {
  return parents.flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.startsWith(`ears-${pid}-`))
      .map((name) => join(dir, name)),
  );
}

describe.runIf(plan.version !== null)("a host killed mid-run", () => {
  const modes = sandboxMissing() === undefined ? ["sandbox", "unconfined"] : ["unconfined"];
  for (const mode of modes) {
    it(`${mode}: leaves no cgroup and no process behind, not even one that left the guest's process group`, async () => {
      const marker = newMarker();
      const host = spawn(process.execPath, [`${root}fixtures/hostile/limits-host.mjs`, "hang", mode, marker], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      host.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      await within(
        new Promise<void>((resolve, reject) => {
          host.stdout.on("data", (chunk: Buffer) => {
            if (chunk.toString().includes("ready")) resolve();
          });
          host.once("exit", () => reject(new Error(`the host ended before the guest started: ${stderr}`)));
        }),
        "the guest's start",
      );
      const dirs = cgroupsOf(host.pid!);
      expect(dirs.length, "the run has its cgroups while it lives").toBe(parents.length);
      host.kill("SIGKILL");
      expect(await goneFromDisk(dirs, 5000)).toEqual([]);
      expect(await goneWithin(marker, 5000)).toEqual([]);
    });
  }
});
