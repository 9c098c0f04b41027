/**
 * The Landlock helper's self-test as the sandbox seam reads it (src/host/sandbox/index.ts, landlockProblem): a refusal
 * with the helper's marked line, a malformed or missing "ok" line, a helper killed by a signal, one past its deadline,
 * one that cannot be spawned, one that passes; which answers are remembered for the process and which are asked
 * again. Stand-in helpers are shell scripts in a temporary directory, given by path (landlockHelperProblem) or found
 * through a lookup that says a helper is where landlockProblem looks.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { forgetSandboxStart, landlockHelperProblem, landlockProblem, planSandbox } from "../../../src/host/sandbox/index.js";
import { confineHelperName, LANDLOCK_ABI_MIN } from "../../../src/host/sandbox/landlock.js";
import { FakeFileSystem } from "./fake-file-system.js";

let dir: string;
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-landlock-probe-")));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeEach(() => forgetSandboxStart());

/** Writes (or rewrites) the stand-in helper `name` with the shell body `script`; returns its path. */
const helper = (name: string, script: string): string => {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return path;
};
const PASS = "echo 'landlock-abi 7 ok'; exit 0";
const REFUSE = "echo 'ears-confine: Landlock ABI 4 is older than the 6 needed' >&2; exit 121";
const refusal = "Landlock cannot confine a run here (Landlock ABI 4 is older than the 6 needed)";

describe.runIf(process.platform === "linux")("the Landlock helper's self-test", () => {
  it("passes on a helper that prints its ABI and exits 0", async () => {
    expect(await landlockHelperProblem(helper("pass", PASS))).toBeUndefined();
  });

  it("is run with its self-test arguments and none of the host's environment", async () => {
    const path = helper("args", `echo "ears-confine: args $* HOME=\${HOME-unset} SECRET=\${EARS_PROBE_SECRET-unset}" >&2; exit 121`);
    const saved = process.env.EARS_PROBE_SECRET;
    process.env.EARS_PROBE_SECRET = "leaked";
    try {
      expect(await landlockHelperProblem(path)).toBe(
        `Landlock cannot confine a run here (args --self-test --abi-min ${LANDLOCK_ABI_MIN} HOME=unset SECRET=unset)`,
      );
    } finally {
      if (saved === undefined) delete process.env.EARS_PROBE_SECRET;
      else process.env.EARS_PROBE_SECRET = saved;
    }
  });

  it("reports the helper's refusal: its marked line, found past other output, the mark and spaces taken off", async () => {
    const path = helper(
      "refuse",
      "echo 'probing'; echo 'not ears-confine: this one' >&2; echo 'ears-confine:   Landlock ABI 4 is older than the 6 needed  ' >&2; " +
        "echo 'ears-confine: a second line' >&2; exit 121",
    );
    expect(await landlockHelperProblem(path)).toBe(refusal);
  });

  it("a malformed or missing ok line, or an ok line with a failing exit, is a refusal naming the exit", async () => {
    expect(await landlockHelperProblem(helper("malformed", "echo 'landlock-abi seven ok'; exit 0"))).toBe(
      "Landlock cannot confine a run here (the self-test exited 0)",
    );
    expect(await landlockHelperProblem(helper("silent", "exit 0"))).toBe("Landlock cannot confine a run here (the self-test exited 0)");
    expect(await landlockHelperProblem(helper("ok-but-failing", "echo 'landlock-abi 7 ok'; exit 3"))).toBe(
      "Landlock cannot confine a run here (the self-test exited 3)",
    );
  });

  it("takes the ok line only whole, on a line of its own, with a number of any length", async () => {
    expect(await landlockHelperProblem(helper("abi-12", "echo 'probing'; echo 'landlock-abi 12 ok'"))).toBeUndefined();
    for (const [name, line] of [
      ["prefixed", "not landlock-abi 7 ok"],
      ["suffixed", "landlock-abi 7 ok, but"],
    ] as const) {
      expect(await landlockHelperProblem(helper(name, `echo '${line}'; exit 0`))).toBe(
        "Landlock cannot confine a run here (the self-test exited 0)",
      );
    }
  });

  it("a helper killed by a signal is a refusal naming the signal", async () => {
    const killed = helper("killed", "kill -9 $$");
    expect(await landlockHelperProblem(killed)).toBe("Landlock cannot confine a run here (the self-test exited SIGKILL)");
  });

  it("remembers a refusal for the process (by the helper's path) until forgotten", async () => {
    const path = helper("refused-once", REFUSE);
    expect(await landlockHelperProblem(path)).toBe(refusal);
    helper("refused-once", PASS);
    expect(await landlockHelperProblem(path)).toBe(refusal);
    expect(await landlockHelperProblem(helper("another", PASS))).toBeUndefined();
    forgetSandboxStart();
    expect(await landlockHelperProblem(path)).toBeUndefined();
  });

  it("remembers a success for the process (by the helper's path) until forgotten", async () => {
    const path = helper("passed-once", PASS);
    expect(await landlockHelperProblem(path)).toBeUndefined();
    helper("passed-once", REFUSE);
    expect(await landlockHelperProblem(path)).toBeUndefined();
    expect(await landlockHelperProblem(helper("another-refusing", REFUSE))).toBe(refusal);
    forgetSandboxStart();
    expect(await landlockHelperProblem(path)).toBe(refusal);
  });

  it("a self-test past its deadline is reported and not remembered: the next run tries again", async () => {
    const path = helper("slow", "exec sleep 60");
    const late = "the Landlock helper's self-test did not end within 200 ms (the next run tries again)";
    expect(await landlockHelperProblem(path, 200)).toBe(late);
    helper("slow", PASS);
    expect(await landlockHelperProblem(path)).toBeUndefined();
  });

  it("a helper that cannot be spawned is reported with the error, and not remembered", async () => {
    const path = join(dir, "absent");
    expect(await landlockHelperProblem(path)).toMatch(new RegExp(`^the Landlock helper ${path} could not be started: \\S.*ENOENT`));
    helper("absent", PASS);
    expect(await landlockHelperProblem(path)).toBeUndefined();
    const notExecutable = join(dir, "not-executable");
    writeFileSync(notExecutable, `#!/bin/sh\n${PASS}\n`, { mode: 0o644 });
    expect(await landlockHelperProblem(notExecutable)).toMatch(/could not be started: \S.*EACCES/);
  });
});

