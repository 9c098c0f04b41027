/**
 * Ending a Landlock run leaves nothing behind even when the host ends it while the helper is already between its
 * guest's exit and its kill of the tree. The host signals the guest's session, the helper's first child (read from
 * /proc's children lists); once the guest is gone that list is empty, or holds the run's detached child, and the
 * host used to SIGKILL the helper's group instead: the helper died before killing the tree, and the detached child
 * (a session of its own, out of every group the host signals) lived on. That is the flake the attack suite saw
 * once under load as uid 65534 (`orphanAlive`): it needed the helper to be descheduled in that window. Here the
 * window is made to happen: the children list the host reads is the one of that moment (empty), while the real
 * helper still has its guest and the detached child; the host must then tell the helper to end (SIGTERM), which
 * kills and reaps the whole tree before it exits.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hasLandlock, helperPath } from "../../helpers/landlock.js";
import { isAlive, until } from "../../helpers/processes.js";

const view = vi.hoisted(() => ({ children: undefined as number[] | undefined }));
vi.mock("../../../src/host/limits/process-tree.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/host/limits/process-tree.js")>();
  return { ...real, childrenOf: (pid: number, ...rest: []) => view.children ?? real.childrenOf(pid, ...rest) };
});
const { ProcessGroup } = await import("../../../src/host/process/process-group.js");

describe.runIf(process.platform === "linux" && hasLandlock)("ending a Landlock run", () => {
  let dir: string;
  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-ll-end-")));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  for (const how of ["endNow", "SIGKILL"] as const) {
    it(`${how} when the guest's session cannot be found: the helper kills its whole tree, detached child included`, async () => {
      const pidFile = join(dir, `orphan-${how}`);
      const node = realpathSync(process.execPath);
      const runtime = ["--ro", "/usr", "--ro", "/proc", "--ro", "/etc/ld.so.cache", "--rw", "/dev/null", "--rw", dir];
      if (!node.startsWith("/usr/")) runtime.push("--ro", node);
      const publish = `echo $! > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile}`;
      const inner = `setsid /bin/sh -c '/bin/sleep 1000 & ${publish}' </dev/null >/dev/null 2>&1; exec /bin/sleep 1000`;
      const helper = spawn(helperPath!, [...runtime, "--", "/bin/sh", "-c", inner], { stdio: "ignore", detached: true });
      const exited = new Promise((resolve) => helper.once("exit", resolve));
      let orphan = 0;
      try {
        expect(await until(() => existsSync(pidFile))).toBe(true);
        orphan = Number(readFileSync(pidFile, "utf8"));
        expect(isAlive(orphan)).toBe(true);
        // The children list as the host would read it in the window: no guest session to signal.
        view.children = [];
        const group = new ProcessGroup(helper, "landlock");
        if (how === "endNow") group.endNow();
        else group.signal("SIGKILL");
        view.children = undefined;
        await exited;
        // The helper exits only after it has reaped its whole tree.
        expect(isAlive(orphan)).toBe(false);
      } finally {
        view.children = undefined;
        if (orphan > 1 && isAlive(orphan)) process.kill(orphan, "SIGKILL");
        if (helper.exitCode === null && helper.signalCode === null) helper.kill("SIGKILL");
      }
    }, 60_000);
  }
});
