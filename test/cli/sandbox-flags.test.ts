/**
 * `ears run`'s sandbox flags, end to end through the built CLI: --sandbox, --no-sandbox,
 * --sandbox-read, --sandbox-write, --env, the note when "auto" runs unconfined, and Ctrl-C stopping a
 * guest's whole process group.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RunReport } from "../../src/host/index.js";
import { goneWithin, killAllWith, uniqueMarker } from "../helpers/processes.js";
import { canHideBubblewrap, withoutBubblewrap } from "../helpers/no-bwrap.js";
import { EARS, type EarsRun } from "../helpers/spawn-ears.js";

const PROBE = resolve("fixtures/hostile/probe.mjs");
const GRANDCHILD = resolve("fixtures/hostile/grandchild.mjs");

/** Runs the CLI with `env` (default: this process's); `onStderr` may act on the child mid-run. */
function earsWith(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  onStderr?: (soFar: string, kill: (signal: NodeJS.Signals) => void) => void,
  prefix: string[] = [],
): Promise<EarsRun> {
  return new Promise((done, fail) => {
    const [command, ...rest] = [...prefix, process.execPath, EARS, ...args];
    const child = spawn(command!, rest, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      onStderr?.(stderr, (signal) => child.kill(signal));
    });
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

describe.runIf(process.platform === "linux")("ears run's sandbox flags", () => {
  let dir: string;
  let noBwrap: NodeJS.ProcessEnv;
  /** Runs the CLI as on a machine without bubblewrap (not on PATH, nor in the standard places). */
  let hidden: string[];
  /** …and without the Landlock helper: neither mechanism. */
  let neither: string[];
  const markers: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-cli-sandbox-"));
    writeFileSync(join(dir, "in.txt"), "input file");
    // A PATH with node and nothing else: no bubblewrap.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, "node"));
    noBwrap = { PATH: bin };
    hidden = withoutBubblewrap(mkdtempSync(join(dir, "hide-")));
    neither = withoutBubblewrap(mkdtempSync(join(dir, "hide-")), { landlock: false });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => {
    for (const marker of markers.splice(0)) killAllWith(marker);
  });

  it("--sandbox-read, --sandbox-write and --env shape the sandbox the report describes", async () => {
    const out = join(dir, "out");
    mkdirSync(out);
    // The second write target is in the working directory, which the guest sees read-only.
    const outside = resolve(`.ears-cli-sandbox-${process.pid}.txt`);
    const input = { read: [join(dir, "in.txt")], write: [join(out, "a.txt"), outside], env: ["FROM_HOST", "SET", "HIDDEN"] };
    const run = await earsWith(
      [
        "run",
        "--json",
        "--sandbox-read",
        join(dir, "in.txt"),
        "--sandbox-write",
        out,
        "--env",
        "FROM_HOST",
        "--env",
        "SET=1",
        "--input",
        JSON.stringify(input),
        "--",
        "node",
        PROBE,
      ],
      { ...process.env, FROM_HOST: "host value", HIDDEN: "secret" },
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as RunReport;
    expect(report.outcome?.structured).toMatchObject({
      read: ["ok: input file"],
      write: ["ok: written", "blocked: EROFS"],
      env: { FROM_HOST: "host value", SET: "1", HIDDEN: null },
    });
    expect(readFileSync(join(out, "a.txt"), "utf8")).toBe("probe");
    expect(existsSync(outside)).toBe(false);
    expect(report.sandbox).toMatchObject({
      mechanism: "bubblewrap",
      network: false,
      writable: ["/tmp", out],
      env: ["PATH", "HOME", "LANG", "PWD", "FROM_HOST", "SET"],
    });
    expect(report.sandbox?.readable).toContain(join(dir, "in.txt"));
  });

  it("runs sandboxed by default, and --no-sandbox runs unconfined", async () => {
    const input = JSON.stringify({ read: ["/etc/passwd"] });
    const confined = await earsWith(["run", "--json", "--input", input, "--", "node", PROBE]);
    expect(JSON.parse(confined.stdout)).toMatchObject({
      ok: true,
      sandbox: { mechanism: "bubblewrap" },
      outcome: { structured: { read: ["blocked: ENOENT"] } },
    });
    const open = await earsWith(["run", "--json", "--no-sandbox", "--input", input, "--", "node", PROBE]);
    expect(JSON.parse(open.stdout)).toMatchObject({
      ok: true,
      sandbox: null,
      outcome: { structured: { read: [expect.stringMatching(/^ok: root:/)] } },
    });
    expect(open.stderr).not.toContain("without a sandbox");
  });

  const withoutBwrap =
    "without bubblewrap: auto and --sandbox run under Landlock, no note; --sandbox-mechanism=bubblewrap refuses (exit 2) naming it";
  it.runIf(canHideBubblewrap)(withoutBwrap, async () => {
    for (const flags of [[], ["--sandbox"], ["--sandbox-mechanism", "landlock"]]) {
      const run = await earsWith(["run", "--json", ...flags, "--input", "{}", "--", "node", PROBE], noBwrap, undefined, hidden);
      expect(run.code, flags.join(" ")).toBe(0);
      expect((JSON.parse(run.stdout) as RunReport).sandbox?.mechanism).toBe("landlock");
      expect(run.stderr).not.toContain("without a sandbox");
    }
    const bubblewrap = await earsWith(
      ["run", "--json", "--sandbox-mechanism", "bubblewrap", "--", "node", PROBE],
      noBwrap,
      undefined,
      hidden,
    );
    expect(bubblewrap.code).toBe(2);
    expect((JSON.parse(bubblewrap.stdout) as RunReport).failure?.message).toMatch(/bubblewrap \(bwrap\) is not installed/);
  });

  // Issue 42: auto used to run the guest unconfined here, with a note.
  const withNeither = "with neither bubblewrap nor Landlock: auto and --sandbox refuse to start the guest (exit 2), saying what to do";
  it.runIf(canHideBubblewrap)(withNeither, async () => {
    for (const flags of [[], ["--sandbox"]]) {
      const run = await earsWith(["run", "--json", ...flags, "--", "node", PROBE], noBwrap, undefined, neither);
      expect(run.code).toBe(2);
      const report = JSON.parse(run.stdout) as RunReport;
      expect(report.failure?.code).toBe("SandboxUnavailable");
      expect(report.failure?.message).toContain("or pass sandbox: false (--no-sandbox) to run the guest unconfined");
      expect(report.pid).toBeUndefined();
      expect(run.stderr).toContain("SandboxUnavailable");
    }
  });

  it.each([
    [["--sandbox", "--no-sandbox"], /--sandbox and --no-sandbox contradict each other/],
    [["--no-sandbox", "--env", "X"], /--env shape the sandbox, which --no-sandbox turns off/],
    [["--sandbox-read", "no/such/path"], /--sandbox-read "no\/such\/path": no such file or directory/],
    [["--sandbox-write", "no/such/path"], /--sandbox-write "no\/such\/path": no such file or directory/],
    [["--env", "1BAD"], /--env: "1BAD" is not NAME or NAME=value/],
    [["--sandbox-mechanism", "firejail"], /--sandbox-mechanism must be auto, bubblewrap or landlock, not "firejail"/],
    [["--no-sandbox", "--sandbox-mechanism", "landlock"], /--sandbox-mechanism shape the sandbox, which --no-sandbox turns off/],
  ])("%j is a usage error (exit 64), nothing is started", async (flags, message) => {
    const run = await earsWith(["run", ...flags, "--", "node", PROBE]);
    expect(run.code).toBe(64);
    expect(run.stderr).toMatch(message);
  });

  const replayTakesTheFlags =
    "ears replay takes the same flags: a recording made unconfined diverges in the default sandbox and matches with --no-sandbox";
  it(replayTakesTheFlags, async () => {
    const transcript = join(dir, "passwd.ndjson");
    const input = JSON.stringify({ read: ["/etc/passwd"] });
    const recorded = await earsWith(["run", "--no-sandbox", "--quiet", "--record", transcript, "--input", input, "--", "node", PROBE]);
    expect(recorded.code).toBe(0);
    const confined = await earsWith(["replay", transcript, "--quiet", "--", "node", PROBE]);
    expect(confined.code).toBe(1);
    expect(confined.stderr).toContain("diverged");
    const open = await earsWith(["replay", transcript, "--quiet", "--no-sandbox", "--", "node", PROBE]);
    expect(open.code, open.stderr).toBe(0);
    const contradiction = await earsWith(["replay", transcript, "--sandbox", "--no-sandbox", "--", "node", PROBE]);
    expect(contradiction.code).toBe(64);
  });

  it.each([[[]], [["--no-sandbox"]]])("Ctrl-C stops the guest and its grandchild (%j)", async (flags) => {
    const marker = uniqueMarker();
    markers.push(marker);
    let interrupted = false;
    const run = await earsWith(["run", ...flags, "--", "node", GRANDCHILD, marker, "hang"], process.env, (soFar, kill) => {
      if (!interrupted && soFar.includes("[info] started")) {
        interrupted = true;
        kill("SIGINT");
      }
    });
    expect(interrupted).toBe(true);
    expect(run.code).toBe(2);
    expect(await goneWithin(marker, 5000), "processes left after ears exited").toEqual([]);
  });
});
