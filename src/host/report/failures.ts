/**
 * Every run-level failure the host reports (a {@link HostFailure}: its code and its message), for the
 * session, runGuest and runCode alike: the wording a host's user reads lives here, in one file. The
 * failure replies to a single call are in call-failures.ts.
 */
import { byteSize, clip, quotedExcerpt } from "../../protocol/text.js";
import { describeError } from "../../protocol/errors.js";
import { PROTOCOL } from "../../protocol/frames.js";
import { HostFailureCode } from "./codes.js";
import type { HostFailure, RunDetails } from "../api/types.js";

// Before the guest runs (runGuest, runCode).

export function abortedBeforeStart(reason: unknown): HostFailure {
  return { code: HostFailureCode.Aborted, message: `the host aborted the run before the guest was started (${describeError(reason)})` };
}

export function sandboxUnavailable(reason: string): HostFailure {
  return { code: HostFailureCode.SandboxUnavailable, message: `the guest was not started: a sandbox was required but ${reason}` };
}

export function spawnFailed(command: string, error: unknown): HostFailure {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const advice =
    code === "ENOENT"
      ? "; check that the program exists and is on PATH (no shell is used, so shell built-ins and aliases do not work)"
      : code === "EACCES"
        ? "; check that the file is executable"
        : "";
  return { code: HostFailureCode.SpawnFailed, message: `could not start ${JSON.stringify(command)}: ${describeError(error)}${advice}` };
}

/** A resource limit the host asked for that this machine (or this run's confinement) cannot enforce. */
export function limitUnavailable(reason: string): HostFailure {
  return { code: HostFailureCode.SandboxUnavailable, message: `the guest was not started: ${reason}` };
}

/** The launcher could not prepare the run (join its cgroup, set an rlimit); its stderr line says which. */
export function launcherFailed(line: string): HostFailure {
  return { code: HostFailureCode.SandboxUnavailable, message: `the guest was not started: ${clip(line, 300)}` };
}

/** A code body past its run's deadline: the model is told its code ran too long, and what to do. */
export function codeRunTimedOut(ms: number): HostFailure {
  const time = ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
  return {
    code: HostFailureCode.RunTimeout,
    message:
      // The host's setting stays named, last in its parentheses, for the host's developer (and the CLI's --timeout note).
      `the code ran longer than ${time}, the most a run may take here (limits.runTimeoutMs), and was stopped: do less in one run ` +
      "(fewer or smaller calls, no waiting or polling), or return what you have sooner and continue in the next run",
  };
}

export function codeNotCompiled(problem: string): HostFailure {
  return { code: HostFailureCode.CompileError, message: `the code was not run: ${problem}` };
}

export function workDirNotMade(error: unknown): HostFailure {
  return {
    code: HostFailureCode.SpawnFailed,
    message: `could not make the code runner's private working directory: ${describeError(error)}`,
  };
}

// A run pool's (runCode with `pool`).

/**
 * The last runner the pool started did not get as far as its hello; `failure` says how (a report's own
 * failure), `inARow` how many starts failed in a row, `nextTryMs` when the pool tries again.
 */
export function poolRunnerNotStarted(failure: HostFailure, inARow: number, nextTryMs: number): HostFailure {
  return {
    code: failure.code,
    message:
      `the run pool's runner did not start, so nothing ran (${inARow} failed starts in a row; ` +
      `the pool tries again in ${nextTryMs} ms, waiting twice as long after each failure): ${failure.message}`,
  };
}

export function poolRunnerNotReady(ms: number): HostFailure {
  return {
    code: HostFailureCode.HelloTimeout,
    message:
      `no runner of the run pool was ready within ${ms} ms (limits.helloTimeoutMs); ` +
      "every runner was busy or starting, and nothing ran",
  };
}

export function poolClosed(): HostFailure {
  return { code: HostFailureCode.Aborted, message: "the run pool was closed before a runner was free for this run; nothing ran" };
}

/** A session's pooled run: its workspace could not be bound onto the runner's working directory (code/pool-session.ts). */
export function workspaceNotKept(reason: string): HostFailure {
  return { code: HostFailureCode.WorkspaceNotKept, message: `the session's workspace was not kept: ${reason}` };
}

export function workspaceNotCopied(reason: string): HostFailure {
  return { code: HostFailureCode.SpawnFailed, message: `the session's workspace could not be given to the run, so nothing ran: ${reason}` };
}

