/**
 * The sandbox seam (src/host/sandbox/index.ts) at its edges, what Stryker's run after issue 28 found untested:
 * a bubblewrap that is found but cannot start refuses the run (auto as well as required); the probe runs with
 * no environment and reports the first line of a long or blank-led error; any other failure to prepare a policy
 * refuses the run; the plan's filter follows the network setting; a bwrap that dies before reading its filter is
 * reported by its exit, never as a thrown EPIPE; /tmp is broad wherever TMPDIR points. Stand-in bwraps are
 * shell scripts in a temporary directory; the real bwrap where installed.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  forgetSandboxStart,
  hostPlaces,
  planSandbox,
  sandboxRequest,
  sandboxStartProblem,
  spawnConfined,
  type ConfinedPlan,
} from "../../../src/host/sandbox/index.js";
import { seccompProgram } from "../../../src/host/sandbox/seccomp.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";

let dir: string;
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-plan-edges-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** A stand-in bwrap, alone in a directory named `name`; `script` is its shell body. */
const standIn = (name: string, script: string): { dir: string; path: string } => {
  const own = join(dir, name);
  mkdirSync(own, { recursive: true });
  const path = join(own, "bwrap");
  writeFileSync(path, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return { dir: own, path };
};
/** Runs `body` with `first` put before PATH, where bwrap is looked for first. */
const withPathFirst = async <T>(first: string, body: () => Promise<T>): Promise<T> => {
  const saved = process.env.PATH;
  process.env.PATH = `${first}:${saved ?? ""}`;
  try {
    return await body();
  } finally {
    process.env.PATH = saved;
  }
};

describe("the sandbox option's message", () => {
  it("names every form it takes", () => {
    expect(() => sandboxRequest("yes", "runCode")).toThrow(
      new TypeError(
        'runCode: options.sandbox must be "auto", true, false or an options object ' +
          "{ readable, writable, network, env, showSecrets, allowBroadPaths, mechanism }",
      ),
    );
  });
});

describe("hostPlaces", () => {
  it("counts /tmp as a temporary root also when TMPDIR points elsewhere", () => {
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = "/var/ears-elsewhere";
    try {
      expect(hostPlaces({}).temporaryRoots).toEqual(["/var/ears-elsewhere", "/tmp"]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});

describe.runIf(process.platform === "linux")("the probe of a throw-away sandbox", () => {
  it("runs bwrap with no environment of the host's", async () => {
    const { path } = standIn("env", 'echo "HOME=${HOME-unset} PATH=${PATH-unset}" >&2; exit 1');
    expect(await sandboxStartProblem(path)).toMatch(/\(HOME=unset PATH=\S+\)/);
    expect(await sandboxStartProblem(path)).not.toContain(`PATH=${process.env.PATH}`);
  });

  it("reports the first line of what bwrap wrote: past blank lines, and of a long message its start", async () => {
    const blank = standIn("blank", "printf '\\n\\n  bwrap: setting up uid map: Permission denied\\nmore\\n' >&2; exit 1");
    expect(await sandboxStartProblem(blank.path)).toBe(
      "bubblewrap is installed but cannot create a sandbox here (bwrap: setting up uid map: Permission denied); " +
        "run `ears doctor` for the fix",
    );
    const long = standIn("long", "printf 'bwrap: the start' >&2; printf '%05000d\\n' 0 >&2; echo 'bwrap: the end' >&2; exit 1");
    expect(await sandboxStartProblem(long.path)).toMatch(/\(bwrap: the start0+\); run `ears doctor` for the fix$/);
  });

  it("forgets a remembered start when told to: the next run probes again", async () => {
    const { path } = standIn("once", `[ -e '${join(dir, "once", "ran")}' ] && exit 1; touch '${join(dir, "once", "ran")}'; exit 0`);
    expect(await sandboxStartProblem(path)).toBeUndefined();
    expect(await sandboxStartProblem(path)).toBeUndefined();
    forgetSandboxStart();
    expect(await sandboxStartProblem(path)).toMatch(/^bubblewrap is installed but cannot create a sandbox here \(exit code 1\)/);
  });

  // 28.5: installed and found, but unable to start a sandbox: never unconfined. Issue 42: Landlock confines instead,
  // unless bubblewrap was asked for by name.
  it("a bubblewrap found but unable to start: auto and required go on under Landlock; asked for by name, refused", async () => {
    const failing = standIn("refusing", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1");
    const launch = { command: "/bin/sh", args: [], cwd: dir, env: {} };
    const reason =
      "bubblewrap is installed but cannot create a sandbox here (bwrap: No permissions to create new namespace); " +
      "run `ears doctor` for the fix";
    await withPathFirst(failing.dir, async () => {
      forgetSandboxStart();
      expect(await planSandbox({ mode: "required", options: { mechanism: "bubblewrap" } }, launch)).toEqual({
        kind: "unavailable",
        reason,
      });
      for (const mode of ["auto", "required"] as const) {
        const plan = await planSandbox({ mode, options: {} }, launch);
        expect(plan).toMatchObject({ kind: "confined", report: { mechanism: "landlock" } });
        expect((plan as ConfinedPlan).command).toMatch(/ears-confine-linux-(x64|arm64)$/);
      }
      forgetSandboxStart();
    });
  });
});

describe.runIf(bwrapPath !== undefined)("planning with the real bubblewrap, at its edges", () => {
  const launch = (more: object = {}) => ({ command: "/bin/sh", args: ["-c", "exit 0"], cwd: dir, env: { PATH: "/usr/bin:/bin" }, ...more });

  it("gives the plan the filter of its network setting", async () => {
    for (const network of [false, true]) {
      const plan = (await planSandbox({ mode: "required", options: { network } }, launch())) as ConfinedPlan;
      expect(plan.kind).toBe("confined");
      expect(plan.seccomp).toEqual(seccompProgram({ network }));
    }
    expect(seccompProgram({ network: true })).not.toEqual(seccompProgram({ network: false }));
  });

  it("refuses the run when the policy cannot be prepared for any other reason (never a spawn failure, never half a sandbox)", async () => {
    const broken = launch({ args: [42] }) as unknown as Parameters<typeof planSandbox>[1];
    const plan = await planSandbox({ mode: "required", options: {} }, broken);
    expect(plan).toMatchObject({ kind: "unavailable", reason: expect.stringMatching(/^the sandbox could not be prepared: \S/) });
  });

  it("a bwrap that dies before reading its filter is reported by its exit, not thrown as EPIPE", async () => {
    const plan = (await planSandbox({ mode: "required", options: {} }, launch())) as ConfinedPlan;
    // Far more than a pipe holds, written to a program that never reads it.
    const quick: ConfinedPlan = { ...plan, command: "/bin/sh", args: ["-c", "exit 7"], seccomp: Buffer.alloc(4 * 1024 * 1024) };
    const child = spawnConfined(quick, { cwd: dir, detached: false });
    child.stdin.end();
    const code = await new Promise((settle) => child.on("close", settle));
    expect(code).toBe(7);
    // An unhandled 'error' on the filter's pipe would have failed this test as an uncaught exception by now.
    await new Promise((settle) => setTimeout(settle, 50));
  });
});
