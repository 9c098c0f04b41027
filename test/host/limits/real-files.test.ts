/**
 * The machine's side of a run's cgroup (realCgroupFiles in src/host/limits/cgroup.ts), on a temporary
 * directory and a child process of this test: what cgroup.test.ts fakes. Not under Stryker (it kills a
 * real process): vitest.mutate.config.ts leaves it out.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { realCgroupFiles } from "../../../src/host/limits/cgroup.js";

describe("the real cgroup files and kill", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-real-files-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads, writes, writes only what exists, makes and removes directories, as CgroupFiles says", () => {
    const files = realCgroupFiles();
    const sub = join(dir, "sub");
    files.mkdir(sub);
    expect(() => files.mkdir(sub)).toThrow(expect.objectContaining({ code: "EEXIST" }));
    expect(() => files.mkdir(join(dir, "no", "parent"))).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(files.read(join(sub, "knob"))).toBeUndefined();
    expect(files.writeIfPresent(join(sub, "knob"), "1")).toBe(false);
    expect(existsSync(join(sub, "knob"))).toBe(false);
    files.write(join(sub, "knob"), "2");
    expect(files.writeIfPresent(join(sub, "knob"), "3")).toBe(true);
    expect(files.read(join(sub, "knob"))).toBe("3");
    expect(() => files.write(join(dir, "no", "file"), "x")).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(files.rmdir(sub)).toBe(false);
    rmSync(join(sub, "knob"));
    expect(files.rmdir(sub)).toBe(true);
    expect(files.rmdir(sub)).toBe(true);
  });

  it("kill ends a process with SIGKILL, and a process already gone is no error", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    realCgroupFiles().kill(child.pid!);
    expect(await ended).toBe("SIGKILL");
    expect(() => realCgroupFiles().kill(child.pid!)).not.toThrow();
  });
});
