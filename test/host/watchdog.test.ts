/**
 * The host's one watchdog shell (src/host/process/process-group.ts): paths reach it intact whatever bytes they
 * hold, it ends every run it still covers when the host is SIGKILLed, none it was told had ended, and a
 * watchdog killed from outside is replaced by the next run.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { watchdogWord } from "../../src/host/process/process-group.js";
import { goneFromDisk, goneWithin, isAlive, markersKilledAfterEach } from "../helpers/processes.js";
import { within } from "../helpers/spawned-guest.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const newMarker = markersKilledAfterEach();
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Any character, and often one a shell treats specially. */
const characters = fc.oneof(
  fc.constantFrom(" ", "\n", "\t", "\\", "'", '"', "$", "*", "%", "-", "é"),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
);

describe("a path as the watchdog's word", () => {
  it("comes back byte for byte through the shell's printf %b, whatever it holds (fast-check)", () => {
    fc.assert(
      fc.property(fc.string({ unit: characters, minLength: 1, maxLength: 40 }), (tail) => {
        const path = `/${tail}`;
        const word = watchdogWord(path);
        // One word: nothing the shell would split, glob or expand.
        expect(word).toMatch(/^[A-Za-z0-9/._\\-]+$/);
        const decoded = spawnSync("/bin/sh", ["-c", 'printf "%bx" "$1"', "sh", word]);
        expect(decoded.stdout.subarray(0, -1)).toEqual(Buffer.from(path));
      }),
      { seed: 2020, numRuns: 60 },
    );
  });

  it("is - for no path", () => {
    expect(watchdogWord(undefined)).toBe("-");
    expect(watchdogWord("")).toBe("-");
  });
});

/** Runs fixtures/hostile/watchdog-host.ts in `mode` with these scratch directories; resolves when it is ready. */
async function host(mode: string, marker: string, scratch: string[]) {
  const child = spawn(process.execPath, ["--import", "tsx", `${root}fixtures/hostile/watchdog-host.ts`, mode, marker, ...scratch], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await within(
    new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes("ready")) resolve();
      });
      child.once("exit", () => reject(new Error(`the host ended before it was ready: ${stderr}`)));
    }),
    "the host's start",
  );
  return Object.assign(child, { said: stdout });
}

/** Scratch directories with names a shell would mangle: a space, a newline (also at the end), quotes, a $. */
function scratchDirs(count: number): string[] {
  const parent = mkdtempSync(join(tmpdir(), "ears-watchdog-test-"));
  dirs.push(parent);
  const names = ["a b", "q\"'$HOME", "line\nbreak\n", "back\\slash*"];
  return names.slice(0, count).map((name) => {
    const dir = join(parent, name);
    mkdirSync(dir);
    return dir;
  });
}

describe.runIf(process.platform === "linux")("the watchdog, when the host is SIGKILLed", () => {
  it("ends every run it still covers and removes their directories, and leaves alone a run it was told had ended", async () => {
    const marker = newMarker();
    const [first, ended, third] = scratchDirs(3) as [string, string, string];
    const child = await host("forget", marker, [first, ended, third]);
    child.kill("SIGKILL");
    expect(await goneFromDisk([first, third], 5000)).toEqual([]);
    expect(await goneWithin(marker, 5000)).toEqual([]);
    // Told the run had ended (released), the watchdog did not touch its directory.
    expect(existsSync(ended)).toBe(true);
  });

  it("a watchdog killed from outside is replaced by the next run, which it then covers", async () => {
    const marker = newMarker();
    const [uncovered, covered] = scratchDirs(2) as [string, string];
    const child = await host("replaced", marker, [uncovered, covered]);
    child.kill("SIGKILL");
    expect(await goneFromDisk([covered], 5000)).toEqual([]);
    // The first run lost its cover with the shell that was killed (docs/host.md): its directory stays.
    expect(existsSync(uncovered)).toBe(true);
  });

  it("kills only in directories named as this host's run cgroups, and only real pids (not 0, which names its own group)", async () => {
    const marker = newMarker();
    const parent = mkdtempSync(join(tmpdir(), "ears-watchdog-cgroups-"));
    dirs.push(parent);
    const child = await host("cgroups", marker, [parent]);
    const [spared, killed] = /victims (\d+) (\d+)/.exec(child.said)!.slice(1).map(Number) as [number, number];
    child.kill("SIGKILL");
    // The directory not named as a run's is listed first: by the time the other's victim is dead, it was passed over.
    const deadline = Date.now() + 5000;
    while (isAlive(killed) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(killed)).toBe(false);
    expect(isAlive(spared)).toBe(true);
  });
});
