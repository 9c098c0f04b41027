/**
 * Remote runners on the host's side (docs/remote.md): the `remote` option checked, the worker a run goes to
 * (the least loaded of those not backing off), the local command that reaches it (ssh, kubectl exec -i, ...)
 * spawned in its own process group under the host's watchdog, the launch line written, and what the runner
 * reports (its header, its trailer) turned into the report's sandbox, limits, usage and failures.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { performance } from "node:perf_hooks";
import { clip } from "../../protocol/text.js";
import type { Exit, FarEnd } from "../process/guest-process.js";
import * as failures from "../report/failures.js";
import { GROUPS_SUPPORTED, ProcessGroup } from "../process/process-group.js";
import type { SandboxReport } from "../sandbox/index.js";
import type { CheckedLaunch, RunEnd, RunEndFacts } from "../run-guest.js";
import type { HostFailure, RemoteRunner, RemoteWorkerState, RunReport } from "../api/types.js";
import { launchLine } from "./runner-lines.js";
import { RunnerStream } from "./runner-stream.js";

/** Back-off of a worker whose command failed: this, doubled for each failure in a row, up to {@link MAX_WORKER_BACKOFF_MS}. */
export const FIRST_WORKER_BACKOFF_MS = 1000;
export const MAX_WORKER_BACKOFF_MS = 30_000;
/** The characters of a failing worker's stderr kept for its `lastFailure`. */
const STDERR_TAIL_CHARS = 2000;
/**
 * Words a runGuest command may hand to the far end: ssh joins its arguments into one line for the far
 * end's shell, so a word that shell would read differently is refused rather than changed.
 */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** A worker and its load and health, shared by every run given the same `remote` value. */
interface Worker {
  command: string;
  args: readonly string[];
  running: number;
  failuresInARow: number;
  retryAt: number;
  lastFailure: string | undefined;
}

const workersOf = new WeakMap<object, Worker[]>();

/** What startGuest needs to serve a remote runner as its guest. */
export interface RemoteSpawn {
  child: ChildProcessWithoutNullStreams;
  group: ProcessGroup;
  /** The guest's stdout, read off the runner's. */
  output: RunnerStream["output"];
  end: RunEnd;
  farEnd: FarEnd;
  /** How messages name the runner. */
  name: string;
}

/** @internal The `remote` option of a launch, checked: where its runs go. */
export class RemoteTarget {
  private constructor(
    private readonly workers: Worker[],
    /** Appended to the worker's arguments: `-- command args` for runGuest, nothing for the code runner. */
    private readonly guestWords: readonly string[],
  ) {}

