/**
 * The far end of a remote runner (`ears runner`, docs/remote.md): reads the host's launch line, starts the
 * code runner (or the guest its own command line names) exactly as a local run starts it (this machine's
 * sandbox, limits, cgroup and watchdog: code-launch.ts, run-guest.ts), says what confined it, relays its
 * stdio, and once it is gone reports how it ended (runner-lines.ts). It refuses to run unconfined unless
 * its own command line allows it (`--no-sandbox`): what the host asks for never does. When its stdin ends
 * (the host closed it, or the connection is gone) the guest is ended as after a result: stdin closed, then
 * SIGTERM and SIGKILL after the grace; when its stdout breaks, at once.
 */
import { performance } from "node:perf_hooks";
import type { Readable, Writable } from "node:stream";
import { describeError } from "../../protocol/errors.js";
import { SDK } from "../../protocol/version.js";
import { codeLaunch, withWorkDir } from "../code/code-launch.js";
import * as failures from "../report/failures.js";
import type { GuestOutcome } from "../process/guest-process.js";
import { checkLaunch, StartedGuest, startGuest, type CheckedLaunch } from "../run-guest.js";
import type { SandboxSetting } from "../sandbox/types.js";
import { HostFailureCode } from "../report/codes.js";
import type { HostFailure, HostLimits } from "../api/types.js";
import {
  MAX_RUNNER_LINE_BYTES,
  newNonce,
  parseLaunch,
  RUNNER_LINES,
  trailerMark,
  type RunnerHeader,
  type RunnerLaunch,
  type RunnerTrailer,
} from "./runner-lines.js";

/** What the runner's own command line says. */
export interface RunnerOptions {
  /** `--no-sandbox`: the host may have the guest run unconfined (`sandbox: false`, or "auto" without bubblewrap here). */
  noSandbox: boolean;
  /** `-- COMMAND ARGS`: the guest program to run instead of the code runner. */
  guest?: { command: string; args: string[] } | undefined;
}

/** The runner's streams (its process's, or buffers in tests). */
export interface RunnerIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  /** Fires on SIGTERM/SIGINT/SIGHUP: the guest is stopped at once. */
  signal?: AbortSignal | undefined;
}

/** Exit status of a runner that refused the run (its header says why). */
export const RUNNER_REFUSED = 1;

/** Serves one run; resolves with the runner's exit status. Never rejects. */
export async function serveRunner(options: RunnerOptions, io: RunnerIo): Promise<number> {
  io.stdout.on("error", () => {}); // the host gone: the relay below sees it and stops the guest
  const first = await firstLine(io.stdin);
  // The host went away before asking for anything: nothing to do.
  if (first === undefined) return 0;
  const refuse = (failure: HostFailure) => {
    const header: RunnerHeader = { type: "runner", version: RUNNER_LINES, sdk: SDK, refused: failure };
    io.stdout.write(`${JSON.stringify(header)}\n`);
    return RUNNER_REFUSED;
  };
  const launch = "problem" in first ? first.problem : parseLaunch(first.line);
  if (typeof launch === "string") return refuse(badLaunch(launch));
  if (launch.sandbox === "off" && !options.noSandbox) {
    return refuse({
      code: HostFailureCode.SandboxUnavailable,
      message:
        "the host asked for no sandbox (sandbox: false), which this runner allows only when its own command line " +
        "says ears runner --no-sandbox; nothing was started",
    });
  }
  let checked: CheckedLaunch;
  try {
    checked = checkedLaunch(launch, options, (chunk) => io.stderr.write(chunk));
  } catch (error) {
    return refuse(badLaunch(describeError(error)));
  }
  const own = options.guest === undefined ? await withWorkDir(checked) : { launch: checked, remove: () => Promise.resolve() };
  if ("failure" in own) return refuse(own.failure);
  const startedAt = performance.now();
  const started = await startGuest(own.launch, startedAt);
  if (!(started instanceof StartedGuest)) {
    await own.remove();
    return refuse(started.failure ?? failures.hostFailed(new Error("the guest did not start")));
  }
  let nonce: string | undefined;
  const report = await started.finish(async (guest) => {
    const spawnError = await guest.started;
    if (spawnError !== undefined) return { failure: failures.spawnFailed(started.spawned, spawnError) };
    nonce = newNonce();
    const header: RunnerHeader = { type: "runner", version: RUNNER_LINES, sdk: SDK, nonce, sandbox: started.sandbox };
    if (started.sandboxFallback !== undefined) header.sandboxFallback = started.sandboxFallback;
    io.stdout.write(`${JSON.stringify(header)}\n`);
    return relay(started, first.rest, io);
  }, startedAt);
  await own.remove();
  if (nonce === undefined) return refuse(report.failure ?? failures.hostFailed(new Error("the guest did not start")));
  const trailer: RunnerTrailer = { exit: report.exit ?? { code: null, signal: null } };
  if (report.forcedStop !== undefined) trailer.forcedStop = report.forcedStop;
  if (report.failure !== undefined) trailer.failure = report.failure;
  if (report.limits !== undefined) trailer.limits = report.limits;
  if (report.usage !== undefined) trailer.usage = report.usage;
  await new Promise<void>((resolve) => {
    io.stdout.write(Buffer.concat([trailerMark(nonce!), Buffer.from(`${JSON.stringify(trailer)}\n`)]), () => resolve());
  });
  return 0;
}