const hasHelperName = process.platform === "linux" && confineHelperName() !== undefined;
describe.runIf(hasHelperName)("landlockProblem: the helper where it is looked for", () => {
  // Where landlock.ts looks first when run from src/ (the tests): src/host/native/, which holds no file on disk.
  const sandboxDir = dirname(fileURLToPath(import.meta.resolve("../../../src/host/sandbox/landlock.ts")));
  const firstCandidate = join(sandboxDir, "../native", confineHelperName()!);

  it("says why when no helper is installed, and runs the one the lookup finds", async () => {
    expect(await landlockProblem(new FakeFileSystem({}))).toMatch(
      /^the Landlock helper \(dist\/native\/ears-confine-linux-\w+\) is missing/,
    );
    const lookup = new FakeFileSystem({ [firstCandidate]: { kind: "file", executable: true } });
    expect(await landlockProblem(lookup)).toMatch(new RegExp(`^the Landlock helper ${firstCandidate} could not be started: \\S.*ENOENT`));
  });

  it("a run asking for Landlock whose helper cannot be spawned is refused with that reason", async () => {
    const lookup = new FakeFileSystem({ [firstCandidate]: { kind: "file", executable: true } });
    const launch = { command: "/bin/sh", args: [], cwd: dir, env: {} };
    const plan = await planSandbox({ mode: "required", options: { mechanism: "landlock" } }, launch, { lookup });
    expect(plan).toEqual({
      kind: "unavailable",
      reason: expect.stringMatching(
        new RegExp(`^the Landlock helper ${firstCandidate} could not be started: .*; sandbox.mechanism "landlock" was asked for$`),
      ),
    });
  });

  it("a run under Landlock whose policy cannot be prepared is refused, never half a sandbox", async () => {
    const broken = { command: "/bin/sh", args: [42], cwd: dir, env: {} } as unknown as Parameters<typeof planSandbox>[1];
    const plan = await planSandbox({ mode: "required", options: { mechanism: "landlock" } }, broken);
    expect(plan).toMatchObject({ kind: "unavailable", reason: expect.stringMatching(/^the sandbox could not be prepared: \S/) });
  });
});
