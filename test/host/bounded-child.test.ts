/**
 * The one spawn-with-deadline helper (src/host/process/bounded-child.ts) that tsc, bubblewrap's start probe and
 * the guest run on: real processes, found from outside through /proc by a marker in their command line.
 */
import { describe, expect, it } from "vitest";
import { BoundedChild, runBounded, spawnInGroup } from "../../src/host/process/bounded-child.js";
import { failOnUnhandledRejections } from "../helpers/host.js";
import { exists, liveWith, markersKilledAfterEach } from "../helpers/processes.js";

failOnUnhandledRejections();

const newMarker = markersKilledAfterEach();

describe.runIf(process.platform === "linux")("runBounded", () => {
  it("at the deadline stops the whole group, the grandchild too, with SIGTERM first", async () => {
    const marker = newMarker();
    const end = await runBounded(
      "/bin/sh",
      ["-c", `sleep ${marker} & wait`],
      { stdio: "ignore" },
      { killGraceMs: 2000, timeoutMs: 200, timeoutReason: "too slow" },
    );
    expect(end).toMatchObject({ spawnError: undefined, stopped: "too slow", forced: "SIGTERM", exit: { code: null, signal: "SIGTERM" } });
    // Settled after the group is gone, not just the child: nothing to wait for.
    expect(liveWith(marker)).toEqual([]);
  });

  it("SIGKILLs the group after the grace when the child and its grandchild ignore SIGTERM", async () => {
    const marker = newMarker();
    const end = await runBounded(
      "/bin/sh",
      ["-c", `trap '' TERM; sleep ${marker} & wait; wait`],
      { stdio: "ignore" },
      { killGraceMs: 100, timeoutMs: 100 },
    );
    expect(end).toMatchObject({ stopped: "the deadline of 100 ms passed", forced: "SIGKILL", exit: { signal: "SIGKILL" } });
    expect(liveWith(marker)).toEqual([]);
  });

  it("a child that ends by itself is not forced, and what it left in its group is stopped", async () => {
    const marker = newMarker();
    const end = await runBounded(
      "/bin/sh",
      ["-c", `sleep ${marker} & exit 3`],
      { stdio: "ignore" },
      { killGraceMs: 1000, timeoutMs: 60_000 },
    );
    expect(end).toMatchObject({ stopped: undefined, forced: undefined, exit: { code: 3, signal: null } });
    expect(liveWith(marker)).toEqual([]);
  });

  it("an abort stops it with the abort's reason; an already aborted signal stops it at once", async () => {
    const controller = new AbortController();
    const ending = runBounded(
      "sleep",
      ["30"],
      { stdio: "ignore" },
      { killGraceMs: 1000, signal: controller.signal, abortReason: "aborted here" },
    );
    setTimeout(() => controller.abort(), 50);
    expect(await ending).toMatchObject({ stopped: "aborted here", forced: "SIGTERM", exit: { signal: "SIGTERM" } });
    const early = await runBounded("sleep", ["30"], { stdio: "ignore" }, { killGraceMs: 1000, signal: AbortSignal.abort() });
    expect(early).toMatchObject({ stopped: "aborted", forced: "SIGTERM" });
  });

  it("keeps the first or the last maxBytes of its output and counts the rest, whatever it writes", async () => {
    // 60,000 bytes of "a" on stdout, then "é" (2 bytes) on stderr, then 10 bytes of "z" on stdout.
    const script = "process.stdout.write('a'.repeat(60000)); process.stderr.write('é'); process.stdout.write('z'.repeat(10));";
    const spawnOptions = { stdio: ["ignore", "pipe", "pipe"] as ["ignore", "pipe", "pipe"] };
    const streams = ["stdout", "stderr"] as const;
    const first = await runBounded(process.execPath, ["-e", script], spawnOptions, {
      killGraceMs: 1000,
      output: { streams, maxBytes: 1000, keep: "first" },
    });
    expect(first.output).toBe("a".repeat(1000));
    expect(first.droppedBytes).toBe(60_000 + 2 + 10 - 1000);
    const last = await runBounded(process.execPath, ["-e", script], spawnOptions, {
      killGraceMs: 1000,
      output: { streams: ["stdout"], maxBytes: 15, keep: "last" },
    });
    expect(last.output).toBe("aaaaazzzzzzzzzz");
    expect(last.droppedBytes).toBe(60_000 - 5);
    // A bound that cuts a character keeps the whole characters before it.
    const cut = await runBounded(process.execPath, ["-e", "process.stdout.write('xé')"], spawnOptions, {
      killGraceMs: 1000,
      output: { streams: ["stdout"], maxBytes: 2, keep: "first" },
    });
    expect(cut).toMatchObject({ output: "x", droppedBytes: 1 });
  });

  it("passes all of its output as text as it comes, a character split across writes whole", async () => {
    const texts: string[] = [];
    const script =
      "const b = Buffer.from('é'); process.stdout.write(b.subarray(0, 1)); setTimeout(() => process.stdout.write(b.subarray(1)), 50);";
    const end = await runBounded(
      process.execPath,
      ["-e", script],
      { stdio: ["ignore", "pipe", "ignore"] },
      { killGraceMs: 1000, output: { streams: ["stdout"], maxBytes: 1, keep: "last", onText: (text) => texts.push(text) } },
    );
    expect(texts).toEqual(["é"]);
    expect(end.droppedBytes).toBe(1);
  });

  it("a command that cannot start is reported, not thrown: ENOENT, and a spawn that throws", async () => {
    const missing = await runBounded("/no/such/command", [], { stdio: "ignore" }, { killGraceMs: 1000, timeoutMs: 1000 });
    expect(missing).toMatchObject({ spawnError: { code: "ENOENT" }, exit: undefined, stopped: undefined, output: "" });
    const invalid = await runBounded("sleep", ["1\0"], { stdio: "ignore" }, { killGraceMs: 1000 });
    expect(invalid.spawnError).toMatchObject({ code: "ERR_INVALID_ARG_VALUE" });
  });
});

