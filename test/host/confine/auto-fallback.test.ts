/**
 * "auto" never turns confinement off for a transient failure (a fake bwrap slow only on its first
 * start): that run fails, the next one is confined. Nor for a stripped PATH (28.5).
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const realBwrap = bwrapPath;

describe.runIf(process.platform === "linux" && realBwrap !== undefined)('sandbox "auto" and a bubblewrap that starts slowly once', () => {
  it("fails that run with SandboxUnavailable, never runs it unconfined, and confines the next run of the same host", async () => {
    const bin = mkdtempSync(join(tmpdir(), "ears-fake-bwrap-"));
    try {
      const marker = join(bin, "started-once");
      writeFileSync(
        join(bin, "bwrap"),
        [
          "#!/bin/sh",
          `if [ ! -e ${JSON.stringify(marker)} ]; then : > ${JSON.stringify(marker)}; sleep 7; fi`,
          `exec ${JSON.stringify(realBwrap)} "$@"`,
        ].join("\n"),
      );
      chmodSync(join(bin, "bwrap"), 0o755);
      const host = spawn(process.execPath, [`${root}fixtures/hostile/auto-host.mjs`], {
        cwd: root,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      host.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
      await new Promise((resolve) => host.on("close", resolve));
      const runs = out
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { failure: string; sandbox: string; fallback: string | null });
      expect(runs[0]).toEqual({ run: 1, failure: "SandboxUnavailable", sandbox: "none", fallback: null });
      expect(runs[1]).toEqual({ run: 2, failure: "ok", sandbox: "bubblewrap", fallback: null });
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }, 120_000);
});

// Was a hole (28.5): bwrap was looked for on PATH only, so a host started with a stripped PATH (`env -i`, an MCP client's
// `PATH=/usr/local/bin`) ran every "auto" body unconfined with the note "not installed".
const inStandardPlace = realBwrap !== undefined && ["/usr/local/bin/bwrap", "/usr/bin/bwrap", "/bin/bwrap"].includes(realBwrap);
describe.runIf(process.platform === "linux" && inStandardPlace)('sandbox "auto" under a stripped PATH', () => {
  it("confines the runs of a host started with env -i and PATH=/usr/local/bin (bwrap found in /usr/bin or /bin)", async () => {
    const host = spawn(process.execPath, [`${root}fixtures/hostile/auto-host.mjs`], {
      cwd: root,
      env: { PATH: "/usr/local/bin" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    host.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
    await new Promise((resolve) => host.on("close", resolve));
    const runs = out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as unknown);
    expect(runs).toEqual([
      { run: 1, failure: "ok", sandbox: "bubblewrap", fallback: null },
      { run: 2, failure: "ok", sandbox: "bubblewrap", fallback: null },
    ]);
  }, 120_000);
});