/** A session's run: its workspace, read-only since its last run's seal, could not be made writable again (workspace/index.ts). */
export function workspaceNotWritable(reason: string): HostFailure {
  return {
    code: HostFailureCode.SpawnFailed,
    message:
      "the session's workspace could not be given to the run, so nothing ran: " +
      `it is read-only since its last run and could not be made writable again (${reason})`,
  };
}

export function poolSessionNotBound(reason: string): HostFailure {
  return {
    code: HostFailureCode.SpawnFailed,
    message: `the session's workspace could not be given to the run pool's runner, so nothing ran: ${reason}`,
  };
}

// The run admission's (engine/admission.ts; docs/host.md, "Run admission").

export function runQueueFull(maxQueued: number, maxRuns: number): HostFailure {
  return {
    code: HostFailureCode.RunQueueFull,
    message:
      `the host is busy: ${maxRuns} runs are under way (maxConcurrentRuns) and ${maxQueued} more are waiting (maxQueuedRuns), ` +
      "so this run was not queued and nothing ran; try again in a moment, or run fewer at once",
  };
}

export function queueTimedOut(ms: number, maxRuns: number): HostFailure {
  return {
    code: HostFailureCode.QueueTimeout,
    message:
      `the host is busy: this run waited ${ms} ms (queueTimeoutMs) for one of its ${maxRuns} run slots (maxConcurrentRuns) ` +
      "and none came free, so nothing ran; try again in a moment, or run fewer at once",
  };
}

// A remote runner's (runGuest/runCode with `remote`; see docs/remote.md).

/** The remote command ended (or wrote something else) before the runner's first line: nothing ran there. */
export function runnerNotStarted(runner: string, how: string): HostFailure {
  return {
    code: HostFailureCode.SpawnFailed,
    message: `the remote runner ${JSON.stringify(runner)} did not start, so nothing ran: ${how}`,
  };
}

/** The runner on the far end refused the run (no sandbox there, a limit it cannot enforce, a bad request). */
export function runnerRefused(runner: string, failure: HostFailure): HostFailure {
  return { code: failure.code, message: `the remote runner ${JSON.stringify(runner)} refused the run: ${failure.message}` };
}

/** Every worker of a remote runner list is backing off after failed starts. */
export function noRunnerWorker(states: readonly string[]): HostFailure {
  return {
    code: HostFailureCode.SpawnFailed,
    message: `no remote runner can take the run, so nothing ran: every one is backing off after failed starts (${states.join("; ")})`,
  };
}

/** The connection to a remote runner ended before the run did. */
export function runnerLost(runner: string, mayHaveExecuted: boolean, how: string): HostFailure {
  const ran = mayHaveExecuted
    ? "the guest had been invoked, so it may have run (the calls the host answered are in the report); it is not run again"
    : "the guest had not been invoked, so it did not run";
  return {
    code: HostFailureCode.RunnerLost,
    message: `the connection to the remote runner ${JSON.stringify(runner)} was lost before the run ended (${how}); ${ran}`,
    mayHaveExecuted,
  };
}

// The host's own side: its signal, its deadlines, its own faults.

export function aborted(reason: unknown): HostFailure {
  return { code: HostFailureCode.Aborted, message: `the host aborted the run (${describeError(reason)})` };
}

export function helloTimedOut(ms: number): HostFailure {
  return {
    code: HostFailureCode.HelloTimeout,
    message: `the guest did not say hello within ${ms} ms (limits.helloTimeoutMs); is it a protocol 1 guest that calls serve()?`,
  };
}

export function runTimedOut(ms: number): HostFailure {
  const message = `the guest did not finish within ${ms} ms (limits.runTimeoutMs); the run was stopped`;
  return { code: HostFailureCode.RunTimeout, message };
}

/** The session engine itself threw (a bug): reported, never a hang. */
export function engineFailed(error: unknown): HostFailure {
  return { code: HostFailureCode.NoResult, message: `the host engine failed: ${describeError(error)}` };
}

/** runGuest's own code threw around the session (a bug): reported, never a rejection. */
export function hostFailed(error: unknown): HostFailure {
  return { code: HostFailureCode.NoResult, message: `the host failed: ${describeError(error)}` };
}

// What the guest consumed.

