/**
 * runGuest end to end: real child processes from fixtures/guests, one per failure mode. Every test
 * checks the report, that the child is gone, and (through the hooks) that no rejection went unhandled.
 */
import { describe, expect, it, vi } from "vitest";
import { Outcome, type Json } from "../../src/index.js";
import { DEFAULT_HOST_LIMITS, HostFailureCode, runGuest, type LogEntry } from "../../src/host/index.js";
import { captureWarnings, expectGone, failOnUnhandledRejections, fixture, runFixture } from "../helpers/host.js";

failOnUnhandledRejections();

const read = ({ path }: { path: string }) => `contents of ${path}`;

describe("runGuest with a well-behaved guest", () => {
  it("hosts the whole session and reports outcome, logs, calls, exit and frames", async () => {
    const frames: [string, string][] = [];
    const live: LogEntry[] = [];
    const report = await runFixture("echo.mjs", [], {
      input: { greeting: "hi" },
      capabilities: { read: (args) => read(args as { path: string }) },
      onFrame: (direction, line) => frames.push([direction, line]),
      onLog: (entry) => live.push(entry),
    });
    expect(report.failure).toBeUndefined();
    expect(report.ok).toBe(true);
    expect(report.outcome).toEqual({
      status: "success",
      content: "",
      structured: { echo: { greeting: "hi" }, length: "contents of README.md".length },
    });
    expect(report.hello).toEqual({ protocol: 1, sdk: "@posoco/ears@0.1.0" });
    expect(report.logs.map(({ level, content }) => [level, content])).toEqual([
      ["info", "starting { input: { greeting: 'hi' } }"],
      ["debug", "read ok"],
    ]);
    expect(live).toEqual(report.logs);
    expect(report.calls).toHaveLength(1);
    expect(report.calls[0]).toMatchObject({
      id: 1,
      name: "read",
      arguments: { path: "README.md" },
      outcome: { status: "success", content: "contents of README.md" },
    });
    expect(report.exit).toEqual({ code: 0, signal: null });
    expect(report.forcedStop).toBeUndefined();
    expect(report.stderr).toBe("");
    // The transcript: hello, invoke, then the session, ending with the result.
    expect(JSON.parse(frames[0]![1])).toMatchObject({ type: "hello" });
    expect(frames[1]).toEqual(["host", JSON.stringify({ type: "invoke", protocol: 1, allowed: ["read"], input: { greeting: "hi" } })]);
    expect(JSON.parse(frames.at(-1)![1])).toMatchObject({ type: "result" });
    expectGone(report);
  });

  it("runs the demo guest: lists the root, reads README.md and summarises it", async () => {
    const report = await runFixture("demo.mjs", [], {
      capabilities: {
        list: () =>
          Outcome.success("README.md\nsrc/", [
            { name: "README.md", type: "file" },
            { name: "src", type: "directory" },
          ]),
        read: () => "# Title\n\nSome words here.\n\n## Usage\n",
      },
    });
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toEqual({ title: "Title", lines: 6, words: 5, headings: ["Title", "Usage"] });
    expect(report.calls.map((c) => c.name)).toEqual(["list", "read"]);
    expect(report.logs.map((l) => l.content)).toContain("reading README.md");
    expectGone(report);
  });
});

