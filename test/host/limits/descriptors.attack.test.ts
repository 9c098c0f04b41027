/**
 * Issue 17, "only 0, 1, 2": a host started with descriptors it inherited without close-on-exec (a
 * directory open on `/` as fd 40, a file as fd 5, as `ears exec … 40</` does) must not hand them to the
 * guest, sandboxed or not. The guest (fixtures/hostile/consume.mjs) lists /proc/self/fd; none of its
 * descriptors may point at what the host was given, and it has as many as a guest of a clean host
 * (Node's own: its event loop, its pipes).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { sandboxMissing } from "../../../src/host/sandbox/index.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const host = `${root}fixtures/hostile/limits-host.mjs`;

type Fd = { fd: number; target: string | null };

/** Runs the host through bash with `redirections` (e.g. "40</"), and returns what it and its guest saw. */
function hostWith(mode: string, redirections: string): { host: Fd[]; guest: Fd[] } {
  const result = spawnSync("/bin/bash", ["-c", `exec "$0" "$1" fds "$2" ${redirections}`, process.execPath, host, mode], {
    cwd: root,
    encoding: "utf8",
  });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { host: Fd[]; guest: Fd[] };
}

describe.runIf(process.platform === "linux")("descriptors the host inherited", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-leak-"));
  const secret = join(dir, "secret.txt");
  writeFileSync(secret, "host secret");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const mode of sandboxMissing() === undefined ? ["sandbox", "unconfined"] : ["unconfined"]) {
    it(`${mode}: never reach the guest: only what Node itself opens, nothing pointing at the leaked directory or file`, () => {
      const clean = hostWith(mode, "");
      const leaky = hostWith(mode, `40</ 5<${JSON.stringify(secret)}`);
      // The host really holds them (the test sees what it claims to).
      expect(leaky.host).toEqual(
        expect.arrayContaining([
          { fd: 40, target: "/" },
          { fd: 5, target: secret },
        ]),
      );
      const targets = leaky.guest.map((entry) => entry.target);
      expect(targets).not.toContain("/");
      expect(targets).not.toContain(secret);
      expect(leaky.guest.map((entry) => entry.fd)).not.toContain(40);
      expect(leaky.guest.length, JSON.stringify(leaky.guest)).toBe(clean.guest.length);
    });
  }
});