/** `refused`: RLIMIT_DATA refused an allocation and the body failed on it (nothing was killed). */
export function memoryLimitReached(bytes: number, refused?: string): HostFailure {
  const limit = `its memory limit of ${byteSize(bytes)} (${bytes} bytes; limits.memoryBytes)`;
  return {
    code: HostFailureCode.MemoryLimit,
    message:
      refused === undefined
        ? `the guest went past ${limit} and was killed`
        : `the guest reached ${limit}: an allocation past it was refused and the body failed (${refused})`,
  };
}

export function processLimitReached(processes: number, seen?: number): HostFailure {
  const what = seen === undefined ? "was refused processes at" : `had ${seen} threads, past`;
  return {
    code: HostFailureCode.ProcessLimit,
    message: `the guest tree ${what} its limit of ${processes} processes and threads (limits.processes); the run was stopped`,
  };
}

export function cpuLimitReached(ms: number, usedMs: number): HostFailure {
  return {
    code: HostFailureCode.CpuLimit,
    message: `the guest used ${Math.round(usedMs)} ms of CPU time, past its limit of ${ms} ms (limits.cpuTimeMs); the run was stopped`,
  };
}

// What the guest wrote.

export function protocolMismatch(protocol: number, sdk: string | undefined): HostFailure {
  const who = sdk === undefined ? "the guest" : `the guest (${sdk})`;
  return {
    code: HostFailureCode.ProtocolMismatch,
    message:
      `${who} speaks protocol ${protocol}, but this host speaks protocol ${PROTOCOL}; the guest was not invoked. ` +
      `Run it with a host for protocol ${protocol}, or rebuild it with a protocol ${PROTOCOL} runtime (@posoco/ears 0.x)`,
  };
}

function violation(message: string): HostFailure {
  return { code: HostFailureCode.ProtocolViolation, message };
}

export function wroteAfterResult(line: string): HostFailure {
  return violation(`the guest wrote after its result: ${quote(line)}`);
}

export function notAFrame(reason: string, line: string): HostFailure {
  return violation(`the guest wrote a line that is not a protocol 1 frame (${reason}): ${quote(line)}`);
}

export function firstFrameNotHello(type: string, line: string): HostFailure {
  return violation(`the guest's first frame must be hello, but it sent a ${JSON.stringify(type)} frame: ${quote(line)}`);
}

export function secondHello(line: string): HostFailure {
  return violation(`the guest said hello a second time: ${quote(line)}`);
}

export function hostFrameFromGuest(type: string, line: string): HostFailure {
  return violation(
    `the guest sent a ${JSON.stringify(type)} frame, which only a host sends ` +
      `(a guest sends hello, request, log and result): ${quote(line)}`,
  );
}

export function reusedRequestId(id: number, stillInFlight: boolean): HostFailure {
  const when = stillInFlight ? "while that call was still in flight" : "after that call was answered";
  return violation(`the guest reused request id ${id} ${when} (ids must be unique in a run)`);
}

export function scatteredRequestIds(max: number, lowestUnused: number): HostFailure {
  return violation(
    `the guest's request ids are too scattered to check that they are unique: ${max} ids above ${lowestUnused}, ` +
      `the lowest id not yet used (limits.maxScatteredIds); count ids up from 1`,
  );
}

export function malformedFraming(reason: string): HostFailure {
  return violation(`the guest's output is not valid protocol 1 framing (${reason})`);
}

export function frameTooLarge(reason: string): HostFailure {
  const message = `the guest wrote a frame over the size cap: ${reason} (limits.maxFrameBytes); the run was stopped`;
  return { code: HostFailureCode.FrameTooLarge, message };
}

/**
 * The result was over `limits.maxResultBytes`. Worded for whoever wrote the body (often a model): what
 * happened, and what to do instead.
 */
export function resultTooLarge(bytes: number, max: number): HostFailure {
  return {
    code: HostFailureCode.ResultTooLarge,
    message:
      `the result was ${byteSize(bytes)} (${bytes} bytes), over the limit of ${byteSize(max)} (limits.maxResultBytes), ` +
      "so it was dropped; the body ran to its end. Return less: a summary, a count, the first items or only the fields needed " +
      "(ears.log can show a sample)",
  };
}

// The guest's output ending early (runGuest refines these with the child's exit: see endedEarly).

/** The output ended cleanly before hello or before the result; `sendError` is a failed write to the guest, if any. */
export function outputEnded(saidHello: boolean, sendError: unknown): HostFailure {
  const written = sendError === undefined ? "" : `; writing to the guest had failed too (${describeError(sendError)})`;
  return saidHello
    ? { code: HostFailureCode.NoResult, message: `the guest's output ended before it sent a result${written}` }
    : { code: HostFailureCode.NoHello, message: `the guest's output ended before it said hello${written}` };
}