describe("runGuest passes the guest's stderr to onStderr as it arrives", () => {
  // Cut 1 byte into "€" (3 bytes) and 3 bytes into "😀" (4 bytes): each cut splits a character across writes.
  const text = "chunked stderr: € and 😀 survive\nlast line without a newline";
  const bytes = Buffer.from(text);
  const cuts = [bytes.indexOf("€") + 1, bytes.indexOf("😀") + 3];

  /** Runs stderr-chunks.mjs; its "wrote" calls are answered once onStderr has seen every whole character written so far. */
  async function runChunks(options: { limits?: { maxStderrBytes: number }; throwing?: boolean } = {}) {
    const chunks: string[] = [];
    let seen = 0;
    let waiter: (() => void) | undefined;
    const report = await runFixture("stderr-chunks.mjs", [], {
      input: { text, cuts },
      limits: options.limits,
      onStderr: (chunk) => {
        chunks.push(chunk);
        seen += Buffer.byteLength(chunk);
        waiter?.();
        if (options.throwing) throw new Error("stderr sink broke");
      },
      capabilities: {
        wrote: async (args) => {
          const { bytes: written } = args as { bytes: number };
          // A character cut in two is held back until its last bytes arrive, so only whole ones count.
          const whole = Buffer.byteLength(
            bytes
              .subarray(0, written)
              .toString()
              .replace(/\uFFFD$/, ""),
          );
          while (seen < whole) await new Promise<void>((resolve) => (waiter = resolve));
        },
      },
    });
    return { report, chunks };
  }

  it("decodes characters split across chunks whole, and keeps the report's stderr tail as before", async () => {
    const { report, chunks } = await runChunks();
    expect(report.failure).toBeUndefined();
    expect(report.ok).toBe(true);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(chunks.join("")).toBe(text);
    expect(chunks.some((chunk) => chunk.includes("\uFFFD"))).toBe(false);
    expect(report.stderr).toBe(text);
    expect(report.droppedStderrBytes).toBe(0);
    expectGone(report);
  });

  it("passes everything even when the report keeps only a short tail", async () => {
    const { report, chunks } = await runChunks({ limits: { maxStderrBytes: 16 } });
    expect(chunks.join("")).toBe(text);
    expect(report.stderr).toBe(text.slice(-16)); // the last 16 bytes are ASCII
    expect(report.droppedStderrBytes).toBe(bytes.length - 16);
  });

  it("ignores an onStderr that throws, warning once", async () => {
    const { messages: warnings, restore } = captureWarnings();
    try {
      const { report, chunks } = await runChunks({ throwing: true });
      expect(report.ok).toBe(true);
      expect(chunks.join("")).toBe(text);
      expect(report.stderr).toBe(text);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.includes("options.onStderr threw") && w.includes("stderr sink broke"))).toHaveLength(1);
    } finally {
      restore();
    }
  });

  it("refuses an onStderr that is not a function before starting anything", () => {
    expect(() => runFixture("stderr-chunks.mjs", [], { onStderr: "log" as never })).toThrow(
      new TypeError("runGuest: options.onStderr must be a function"),
    );
  });
});

describe("runGuest with a guest that crashes", () => {
  it("reports GuestCrashed, exit code 1 and the stack on stderr when it throws while loading", async () => {
    const report = await runFixture("crash-at-start.mjs");
    expect(report.ok).toBe(false);
    expect(report.failure?.code).toBe(HostFailureCode.GuestCrashed);
    expect(report.failure?.message).toMatch(/crashed \(exit code 1\) before it said hello/);
    expect(report.exit).toEqual({ code: 1, signal: null });
    expect(report.stderr).toContain("boom: the guest failed while loading");
    expect(report.hello).toBeUndefined();
    expectGone(report);
  });

  it("reports GuestCrashed with exit code 3, the calls made and the stderr tail when it exits mid-run", async () => {
    const report = await runFixture("crash-mid-run.mjs", [], { capabilities: { read: () => "text" } });
    expect(report.failure?.code).toBe(HostFailureCode.GuestCrashed);
    expect(report.failure?.message).toContain("crashed (exit code 3) before it sent a result");
    expect(report.failure?.message).toContain("fatal: giving up mid-run");
    expect(report.exit).toEqual({ code: 3, signal: null });
    expect(report.outcome).toBeUndefined();
    expect(report.calls).toMatchObject([{ name: "read", outcome: { status: "success", content: "text" } }]);
    expect(report.logs).toMatchObject([{ level: "warn", content: "about to exit mid-run" }]);
    expect(report.stderr).toBe("fatal: giving up mid-run\n");
    expectGone(report);
  });

  it("reports NoResult, not a crash, when the guest exits with code 0 before its result", async () => {
    const report = await runFixture("crash-mid-run.mjs", ["0"], { capabilities: { read: () => "text" } });
    expect(report.failure).toEqual({
      code: HostFailureCode.NoResult,
      message:
        "the guest's output ended before it sent a result; the guest exited with exit code 0; " +
        'its stderr ends with: "fatal: giving up mid-run"',
    });
    expect(report.exit).toEqual({ code: 0, signal: null });
    expect(report.calls).toHaveLength(1);
    expectGone(report);
  });

  it("keeps only the tail of a large stderr", async () => {
    const script = "process.stderr.write('a'.repeat(200000) + 'THE END'); process.exitCode = 2";
    const report = await runGuest({ command: process.execPath, args: ["-e", script], limits: { maxStderrBytes: 1000 } });
    expect(report.failure?.code).toBe(HostFailureCode.GuestCrashed);
    expect(report.stderr).toHaveLength(1000);
    expect(report.stderr!.endsWith("aTHE END")).toBe(true);
    expect(report.droppedStderrBytes).toBe(200_007 - 1000);
    expectGone(report);
  });
});

