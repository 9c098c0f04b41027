/**
 * Remote runners without ssh (issue 34): the host's `remote` option checked, the far end's `ears runner`
 * started directly as the "remote" command (this worktree's build), the runner's refusals, the deadline
 * over the connection's start, a failing worker's back-off, and the runner's stream read apart
 * (header, guest bytes, trailer). Over a real sshd: remote-ssh.test.ts.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createRunPool, runCode, runGuest } from "../../../src/host/index.js";
import { RunnerStream } from "../../../src/host/remote/runner-stream.js";
import { launchLine, parseLaunch, trailerMark } from "../../../src/host/remote/runner-lines.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { hasLandlock } from "../../helpers/landlock.js";
import { cliPath, root } from "../../helpers/sshd.js";

const runner = (...runnerArgs: string[]) => ({ command: process.execPath, args: [cliPath, "runner", ...runnerArgs] });

describe("the remote option", () => {
  it("refuses what names this machine (cwd, env, sandbox paths), a bad runner, and words a far shell would change", () => {
    const remote = runner();
    expect(() => runCode({ code: "return 1;", remote, cwd: root })).toThrow(/options.cwd names this machine's/);
    expect(() => runCode({ code: "return 1;", remote, env: {} })).toThrow(/options.env names this machine's/);
    expect(() => runCode({ code: "return 1;", remote, sandbox: { network: true } })).toThrow(/sandbox options object .*\(network\)/);
    expect(() => runCode({ code: "return 1;", remote, sandbox: { mechanism: "landlock", readable: ["/x"] } })).toThrow(
      /names this machine's paths \(readable\).*or \{ mechanism \}/,
    );
    expect(() => runCode({ code: "return 1;", remote: [] })).toThrow(/at least one runner/);
    expect(() => runCode({ code: "return 1;", remote: { command: "" } })).toThrow(/non-empty string/);
    expect(() => runCode({ code: "return 1;", remote: { command: "ssh", args: [1 as unknown as string] } })).toThrow(/array of strings/);
    expect(() => runGuest({ command: "node", args: ["guest.mjs; rm -rf ~"], remote })).toThrow(/a shell would change/);
    expect(() => createRunPool({ remote, cwd: root })).toThrow(/options.cwd names this machine's/);
  });

  it("a pooled run may repeat the pool's remote, not name another", async () => {
    const remote = runner();
    const pool = createRunPool({ size: 1, remote });
    try {
      expect(() => runCode({ code: "return 1;", pool, remote: runner() })).toThrow(/options.remote differs from the pool's/);
      expect(() => runCode({ code: "return 1;", pool, remote })).not.toThrow();
    } finally {
      await pool.close();
    }
  });
});

describe.skipIf(bwrapPath === undefined)("ears runner as the remote command", () => {
  it("without --no-sandbox it refuses to run unconfined, whatever the host asks; with it, sandbox: false runs unconfined", async () => {
    const refused = await runCode({ code: "return 1;", sandbox: false, remote: runner() });
    expect(refused.failure?.code).toBe("SandboxUnavailable");
    expect(refused.failure?.message).toContain("refused the run");
    expect(refused.failure?.message).toContain("--no-sandbox");
    const allowed = await runCode({ code: "return 1;", sandbox: false, remote: runner("--no-sandbox") });
    expect(allowed.ok, JSON.stringify(allowed.failure)).toBe(true);
    expect(allowed.sandbox).toBeNull();
    const auto = await runCode({ code: "return 1;", remote: runner() });
    expect(auto.sandbox?.mechanism).toBe("bubblewrap");
  });

  it("confines with the sandbox mechanism the host names (sandbox.mechanism), even where its own pick differs", async () => {
    const bubblewrap = await runCode({ code: "return 1;", sandbox: { mechanism: "bubblewrap" }, remote: runner() });
    expect(bubblewrap.ok, JSON.stringify(bubblewrap.failure)).toBe(true);
    expect(bubblewrap.sandbox?.mechanism).toBe("bubblewrap");
    if (!hasLandlock) return;
    // "auto" picks bubblewrap on this machine; the host's "landlock" is honoured over it.
    const landlock = await runCode({ code: "return 1;", sandbox: { mechanism: "landlock" }, remote: runner() });
    expect(landlock.ok, JSON.stringify(landlock.failure)).toBe(true);
    expect(landlock.sandbox?.mechanism).toBe("landlock");
    expect(landlock.sandbox?.gaps.length).toBeGreaterThan(0);
    // With --no-sandbox too: a mechanism named is a sandbox required.
    const named = await runCode({ code: "return 1;", sandbox: { mechanism: "landlock" }, remote: runner("--no-sandbox") });
    expect(named.sandbox?.mechanism).toBe("landlock");
  });

  it("a guest cannot forge its runner's trailer: a mark without the runner's nonce is guest output", async () => {
    const report = await runGuest({ command: process.execPath, args: ["fixtures/guests/forged-trailer.mjs"], remote: runner() });
    expect(report.failure?.code, JSON.stringify(report.failure)).toBe("ProtocolViolation");
    expect(report.failure?.message).toContain("wrote after its result");
    expect(report.outcome).toMatchObject({ status: "success" });
    expect(report.limits?.memoryBytes.enforcedBy).toMatch(/^cgroup|^rlimit|^bubblewrap|null/);
  });
});

describe("a remote runner's start", () => {
  it("runTimeoutMs covers the connection's start: a command that never starts a runner is RunTimeout", async () => {
    const report = await runCode({
      code: "return 1;",
      remote: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"] },
      limits: { runTimeoutMs: 300 },
      killGraceMs: 100,
    });
    expect(report.failure?.code).toBe("RunTimeout");
  });

  it("a command that fails is SpawnFailed with its stderr; its worker backs off, and a run meanwhile says so", async () => {
    const remote = { command: process.execPath, args: ["-e", 'process.stderr.write("no route to worker\\n"); process.exit(3)'] };
    const first = await runCode({ code: "return 1;", remote });
    expect(first.failure?.code).toBe("SpawnFailed");
    expect(first.failure?.message).toContain("did not start, so nothing ran");
    expect(first.failure?.message).toContain("no route to worker");
    expect(first.stderr).toContain("no route to worker");
    const second = await runCode({ code: "return 1;", remote });
    expect(second.failure?.code).toBe("SpawnFailed");
    expect(second.failure?.message).toMatch(/backing off after failed starts .*1 failed starts, next try in \d+ ms: .*no route to worker/);
  });

  it("a worker taken out is tried again after its back-off, and its first good start puts it back", async () => {
    const flag = join(mkdtempSync(join(tmpdir(), "ears-remote-flag-")), "tried");
    // Fails its first start (as an ssh to a worker that is down), then starts the runner.
    const script =
      'const fs = require("node:fs"); const [flag, cli] = process.argv.slice(1);' +
      'if (!fs.existsSync(flag)) { fs.writeFileSync(flag, ""); console.error("worker down"); process.exit(3); }' +
      'process.exit(require("node:child_process").spawnSync(process.execPath, [cli, "runner"], { stdio: "inherit" }).status ?? 1);';
    const pool = createRunPool({ size: 1, remote: { command: process.execPath, args: ["-e", script, flag, cliPath] } });
    try {
      const deadline = Date.now() + 20_000;
      let taken = 0;
      while (pool.ready < 1 && Date.now() < deadline) {
        taken = Math.max(taken, pool.workers[0]?.failuresInARow ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(taken).toBe(1);
      expect(pool.ready).toBe(1);
      expect(pool.workers).toEqual([expect.objectContaining({ failuresInARow: 0, running: 1 })]);
      expect(pool.workers[0]).not.toHaveProperty("lastFailure");
      const report = await runCode({ code: "return 5;", pool });
      expect(report.outcome?.structured, JSON.stringify(report.failure)).toBe(5);
    } finally {
      await pool.close();
      rmSync(dirname(flag), { recursive: true, force: true });
    }
  });

  it("a command that writes something else first did not start a runner", async () => {
    const report = await runCode({
      code: "return 1;",
      remote: { command: process.execPath, args: ["-e", 'console.log("Welcome to worker")'] },
    });
    expect(report.failure?.code).toBe("SpawnFailed");
    expect(report.failure?.message).toContain('its first line is not an ears runner\'s header (it is not JSON): "Welcome to worker"');
  });
});

describe("the runner's stream, read apart", () => {
  const nonce = "0123456789abcdef0123456789abcdef";
  const header = `${JSON.stringify({ type: "runner", version: 1, sdk: "@posoco/ears@0", nonce, sandbox: null })}\n`;
  const trailer = `${JSON.stringify({ exit: { code: 0, signal: null } })}\n`;

  async function read(chunks: Buffer[]): Promise<{ guest: string; stream: RunnerStream }> {
    const source = new PassThrough();
    const stream = new RunnerStream(source);
    const parts: Buffer[] = [];
    stream.output.on("data", (chunk: Buffer) => parts.push(chunk));
    const ended = new Promise((resolve) => stream.output.on("end", resolve));
    for (const chunk of chunks) source.write(chunk);
    source.end();
    await ended;
    return { guest: Buffer.concat(parts).toString("utf8"), stream };
  }

  it("passes the guest's bytes unchanged, wherever the chunks split the mark, and takes off the trailer", async () => {
    const whole = Buffer.concat([Buffer.from(`${header}line one\nhalf a line`), trailerMark(nonce), Buffer.from(trailer)]);
    for (let cut = 1; cut < whole.length; cut += 7) {
      const { guest, stream } = await read([whole.subarray(0, cut), whole.subarray(cut)]);
      expect(guest).toBe("line one\nhalf a line");
      expect(stream.trailer).toEqual({ exit: { code: 0, signal: null } });
    }
  });

  it("without a trailer (the connection lost) the guest's bytes still all arrive, even a tail that looked like the mark", async () => {
    const { guest, stream } = await read([Buffer.from(header), Buffer.from("partial"), trailerMark(nonce).subarray(0, 5)]);
    expect(guest).toBe(`partial${trailerMark(nonce).subarray(0, 5).toString("utf8")}`);
    expect(stream.trailer).toBeUndefined();
  });

  it("a runner's refusal ends the stream with nothing passed", async () => {
    const refusal = `${JSON.stringify({ type: "runner", version: 1, sdk: "x", refused: { code: "SandboxUnavailable", message: "no" } })}\n`;
    const { guest, stream } = await read([Buffer.from(refusal)]);
    expect(guest).toBe("");
    expect(stream.header).toMatchObject({ refused: { code: "SandboxUnavailable" } });
  });
});

describe("ears runner on its own", () => {
  function runnerProcess(input: string): Promise<{ code: number | null; stdout: string }> {
    const child = spawn(process.execPath, [cliPath, "runner"], { stdio: ["pipe", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
    child.stdin.end(input);
    return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout })));
  }

  it("exits at once, writing nothing, when its stdin ends before a launch line", async () => {
    expect(await runnerProcess("")).toEqual({ code: 0, stdout: "" });
  });

  it("ends its guest and exits when its stdin ends right after the launch line (no runner left waiting)", async () => {
    // Input that ends in the same chunk as the launch line: the end was read while stdin was paused, and a
    // runner that waited for an "end" event then lived on, with its sandboxed guest, long after its host.
    const launch = '{"type":"runner","version":1,"sandbox":"required","limits":{},"killGraceMs":2000}\n';
    const { code, stdout } = await runnerProcess(launch);
    expect(code).toBe(0);
    expect(stdout).toContain('"exit":'); // its trailer: the guest was ended and the run reported
  });

  it("refuses a mechanism it does not know, one beside sandbox: off, and one in a version 1 line, before starting anything", async () => {
    const line = (fields: object) =>
      `${JSON.stringify({ type: "runner", sandbox: "required", limits: {}, killGraceMs: 2000, ...fields })}\n`;
    for (const [fields, why] of [
      [{ version: 2, mechanism: "chroot" }, "its mechanism must be bubblewrap or landlock"],
      [{ version: 2 }, "its mechanism must be bubblewrap or landlock"],
      [{ version: 2, mechanism: "landlock", sandbox: "off" }, "its mechanism names a sandbox, which its sandbox: off turns off"],
      [{ version: 1, mechanism: "landlock" }, "a launch line names a mechanism only in version 2"],
    ] as const) {
      const { code, stdout } = await runnerProcess(line(fields));
      expect(code, why).toBe(1);
      expect(JSON.parse(stdout)).toMatchObject({ refused: { code: "SpawnFailed", message: expect.stringContaining(why) } });
    }
  });

  it("refuses a launch line it cannot read, in its header, with exit status 1", async () => {
    const { code, stdout } = await runnerProcess('{"type":"runner","version":7}\n');
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toMatchObject({
      type: "runner",
      refused: { code: "SpawnFailed", message: expect.stringContaining("version 1 or 2") },
    });
  });
});

describe("the launch line", () => {
  it("is version 1 without a mechanism, version 2 with one (which an older runner, reading version 1 only, refuses)", () => {
    const limits = { memoryBytes: 1, processes: 2, cpuTimeMs: Infinity, tmpBytes: 4 };
    const plain = launchLine("auto", limits, new Set(["memoryBytes", "cpuTimeMs"]), 2000);
    expect(JSON.parse(plain)).toStrictEqual({
      type: "runner",
      version: 1,
      sandbox: "auto",
      limits: { memoryBytes: 1, cpuTimeMs: null },
      killGraceMs: 2000,
    });
    const named = launchLine("required", limits, new Set(), 5, "landlock");
    expect(JSON.parse(named)).toStrictEqual({
      type: "runner",
      version: 2,
      sandbox: "required",
      mechanism: "landlock",
      limits: {},
      killGraceMs: 5,
    });
    expect(parseLaunch(plain.trim())).toStrictEqual(JSON.parse(plain));
    expect(parseLaunch(named.trim())).toStrictEqual(JSON.parse(named));
  });
});