export function truncatedFrame(afterResult: boolean, reason: string): HostFailure {
  const after = afterResult ? " after its result" : "";
  return violation(`the guest's output ended in the middle of a frame${after} (${reason})`);
}

export function readFailed(saidHello: boolean, reason: string): HostFailure {
  return { code: saidHello ? HostFailureCode.NoResult : HostFailureCode.NoHello, message: `reading the guest's output failed: ${reason}` };
}

/**
 * runGuest: the output ended early and the child then exited on its own. A bad status is the real story
 * (GuestCrashed); a clean one is added to `failure`. Either way the stderr line that says what went wrong is quoted.
 */
export function endedEarly(failure: HostFailure, exit: NonNullable<RunDetails["exit"]>, stderr: string, saidHello: boolean): HostFailure {
  const crashed = exit.signal !== null || (exit.code !== null && exit.code !== 0);
  const status = exit.signal !== null ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  const hint = stderrHint(stderr);
  const stage = saidHello ? "before it sent a result" : "before it said hello";
  if (crashed) return { code: HostFailureCode.GuestCrashed, message: `the guest crashed (${status}) ${stage}${hint}` };
  return { code: failure.code, message: `${failure.message}; the guest exited with ${status}${hint}` };
}

// A Select Graphic Rendition sequence (colour, bold, reset): ESC [ parameters m.
const SGR = /\x1b\[[0-9;:]*m/g;
// An error's header line as Node prints it: "Error: boom", "TypeError: x", "Error [ERR_MODULE_NOT_FOUND]: ...".
const ERROR_HEADER = /^(?:Uncaught )?(?:[A-Z][\w$]*)?(?:Error|Exception)(?: \[[^\]]+\])?: /;
// What Node prints after the error: stack frames, the error's own properties, its version, advice.
const TRAILER = /^(?:\s+at |\s+\w+: |\s*[{}]$|Node\.js v\d|\(Use `node --trace)/;

/**
 * The line of the guest's (or a remote runner's connection's) stderr that says what went wrong: the last error header when there is one
 * (Node ends a crash with the stack, the error's properties and "Node.js v20…", none of which say what
 * happened), else the last line that is not such trailer.
 */
export function stderrHint(text: string): string {
  // Colour codes (Deno and Bun colour their errors) are noise in a sentence; the raw tail stays in report.stderr.
  const lines = text
    .replace(SGR, "")
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "");
  if (lines.length === 0) return "; its stderr is empty";
  const header = lines.findLast((line) => ERROR_HEADER.test(line));
  if (header !== undefined) return `; its stderr reports: ${quotedStderrLine(header)}`;
  return `; its stderr ends with: ${quotedStderrLine(lines.findLast((line) => !TRAILER.test(line)) ?? lines.at(-1)!)}`;
}

function quotedStderrLine(line: string): string {
  return JSON.stringify(clip(line, 300));
}

/** A line for an error message: JSON-quoted (control characters visible), cut to 200 characters. */
function quote(line: string): string {
  return quotedExcerpt(line, 200);
}

// A resumed run (resumeCode).

/** How a call reads in a divergence message: its name and an excerpt of its arguments. */
function callText(call: { name: string; arguments: unknown } | undefined): string {
  if (call === undefined) return "no call";
  let args: string;
  try {
    args = JSON.stringify(call.arguments) ?? "null";
  } catch {
    args = "(arguments not representable as JSON)";
  }
  return `${quotedExcerpt(call.name, 64)} with ${clip(args, 200)}`;
}

/**
 * The resumed body made another call at step `step` than the paused run did (or ended before making the
 * paused run's calls): the run stops there, and nothing runs for that call.
 */
export function replayDiverged(
  step: number,
  before: { name: string; arguments: unknown } | undefined,
  now: { name: string; arguments: unknown } | undefined,
): HostFailure {
  const what =
    now === undefined
      ? `the body ended without making call ${step}, which the paused run made (${callText(before)})`
      : `at step ${step} the body called ${callText(now)}, where the paused run called ${callText(before)}`;
  return {
    code: HostFailureCode.ReplayDiverged,
    message:
      `the resumed run diverged from the paused one: ${what}; nothing was run for it. A body must make the same calls with ` +
      "the same arguments given the same answers (time and randomness through a capability: see docs/approvals.md)",
  };
}