describe("runGuest with a guest that hangs", () => {
  it("stops it at the run deadline: RunTimeout, and the child is gone", async () => {
    const report = await runFixture("hang.mjs", [], { limits: { runTimeoutMs: 1500 } });
    expect(report.failure).toEqual({
      code: HostFailureCode.RunTimeout,
      message: "the guest did not finish within 1500 ms (limits.runTimeoutMs); the run was stopped",
    });
    // Usually SIGTERM ends it; on a very slow machine the deadline can come before the guest's hello,
    // and the guest then exits by itself on the closed pipes. Either way it must be gone.
    expect(report.exit).toBeDefined();
    expectGone(report);
  });

  it("escalates to SIGKILL when the guest ignores SIGTERM, and the host's abort ends the run", async () => {
    const controller = new AbortController();
    const report = await runFixture("hang.mjs", ["ignore-sigterm"], {
      signal: controller.signal,
      onLog: (entry) => {
        if (entry.content === "hanging") controller.abort(new Error("user pressed ctrl-c"));
      },
    });
    expect(report.failure).toEqual({ code: HostFailureCode.Aborted, message: "the host aborted the run (user pressed ctrl-c)" });
    expect(report.forcedStop).toBe("SIGKILL");
    expect(report.exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(report.stderr).toContain("ignoring SIGTERM");
    expectGone(report);
  });

  // runGuest keeps the grace on a deadline (docs/host.md, "Shutdown"): a guest program may have cleanup to
  // do, unlike runCode's runner. Lower bounds on the report's duration only: timers never fire early.
  it("past its deadline a guest gets its grace: SIGTERM killGraceMs after the deadline, its cleanup in the report", async () => {
    const report = await runFixture("hang.mjs", ["cleanup"], { limits: { runTimeoutMs: 800 }, killGraceMs: 400 });
    expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
    expect(report.stderr).toContain("saved state");
    expect(report.forcedStop).toBe("SIGTERM");
    expect(report.durationMs).toBeGreaterThanOrEqual(800 + 400);
    expectGone(report);
  });

  it("a busy loop that cannot take SIGTERM is SIGKILLed a second grace later, and the report waits until it is gone", async () => {
    const report = await runFixture("hang.mjs", ["busy"], { limits: { runTimeoutMs: 800 }, killGraceMs: 400 });
    expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
    expect(report.forcedStop).toBe("SIGKILL");
    expect(report.stderr ?? "").not.toContain("ignoring SIGTERM");
    // Sandboxed too: SIGKILL goes to bubblewrap, which takes the sandbox with it.
    expect(report.exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(report.durationMs).toBeGreaterThanOrEqual(800 + 2 * 400);
    expectGone(report);
  });

  it("keeps the result of a guest that does not exit after it, and stops the process", async () => {
    const report = await runFixture("hang.mjs", ["after-result"]);
    expect(report.ok).toBe(true);
    expect(report.outcome).toEqual({ status: "success", content: "done, but staying alive" });
    expect(report.forcedStop).toBe("SIGTERM");
    // In a sandbox the guest is bubblewrap's child, and bubblewrap reports a signal as exit code 128 + N.
    expect(report.exit).toEqual(report.sandbox === null ? { code: null, signal: "SIGTERM" } : { code: 128 + 15, signal: null });
    expectGone(report);
  });

  it("does not start the guest when the signal is already aborted", async () => {
    const report = await runFixture("echo.mjs", [], { signal: AbortSignal.abort(new Error("not now")) });
    expect(report.failure).toEqual({
      code: HostFailureCode.Aborted,
      message: "the host aborted the run before the guest was started (not now)",
    });
    expect(report.pid).toBeUndefined();
    expect(report.exit).toBeUndefined();
  });
});

describe("runGuest with a guest that writes garbage", () => {
  const cases: [mode: string, fragment: string][] = [
    ["before-hello", '"Debugger listening on ws://127.0.0.1:9229/0f2c"'],
    ["mid-run", '"progress: 50% done"'],
    ["not-a-frame", 'a frame needs a type): "{\\"progress\\":50}"'],
    ["binary", "not valid UTF-8"],
    ["truncated", "ended in the middle of a frame"],
  ];
  it.each(cases)("reports ProtocolViolation for %s, naming the offending line", async (mode, fragment) => {
    const report = await runFixture("garbage.mjs", [mode], { capabilities: { read: () => "text" } });
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    expect(report.failure?.message).toContain(fragment);
    expect(report.ok).toBe(false);
    expect(report.exit).toBeDefined();
    expectGone(report);
  });

  it("reports a frame after the result as a ProtocolViolation, keeping the result", async () => {
    const report = await runFixture("garbage.mjs", ["after-result"]);
    expect(report.outcome).toEqual({ status: "success", content: "finished" });
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    expect(report.failure?.message).toContain("after its result");
    expect(report.failure?.message).toContain("written after the result");
    expect(report.ok).toBe(false);
    expectGone(report);
  });

  it("reports a request id reused while in flight as a ProtocolViolation, and aborts the running handler", async () => {
    let signal: AbortSignal | undefined;
    const report = await runFixture("duplicate-id.mjs", [], {
      capabilities: {
        slow: (_args, ctx) => {
          signal = ctx.signal;
          return new Promise(() => {});
        },
      },
    });
    expect(report.failure).toEqual({
      code: HostFailureCode.ProtocolViolation,
      message: "the guest reused request id 7 while that call was still in flight (ids must be unique in a run)",
    });
    expect(signal?.aborted).toBe(true);
    expect(report.calls).toHaveLength(1);
    expect(report.calls[0]!.outcome).toBeUndefined();
    expectGone(report);
  });
});

describe("runGuest with floods and large frames", () => {
  it("keeps the newest 10,000 of 100,000 log frames while onLog sees them all", async () => {
    let seen = 0;
    let last: LogEntry | undefined;
    const report = await runFixture("flood-logs.mjs", [], {
      onLog: (entry) => {
        seen++;
        last = entry;
      },
    });
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toEqual({ sent: 100_000 });
    expect(seen).toBe(100_000);
    expect(last).toMatchObject({ level: "debug", content: "log line 99999" });
    expect(report.logs).toHaveLength(10_000);
    expect(report.droppedLogs).toBe(90_000);
    expect(report.logs[0]).toMatchObject({ level: "info", content: "log line 90000" });
    expectGone(report);
  });

  it("receives a 20 MiB result intact", async () => {
    const report = await runFixture("big-result.mjs");
    expect(report.ok).toBe(true);
    expect(report.outcome?.content.length).toBe(20 * 1024 * 1024);
    expect(/^x+$/.test(report.outcome!.content)).toBe(true);
    expectGone(report);
  });

  it("stops a guest whose frame exceeds maxFrameBytes: FrameTooLarge", async () => {
    const report = await runFixture("big-result.mjs", [], { limits: { maxFrameBytes: 1024 * 1024 } });
    expect(report.failure?.code).toBe(HostFailureCode.FrameTooLarge);
    expect(report.failure?.message).toContain("1048576-byte limit (limits.maxFrameBytes)");
    expect(report.outcome).toBeUndefined();
    expectGone(report);
  });
});

describe("runGuest with a guest that does not read its replies", () => {
  it("stops taking its requests once 16 MiB of replies wait unread, instead of queueing them all", async () => {
    let ran = 0;
    const report = await runFixture("unread-replies.mjs", [], {
      limits: { runTimeoutMs: 3000 },
      capabilities: { big: () => (ran++, "r".repeat(1024 * 1024)) },
    });
    expect(report.failure?.code).toBe(HostFailureCode.RunTimeout);
    // About 16 replies fill the budget; without back-pressure all 200 would run and queue 200 MiB.
    expect(ran).toBeGreaterThanOrEqual(16);
    expect(ran).toBeLessThan(40);
    // The replies sent filled the budget; an answer that came after that was held unsent (the guest never
    // read), and a request read after the budget filled waits unstarted.
    const answered = report.calls.filter((call) => call.status !== undefined).length;
    expect(answered).toBeGreaterThanOrEqual(16);
    expect(answered).toBeLessThanOrEqual(ran);
    expect(ran - answered).toBeLessThanOrEqual(DEFAULT_HOST_LIMITS.maxRunningHandlers);
    expect(report.calls.length - ran).toBeLessThanOrEqual(1);
    expectGone(report);
  });
});

describe("runGuest with concurrent calls", () => {
  it("answers 1,000 concurrent calls, each with its own reply, in completion order", async () => {
    const count = 1000;
    let running = 0;
    let most = 0;
    const waiting: (() => void)[] = [];
    const replyIds: number[] = [];
    const report = await runFixture("many-calls.mjs", [], {
      input: { count },
      // All 1,000 handlers run at once (they wait for one another), past the default cap of 16.
      limits: { maxRunningHandlers: count },
      onFrame: (direction, line) => {
        if (direction === "host" && line.startsWith('{"type":"reply"')) replyIds.push((JSON.parse(line) as { id: number }).id);
      },
      capabilities: {
        // Every handler waits until all have started, then they finish last-arrived first.
        echo: async (args) => {
          running++;
          most = Math.max(most, running);
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            // Released a turn later, once every handler is awaiting.
            if (waiting.length === count) setImmediate(() => waiting.reverse().forEach((release) => release()));
          });
          running--;
          return args;
        },
      },
    });
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toEqual({ count, codes: { success: count }, mismatched: 0 });
    expect(most).toBe(count);
    expect(report.calls).toHaveLength(count);
    expect(replyIds).toEqual(Array.from({ length: count }, (_, i) => count - i));
    expectGone(report);
  });
});

