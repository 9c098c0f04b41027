/**
 * The machine's kill (realCgroupFiles in src/host/limits/cgroup.ts) on a child process of this test: what
 * cgroup.test.ts fakes (plan.test.ts tests its file operations on a temporary directory). Not under
 * Stryker (it kills a real process): vitest.mutate.config.ts leaves it out.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { realCgroupFiles } from "../../../src/host/limits/cgroup.js";

describe("the real kill", () => {
  it("kill ends a process with SIGKILL, and a process already gone is no error", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    realCgroupFiles().kill(child.pid!);
    expect(await ended).toBe("SIGKILL");
    expect(() => realCgroupFiles().kill(child.pid!)).not.toThrow();
  });
});