/** The launch the host asked for, as this machine runs it: the code runner, or the guest this runner's command line names. */
function checkedLaunch(launch: RunnerLaunch, options: RunnerOptions, onStderr: (chunk: string) => void): CheckedLaunch {
  // Without --no-sandbox every run is confined, whatever the host asked ("auto" is no permission to run unconfined).
  // A mechanism the host named is required: confined with it, or refused (the mechanism cannot start here).
  const sandbox: SandboxSetting =
    launch.mechanism !== undefined
      ? { mechanism: launch.mechanism }
      : !options.noSandbox || launch.sandbox === "required"
        ? true
        : launch.sandbox === "off"
          ? false
          : "auto";
  const limits: HostLimits = {};
  for (const [name, value] of Object.entries(launch.limits)) limits[name as keyof HostLimits] = value ?? Infinity;
  const common = { sandbox, limits, killGraceMs: launch.killGraceMs, onStderr };
  if (options.guest === undefined) return codeLaunch(common, "runCode");
  return checkLaunch({ ...common, command: options.guest.command, args: options.guest.args }, "runGuest", {});
}

function badLaunch(problem: string): HostFailure {
  return { code: HostFailureCode.SpawnFailed, message: `the runner could not read the host's launch line: ${problem}` };
}

/** The first line of `stdin` and the bytes after it (stdin is left paused); undefined when stdin ends first. */
function firstLine(stdin: Readable): Promise<{ line: string; rest: Buffer } | { problem: string; rest: Buffer } | undefined> {
  return new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    const done = (value: { line: string; rest: Buffer } | { problem: string; rest: Buffer } | undefined) => {
      stdin.pause();
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onEnd);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(0x0a);
      if (newline >= 0) done({ line: buffered.subarray(0, newline).toString("utf8"), rest: buffered.subarray(newline + 1) });
      else if (buffered.length > MAX_RUNNER_LINE_BYTES)
        done({ problem: `it is over ${MAX_RUNNER_LINE_BYTES} bytes`, rest: Buffer.alloc(0) });
    };
    const onEnd = () => done(undefined);
    stdin.on("data", onData);
    stdin.once("end", onEnd);
    stdin.once("error", onEnd);
  });
}

/**
 * Relays the host's bytes to the guest's stdin and the guest's stdout to the host, unchanged, until the
 * guest's stdout ends. The host's end of input ends the guest as a result does; a broken output, or the
 * runner's own signal, stops it at once.
 */
function relay(started: StartedGuest, rest: Buffer, io: RunnerIo): Promise<GuestOutcome> {
  const { child, process: guest } = started;
  return new Promise((resolve) => {
    const stopNow = () => guest.stop("failure");
    if (io.signal?.aborted) stopNow();
    io.signal?.addEventListener("abort", stopNow, { once: true });
    child.stdin.on("error", () => {});
    if (rest.length > 0) child.stdin.write(rest);
    io.stdin.on("data", (chunk: Buffer) => {
      if (child.stdin.writableEnded || child.stdin.destroyed) return;
      if (!child.stdin.write(chunk)) {
        io.stdin.pause();
        child.stdin.once("drain", () => io.stdin.resume());
      }
    });
    // The end of input may already have been read while stdin was paused after the launch line (a host that
    // wrote it and closed, or died while the runner started): its "end" event then came with no listener.
    if (io.stdin.readableEnded) guest.stop("result");
    else io.stdin.once("end", () => guest.stop("result"));
    io.stdin.once("error", stopNow);
    io.stdin.resume();
    io.stdout.once("error", stopNow);
    child.stdout.on("data", (chunk: Buffer) => {
      if (!io.stdout.write(chunk)) {
        child.stdout.pause();
        io.stdout.once("drain", () => child.stdout.resume());
      }
    });
    const ended = () => {
      io.signal?.removeEventListener("abort", stopNow);
      resolve({});
    };
    child.stdout.once("end", ended);
    child.stdout.once("close", ended);
  });
}