describe("runGuest enforces the host's allowlist", () => {
  it("answers CapabilityDenied to a raw request outside allowed, and never runs the handler", async () => {
    const remove = vi.fn(() => "deleted");
    const report = await runFixture("skip-allowlist.mjs", ["delete"], {
      allowed: ["read"],
      capabilities: { read: () => "text", delete: remove },
    });
    expect(remove).not.toHaveBeenCalled();
    expect(report.ok).toBe(true);
    expect(report.outcome?.content).toBe('allowed was ["read"]');
    expect(report.outcome?.structured).toEqual({
      status: "failure",
      code: "CapabilityDenied",
      content: 'capability "delete" is not allowed by the host (allowed: "read"); it did not run',
    });
    expect(report.calls).toEqual([expect.objectContaining({ id: 1, name: "delete", arguments: { path: "/etc/passwd" }, denied: true })]);
    expectGone(report);
  });
});

describe("runGuest refuses what it cannot host", () => {
  it("refuses a protocol 2 guest: ProtocolMismatch, nothing sent, stdin closed", async () => {
    const frames: string[] = [];
    const report = await runFixture("protocol-2.mjs", [], { onFrame: (direction) => frames.push(direction) });
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolMismatch);
    expect(report.failure?.message).toContain(
      "the guest (future-sdk@2.0.0) speaks protocol 2, but this host speaks protocol 1; the guest was not invoked",
    );
    expect(report.hello).toEqual({ protocol: 2, sdk: "future-sdk@2.0.0" });
    expect(frames).toEqual(["guest"]);
    expect(report.stderr).toBe("stdin closed after 0 bytes\n");
    expect(report.exit).toEqual({ code: 0, signal: null });
    expectGone(report);
  });

  it("reports NoHello for a program that exits without saying hello", async () => {
    const report = await runFixture("no-hello.mjs", ["exit"]);
    expect(report.failure?.code).toBe(HostFailureCode.NoHello);
    expect(report.failure?.message).toBe(
      "the guest's output ended before it said hello; the guest exited with exit code 0; " +
        'its stderr ends with: "this program is not an ears guest"',
    );
    expect(report.exit).toEqual({ code: 0, signal: null });
    expectGone(report);
  });

  it("reports HelloTimeout for a program that stays silent, and stops it", async () => {
    const report = await runFixture("no-hello.mjs", ["hang"], { limits: { helloTimeoutMs: 500 } });
    expect(report.failure?.code).toBe(HostFailureCode.HelloTimeout);
    expect(report.failure?.message).toContain("within 500 ms");
    expect(report.forcedStop).toBe("SIGTERM");
    expectGone(report);
  });

  it("reports SpawnFailed for a command that does not exist", async () => {
    const report = await runGuest({ command: "ears-no-such-command-x7", args: ["a"] });
    expect(report.failure?.code).toBe(HostFailureCode.SpawnFailed);
    expect(report.failure?.message).toContain("ENOENT");
    expect(report.failure?.message).toContain("on PATH");
    expect(report.pid).toBeUndefined();
    expect(report.exit).toBeUndefined();
  });

  it("survives EPIPE when the guest closed its stdin, and still takes its result", async () => {
    // The fixture closes fd 0 before its hello, so writing the invoke fails with EPIPE.
    const report = await runFixture("closed-stdin.mjs");
    expect(report.ok).toBe(true);
    expect(report.outcome).toEqual({ status: "success", content: "never saw the invoke" });
    expectGone(report);
  });

  it("throws synchronously on invalid options, before starting anything", () => {
    expect(() => runGuest({ command: "" })).toThrow(TypeError);
    expect(() => runGuest({ command: process.execPath, args: [1 as unknown as string] })).toThrow(/args must be an array of strings/);
    expect(() => runGuest({ command: process.execPath, killGraceMs: -1 })).toThrow(RangeError);
    expect(() => runGuest({ command: process.execPath, limits: { runTimeoutMs: 0 } })).toThrow(/runTimeoutMs must be a positive number/);
    expect(() => runGuest({ command: process.execPath, input: { n: 1n } as unknown as Json })).toThrow(/BigInt/);
    expect(() => runGuest({ command: process.execPath, args: [fixture("echo.mjs")], limits: { maxInFlight: 1.5 } })).toThrow(
      /positive integer/,
    );
  });
});