describe.runIf(process.platform === "linux")("BoundedChild", () => {
  it("settles once, after the child is gone: every end() is the same promise, a stop after the end changes nothing", async () => {
    const child = spawnInGroup("sleep", ["30"], { stdio: ["pipe", "ignore", "ignore"] });
    const bounded = new BoundedChild(child, { killGraceMs: 1000 });
    expect(await bounded.started).toBeUndefined();
    const pid = child.pid!;
    const ending = bounded.end();
    expect(bounded.end()).toBe(ending);
    bounded.stop("first");
    bounded.stop("second", "end");
    const end = await ending;
    expect(end).toMatchObject({ stopped: "first", forced: "SIGTERM", exit: { signal: "SIGTERM" } });
    expect(exists(pid)).toBe(false);
    bounded.stop("after the end");
    expect(await bounded.end()).toBe(end);
    expect(end.stopped).toBe("first");
  });

  it("adopted (a pooled runner taken by a run): the kept output goes to the new callback first, then what follows", async () => {
    const script = "process.stderr.write('waited '); process.stdin.resume().on('end', () => process.stderr.write('ran'))";
    const child = spawnInGroup(process.execPath, ["-e", script], { stdio: ["pipe", "ignore", "pipe"] });
    const bounded = new BoundedChild(child, { killGraceMs: 5000, output: { streams: ["stderr"], maxBytes: 1000, keep: "last" } });
    await new Promise((resolve) => child.stderr!.once("data", resolve)); // it has written while it waited
    const texts: string[] = [];
    bounded.adopt(5000, (text) => texts.push(text));
    bounded.stop("run over", "end");
    const end = await bounded.end();
    expect(texts.join("")).toBe("waited ran");
    expect(end).toMatchObject({ output: "waited ran", forced: undefined, exit: { code: 0 } });
  });

  it("closing stdin is the first step: a child that exits when its input ends is not forced", async () => {
    const child = spawnInGroup("cat", [], { stdio: ["pipe", "ignore", "ignore"] });
    const bounded = new BoundedChild(child, { killGraceMs: 5000 });
    await bounded.started;
    bounded.stop("done with it", "end");
    expect(await bounded.end()).toMatchObject({ stopped: "done with it", forced: undefined, exit: { code: 0 } });
  });
});

describe.runIf(process.platform === "linux")("a stop at once (runCode's runner, which has nothing to clean up)", () => {
  it('"kill" SIGKILLs the child and its group at once, not after killGraceMs, and counts as forced', async () => {
    const marker = newMarker();
    const child = spawnInGroup("/bin/sh", ["-c", `trap '' TERM; sleep ${marker} & while :; do :; done`], { stdio: "ignore" });
    // A grace no test could wait out: only a kill at once ends this child before the test's time limit.
    const bounded = new BoundedChild(child, { killGraceMs: 600_000 });
    await bounded.started;
    bounded.stop("the deadline passed", "kill");
    const end = await bounded.end();
    expect(end).toMatchObject({ stopped: "the deadline passed", forced: "SIGKILL", exit: { signal: "SIGKILL" } });
    expect(exists(child.pid!)).toBe(false);
    expect(liveWith(marker)).toEqual([]);
  });

  it('"finish" (the child\'s work is done) SIGKILLs it at once as well, and is not counted as forced', async () => {
    const marker = newMarker();
    const child = spawnInGroup("/bin/sh", ["-c", `trap '' TERM; sleep ${marker} & while :; do :; done`], {
      stdio: ["pipe", "ignore", "ignore"],
    });
    const bounded = new BoundedChild(child, { killGraceMs: 600_000 });
    await bounded.started;
    bounded.stop("result", "finish");
    const end = await bounded.end();
    expect(end).toMatchObject({ stopped: "result", forced: undefined, exit: { signal: "SIGKILL" } });
    expect(liveWith(marker)).toEqual([]);
  });
});