  /**
   * Checks `remote` (and what a remote run must not have: a working directory, an environment or
   * sandbox paths of this machine). Throws TypeError naming the problem.
   */
  static check(
    remote: unknown,
    options: { cwd?: unknown; env?: unknown; sandbox?: unknown },
    caller: string,
    guest: readonly string[] | undefined,
  ): RemoteTarget {
    const list = Array.isArray(remote) ? (remote as unknown[]) : [remote];
    if (list.length === 0) throw new TypeError(`${caller}: options.remote must name at least one runner`);
    for (const runner of list) {
      const { command, args = [] } = (typeof runner === "object" && runner !== null ? runner : {}) as Partial<RemoteRunner>;
      if (typeof command !== "string" || command === "") {
        throw new TypeError(`${caller}: options.remote must be { command, args } or a list of them, each command a non-empty string`);
      }
      if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
        throw new TypeError(`${caller}: options.remote's args must be an array of strings`);
      }
    }
    for (const name of ["cwd", "env"] as const) {
      if (options[name] !== undefined) {
        throw new TypeError(`${caller}: options.${name} names this machine's; a remote runner has its own (see docs/remote.md)`);
      }
    }
    if (typeof options.sandbox === "object" && options.sandbox !== null) {
      const sandbox = options.sandbox as Record<string, unknown>;
      const named = Object.keys(sandbox).filter((key) => key !== "mechanism" && sandbox[key] !== undefined);
      if (named.length > 0) {
        throw new TypeError(
          `${caller}: a sandbox options object names this machine's paths (${named.join(", ")}); with remote, sandbox is ` +
            '"auto", true, false or { mechanism } and the runner\'s machine decides the rest (see docs/remote.md)',
        );
      }
    }
    const words = guest === undefined ? [] : ["--", ...guest];
    const odd = words.find((word) => !PLAIN_WORD.test(word));
    if (odd !== undefined) {
      throw new TypeError(
        `${caller}: with remote, the command and args reach the far end's command line, where ssh hands them to a shell; ` +
          `${JSON.stringify(odd)} has characters a shell would change (use [A-Za-z0-9_@%+=:,./-], or a script on the far end)`,
      );
    }
    let workers = workersOf.get(remote as object);
    if (workers === undefined) {
      workers = (list as RemoteRunner[]).map(({ command, args = [] }) => ({
        command,
        args: [...args],
        running: 0,
        failuresInARow: 0,
        retryAt: 0,
        lastFailure: undefined,
      }));
      workersOf.set(remote as object, workers);
    }
    return new RemoteTarget(workers, words);
  }

  /** Whether `other` goes to the same workers (the same `remote` value). */
  sameAs(other: RemoteTarget | undefined): boolean {
    return other !== undefined && other.workers === this.workers;
  }

  /** The workers' load and health. */
  states(): RemoteWorkerState[] {
    const now = performance.now();
    return this.workers.map((worker) => {
      const state: RemoteWorkerState = {
        command: worker.command,
        args: worker.args,
        running: worker.running,
        failuresInARow: worker.failuresInARow,
      };
      if (worker.retryAt > now) state.retryInMs = Math.ceil(worker.retryAt - now);
      if (worker.lastFailure !== undefined) state.lastFailure = worker.lastFailure;
      return state;
    });
  }

  /**
   * Starts the command of the least loaded worker not backing off, and writes the launch line. Never
   * throws: a failure (every worker backing off, spawn refused) comes back as one.
   */
  spawn(launch: CheckedLaunch): RemoteSpawn | { failure: HostFailure } {
    const now = performance.now();
    const ready = this.workers.filter((worker) => worker.retryAt <= now);
    if (ready.length === 0) return { failure: failures.noRunnerWorker(this.states().map(describeWorker)) };
    const worker = ready.reduce((least, next) => (next.running < least.running ? next : least));
    const args = [...worker.args, ...this.guestWords];
    const name = clip([worker.command, ...args].join(" "), 120);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(worker.command, args, {
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        windowsHide: true,
        // Its own group, so stopping it reaches what it starts (an ssh ProxyCommand); the watchdog covers it.
        detached: GROUPS_SUPPORTED,
      });
    } catch (error) {
      workerFailed(worker, failures.spawnFailed(worker.command, error).message);
      return { failure: failures.spawnFailed(worker.command, error) };
    }
    worker.running += 1;
    const stream = new RunnerStream(child.stdout);
    // The last of its stderr, for the worker's lastFailure (the run's report has its own tail).
    let stderrTail = "";
    child.stderr.on("data", (chunk: Buffer) => {
      if (stream.header === undefined) stderrTail = (stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
    });
    let counted = true;
    const gone = (exit: Exit | undefined, error?: Error) => {
      if (!counted) return;
      counted = false;
      worker.running -= 1;
      // The command ended by itself before the runner's header (a signal is the host stopping it): the worker failed.
      if (stream.header !== undefined) return;
      if (error !== undefined) workerFailed(worker, error.message);
      else if (exit?.code !== null && exit?.code !== undefined) {
        const why = stream.problem ?? `its command exited with code ${exit.code} before the runner started`;
        workerFailed(worker, `${why}${failures.stderrHint(stderrTail)}`);
      }
    };
    // "close", not "exit": only then has all of its stdout (a header) and stderr been read.
    child.once("close", (code, signal) => gone({ code, signal }));
    child.once("error", (error) => gone(undefined, error));
    void stream.started.then((started) => {
      if (started) {
        worker.failuresInARow = 0;
        worker.retryAt = 0;
        worker.lastFailure = undefined;
      }
    });
    child.stdin.on("error", () => {}); // a command that died first is reported by its exit
    const { settings, requestedLimits, killGraceMs, sandbox } = launch;
    const limits = {
      memoryBytes: settings.limits.memoryBytes,
      processes: settings.limits.processes,
      cpuTimeMs: settings.limits.cpuTimeMs,
      tmpBytes: settings.limits.tmpBytes,
    };
    const mechanism = sandbox.options.mechanism === "auto" ? undefined : sandbox.options.mechanism;
    child.stdin.write(launchLine(sandbox.mode, limits, requestedLimits, killGraceMs, mechanism));
    const group = new ProcessGroup(child, false);
    return { child, group, output: stream.output, end: remoteEnd(stream), farEnd: farEnd(stream, name), name };
  }
}

