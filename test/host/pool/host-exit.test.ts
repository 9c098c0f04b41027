/**
 * Run pools (issue 20): runners never outlive their host. A host SIGKILLed with runners waiting leaves
 * none (each runner's watchdog, src/host/process/process-group.ts), nor their private directories; a host that
 * returns without closing its pool exits by itself (waiting runners do not hold its event loop) and takes
 * its runners with it. Real host processes (fixtures/hostile/pool-host.mjs, loading dist/).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { countReaches, liveWithEnvironment, uniqueMarker } from "../../helpers/processes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const GONE_MS = 5000;
const scratches: string[] = [];
const entries: string[] = [];
const hosts: ChildProcess[] = [];

afterEach(() => {
  // A failing test must not leave its host behind (its runners go with it).
  for (const host of hosts.splice(0)) if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
  for (const entry of entries.splice(0)) {
    for (const pid of liveWithEnvironment(entry)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  }
  for (const scratch of scratches.splice(0)) rmSync(scratch, { recursive: true, force: true });
});

/** Starts the fixture host; resolves once its pool ran a body, with the host, its marker entry and its TMPDIR. */
async function startHost(mode: "sandbox" | "unconfined", end: "wait" | "return") {
  const marker = uniqueMarker();
  const entry = `EARS_POOL_MARK=${marker}`;
  entries.push(entry);
  const scratch = mkdtempSync(join(tmpdir(), "ears-pool-host-"));
  scratches.push(scratch);
  const host = spawn(process.execPath, [`${root}fixtures/hostile/pool-host.mjs`, marker, mode, end], {
    cwd: root,
    env: { ...process.env, TMPDIR: scratch },
    stdio: ["ignore", "pipe", "inherit"],
  });
  hosts.push(host);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    host.on("exit", (code, signal) => resolve({ code, signal })),
  );
  await new Promise<void>((resolve, reject) => {
    host.stdout.setEncoding("utf8").on("data", (text: string) => text.includes("ready") && resolve());
    host.on("exit", (code, signal) => reject(new Error(`the host ended before its pool ran a body (${code ?? signal})`)));
  });
  const left = () => readdirSync(scratch).filter((name) => name.startsWith("ears-code-"));
  return { host, exited, entry, left };
}

async function noneWithin<T>(read: () => T[], ms: number): Promise<T[]> {
  for (let waited = 0; waited < ms && read().length > 0; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  return read();
}

const modes = [...(bwrapPath === undefined ? [] : ["sandbox" as const]), "unconfined" as const];
for (const mode of modes) {
  describe.runIf(process.platform === "linux")(`a host with a run pool (${mode})`, () => {
    it("SIGKILLed while its runners wait, leaves no runner and no runner's directory behind", async () => {
      const { host, exited, entry, left } = await startHost(mode, "wait");
      // Two runners wait (the replacement of the one that ran included).
      expect(await countReaches(() => new Set(liveWithEnvironment(entry)).size, 2, 10_000)).toBeGreaterThanOrEqual(2);
      expect(left().length).toBeGreaterThanOrEqual(2);
      host.kill("SIGKILL");
      await exited;
      expect(await noneWithin(() => liveWithEnvironment(entry), GONE_MS), "runners left 5 s after the host was killed").toEqual([]);
      expect(await noneWithin(left, GONE_MS), "directories left 5 s after the host was killed").toEqual([]);
    });

    it("returning without closing its pool, exits by itself and its runners with it", async () => {
      const { exited, entry, left } = await startHost(mode, "return");
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(await noneWithin(() => liveWithEnvironment(entry), GONE_MS), "runners left after the host exited").toEqual([]);
      expect(await noneWithin(left, GONE_MS), "directories left after the host exited").toEqual([]);
    });
  });
}
