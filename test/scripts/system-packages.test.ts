// scripts/system-packages.mjs, which `npm test` (pretest) and .ci/run start with: where it may not install
// (no apt-get here), it names each missing package and how to install it, and never fails the command.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const script = resolve(import.meta.dirname, "../../scripts/system-packages.mjs");

describe("scripts/system-packages.mjs", () => {
  it("names each missing package and its install line, and exits 0, where it cannot install", () => {
    const bin = mkdtempSync(join(tmpdir(), "ears-syspkg-"));
    try {
      symlinkSync(process.execPath, join(bin, "node"));
      const run = spawnSync(process.execPath, [script], { env: { PATH: bin }, encoding: "utf8" });
      expect(run.status).toBe(0);
      expect(run.stderr).toContain(
        "system-packages: bubblewrap is not installed (the sandbox tests run guests under bubblewrap): apt-get install bubblewrap",
      );
      expect(run.stderr).toContain(
        "system-packages: chromium is not installed (the timeline test opens its page in headless Chromium): apt-get install chromium",
      );
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("says nothing when every command it looks for is on PATH", () => {
    const bin = mkdtempSync(join(tmpdir(), "ears-syspkg-"));
    // Each command the script looks for, read from it: a package added there is covered here.
    const commands = [...readFileSync(script, "utf8").matchAll(/command: "([^"]+)"/g)].map((match) => match[1]!);
    expect(commands).toContain("bwrap");
    try {
      for (const name of commands) symlinkSync("/bin/true", join(bin, name));
      const run = spawnSync(process.execPath, [script], { env: { PATH: bin }, encoding: "utf8" });
      expect(run.status).toBe(0);
      expect(run.stderr).toBe("");
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