/** The connection's grace: the runner's own shutdown of its guest (grace, SIGTERM, grace, SIGKILL), and a second for the trip. */
function connectionGrace(killGraceMs: number): number {
  return 2 * killGraceMs + 1000;
}

function workerFailed(worker: Worker, why: string): void {
  worker.failuresInARow += 1;
  worker.lastFailure = why;
  const delay = Math.min(MAX_WORKER_BACKOFF_MS, FIRST_WORKER_BACKOFF_MS * 2 ** (worker.failuresInARow - 1));
  worker.retryAt = performance.now() + delay;
}

function describeWorker(state: RemoteWorkerState): string {
  const name = clip([state.command, ...state.args].join(" "), 80);
  const next = `next try in ${state.retryInMs ?? 0} ms`;
  return `${JSON.stringify(name)}: ${state.failuresInARow} failed starts, ${next}: ${state.lastFailure ?? "?"}`;
}

/** The report's sandbox, limits and usage from the runner's header and trailer (usage's calls and wall time are the host's). */
function remoteEnd(stream: RunnerStream): RunEnd {
  return {
    watch() {},
    sample() {},
    finish(report: RunReport): Promise<RunEndFacts> {
      const { header, trailer } = stream;
      const facts: RunEndFacts = {};
      if (header !== undefined && !("refused" in header)) {
        facts.sandbox = header.sandbox as SandboxReport | null;
        if (header.sandboxFallback !== undefined) facts.sandboxFallback = header.sandboxFallback;
      }
      if (trailer !== undefined) {
        if (trailer.failure !== undefined) facts.failure = trailer.failure;
        if (trailer.limits !== undefined) facts.limits = trailer.limits;
        if (trailer.usage !== undefined) {
          facts.usage = { ...trailer.usage, wallMs: report.durationMs, calls: report.calls.length + (report.droppedCalls ?? 0) };
        }
      }
      return Promise.resolve(facts);
    },
  };
}

/** How the far end's guest ended, as its runner reported it; or, without a report, what the lost connection means. */
function farEnd(stream: RunnerStream, name: string): FarEnd {
  return {
    ended() {
      const trailer = stream.trailer;
      return trailer === undefined ? undefined : { exit: trailer.exit, forcedStop: trailer.forcedStop };
    },
    grace: connectionGrace,
    lost(saidHello, exit, stderr) {
      const { header } = stream;
      if (header !== undefined && "refused" in header) return failures.runnerRefused(name, header.refused);
      const status =
        exit === undefined ? "is still running" : exit.signal !== null ? `ended by signal ${exit.signal}` : `exited with code ${exit.code}`;
      const how = stream.problem ?? `its command ${status}${failures.stderrHint(stderr)}`;
      if (header === undefined) return failures.runnerNotStarted(name, how);
      return failures.runnerLost(name, saidHello, how);
    },
  };
}
