// Real child processes running fixture guests that import "@posoco/ears" (dist/, so build first): the
// behaviour that only exists at process level — EOF, EPIPE, flushing before exit, stdout purity, exit
// status and the single stderr line of a broken session. No timing assertions: every wait has a generous
// safety bound that only a hang can reach.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SpawnedGuest, killLeftoverChildren, requireBuild } from "../helpers/spawned-guest.js";

let scratch: string;
beforeAll(() => {
  requireBuild();
  scratch = mkdtempSync(join(tmpdir(), "ears-core-"));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(killLeftoverChildren);

const invoke = (allowed: string[] = ["read"], protocol = 1) => ({ type: "invoke", protocol, allowed, input: "in" }) as const;

describe("spawned guests", () => {
  it("EOF mid-call: the waiting call fails, the result is GuestFailed naming the transport error, exit 0 by itself", async () => {
    const guest = new SpawnedGuest("call-and-return.mjs");
    expect(await guest.nextFrame()).toEqual({ type: "hello", protocol: 1, sdk: "@posoco/ears@0.1.0" });
    guest.send(invoke());
    expect(await guest.nextFrame()).toEqual({ type: "request", id: 1, name: "read", arguments: { path: "README.md" } });
    guest.child.stdin!.end();
    const rest = await guest.restFrames();
    expect(rest.at(-1)).toEqual({
      type: "result",
      outcome: {
        status: "failure",
        code: "GuestFailed",
        content: 'the host closed the connection before replying to "read"; the request may already have executed',
      },
    });
    expect(rest.slice(0, -1).map((f) => f.type)).toEqual(["log"]); // the error's stack, at level error
    expect(await guest.exited()).toEqual({ code: 0, signal: null });
    expect(guest.stderrLines()).toEqual(["program ran"]);
    expect(guest.invalid).toEqual([]);
  });

  it("EPIPE: after the host stops reading stdout, logging and calling neither crash nor spin; exit 1 with one stderr line", async () => {
    const report = join(scratch, "keeps-talking.json");
    const guest = new SpawnedGuest("keeps-talking.mjs", { env: { EARS_TEST_REPORT: report } });
    expect(await guest.nextFrame()).toMatchObject({ type: "hello" });
    guest.child.stdout!.destroy();
    guest.send(invoke()); // stdin stays open: the guest must leave by itself
    expect(await guest.exited()).toEqual({ code: 1, signal: null });
    const lines = guest.stderrLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ears: could not write the result: writing to the host failed \(EPIPE\)$/);
    const calls = JSON.parse(readFileSync(report, "utf8")) as unknown[];
    expect(calls).toHaveLength(200);
    for (const call of calls) expect(call).toMatchObject({ name: "TransportError", kind: "write-failed" });
  });

  it("a 5 MB result read slowly by the host arrives whole before the process exits", async () => {
    const bytes = 5 * 1024 * 1024;
    const guest = new SpawnedGuest("../guests/big-result.mjs", { env: { EARS_TEST_BYTES: String(bytes) }, paused: true });
    guest.send(invoke([]));
    guest.startReading(2);
    const frames = await guest.restFrames();
    expect({ invalid: guest.invalid, stderr: guest.stderr }).toEqual({ invalid: [], stderr: "" });
    expect(frames.map((f) => f.type)).toEqual(["hello", "result"]);
    const result = frames[1] as { outcome: { status: string; content: string } };
    expect(result.outcome.status).toBe("success");
    expect(Buffer.byteLength(result.outcome.content)).toBe(bytes);
    expect(result.outcome.content).toBe("é".repeat(bytes / 4) + "x".repeat(bytes / 2));
    expect(Buffer.concat(guest.stdoutChunks).at(-1)).toBe(0x0a);
    expect(await guest.exited()).toEqual({ code: 0, signal: null });
    expect(guest.stderr).toBe("");
  });

  const stdoutStaysPure =
    "stdout stays pure: console.* and process.stdout.write, before serve and during the run, arrive as log frames with levels";
  it(stdoutStaysPure, async () => {
    const guest = new SpawnedGuest("pollutes-stdout.mjs");
    expect(await guest.nextFrame()).toMatchObject({ type: "hello", protocol: 1 });
    guest.send(invoke([]));
    const rest = await guest.restFrames();
    expect(await guest.exited()).toEqual({ code: 0, signal: null });
    expect(guest.invalid).toEqual([]);
    const stdout = Buffer.concat(guest.stdoutChunks).toString("utf8");
    expect(stdout.endsWith("\n")).toBe(true);
    expect(stdout.split("\n").length - 1).toBe(rest.length + 1);
    expect(rest.at(-1)).toEqual({ type: "result", outcome: { status: "success", content: "", structured: "clean" } });
    const logs = rest.slice(0, -1).map((f) => (f.type === "log" ? [f.level, f.content] : f.type));
    expect(logs).toEqual([
      ["info", "before serve: console.log"],
      ["info", "before serve: stdout.write"],
      ["info", "log 1"],
      ["info", "info"],
      ["debug", "debug"],
      ["warn", "warn"],
      ["error", "error"],
      ["debug", expect.stringMatching(/^Trace: trace\n\s+at /)],
      ["info", "{ dir: true }"],
      ["info", "raw write without newline"],
      ["info", "raw bytes"],
      ["info", "write with callback"],
      ["info", "hi"],
      ["info", "hi base64"],
      ["info", "caf\ufffd"], // latin1 é is byte E9, not UTF-8: decoded like any binary chunk
      ["info", "hex with cb"],
    ]);
    expect(guest.stderr).toBe("");
  });

  it("an invoke for protocol 2 is refused: the program never runs, no result, exit 1 with one line naming 2 and 1", async () => {
    const guest = new SpawnedGuest("call-and-return.mjs");
    expect(await guest.nextFrame()).toMatchObject({ type: "hello" });
    guest.send(invoke(["read"], 2));
    expect(await guest.restFrames()).toEqual([]);
    expect(await guest.exited()).toEqual({ code: 1, signal: null });
    expect(guest.stderrLines()).toEqual([
      "ears: the host's invoke asks for protocol 2, but this guest speaks protocol 1; the program did not run",
    ]);
  });

  it("stdin already ended at start (</dev/null): hello, then exit 1 with one clear line, no hang", async () => {
    const guest = new SpawnedGuest("call-and-return.mjs", { stdin: "ignore" });
    expect(await guest.restFrames()).toEqual([{ type: "hello", protocol: 1, sdk: "@posoco/ears@0.1.0" }]);
    expect(await guest.exited()).toEqual({ code: 1, signal: null });
    expect(guest.stderrLines()).toEqual(["ears: the host closed the connection before sending invoke; the program did not run"]);
  });

  it("a stray line while no call waits: the guest reports the break as an error log at once, then completes normally, exit 0", async () => {
    const guest = new SpawnedGuest("waits-for-signal.mjs");
    expect(await guest.nextFrame()).toMatchObject({ type: "hello" });
    guest.send(invoke());
    guest.child.stdin!.write('{"type":"ping"}\n');
    const reason = 'the host sent a malformed frame (unknown frame type "ping": {"type":"ping"})';
    // Written while the program still waits for the signal: the break is never silent.
    expect(await guest.nextFrame()).toEqual({
      type: "log",
      level: "error",
      content: `ears: the session with the host is broken: ${reason}`,
    });
    guest.child.kill("SIGUSR2");
    expect(await guest.restFrames()).toEqual([
      { type: "log", level: "info", content: "still running" },
      { type: "result", outcome: { status: "success", content: "", structured: `malformed: ${reason}; "read" was not sent` } },
    ]);
    expect(await guest.exited()).toEqual({ code: 0, signal: null });
    expect(guest.stderr).toBe("");
    expect(guest.invalid).toEqual([]);
  });

  for (const [mode, expected] of [
    ["throw", "an uncaught exception escaped the program: thrown from a timer"],
    ["reject", "a promise rejection nobody handled escaped the program: lost rejection"],
  ] as const) {
    it(`an error that escapes the program (${mode}) ends the run as GuestFailed instead of crashing: exit 0`, async () => {
      const guest = new SpawnedGuest("escapes.mjs", { env: { EARS_ESCAPE: mode } });
      expect(await guest.nextFrame()).toMatchObject({ type: "hello" });
      guest.send(invoke([]));
      const rest = await guest.restFrames();
      expect(rest.at(-1)).toEqual({ type: "result", outcome: { status: "failure", code: "GuestFailed", content: expected } });
      expect(rest.slice(0, -1)).toEqual([expect.objectContaining({ type: "log", level: "error" })]);
      expect(await guest.exited()).toEqual({ code: 0, signal: null });
      expect(guest.stderr).toBe("");
      expect(guest.invalid).toEqual([]);
    });
  }

  it("only the first escaped error ends the run; later ones reach the host as error logs, and after the result stderr", async () => {
    const guest = new SpawnedGuest("escapes.mjs", { env: { EARS_ESCAPE: "several" } });
    expect(await guest.nextFrame()).toMatchObject({ type: "hello" });
    guest.send(invoke([]));
    const rest = await guest.restFrames();
    expect(rest.at(-1)).toEqual({
      type: "result",
      outcome: {
        status: "failure",
        code: "GuestFailed",
        content: "a promise rejection nobody handled escaped the program: first lost rejection",
      },
    });
    // Two error logs with the stacks: the first error's (before its result) and the second's.
    const logs = rest.slice(0, -1);
    expect(logs).toHaveLength(2);
    expect(logs).toEqual(
      expect.arrayContaining([
        { type: "log", level: "error", content: expect.stringMatching(/^Error: first lost rejection\n\s+at /) },
        { type: "log", level: "error", content: expect.stringMatching(/^Error: second lost rejection\n\s+at /) },
      ]),
    );
    expect(await guest.exited()).toEqual({ code: 0, signal: null });
    expect(guest.stderr).toMatch(/^Error: thrown after the result\n\s+at /);
    expect(guest.invalid).toEqual([]);
  });
});
