/** `ears run [options] -- <command> [args...]`: run a guest program under a local host. */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { runGuest } from "../host/index.js";
import type { Capabilities, GuestCommand, HostLimits, RunReport, SandboxSetting } from "../host/index.js";
import { envEntryProblem } from "../host/sandbox/policy.js";
import { onUnenforcedDefault } from "../host/limits/limits.js";
import { describeError } from "../protocol/errors.js";
import type { Json } from "../protocol/json.js";
import { performance } from "node:perf_hooks";
import { TimelineBuilder } from "../transcripts/timeline.js";
import { recordTo, transcriptEntry, type Recorder } from "../transcripts/transcript.js";
import { defineCapabilities, type CapabilitySpec, type Contract } from "../contract/contract.js";
import { loadCapabilityModule } from "./capability-module.js";
import { CONNECTOR_OPTIONS, connectorsOf, type ConnectorValues } from "./connector-options.js";
import { RUN_HELP } from "./help.js";
import {
  endGuestStderrLine,
  exitStatusOf,
  ExitStatus,
  guestStderrPrinter,
  logPrinter,
  printJson,
  printLimitWarnings,
  printNotes,
  printOutcome,
  printUsage,
  type CliIo,
} from "./report-output.js";
import { rootFiles } from "./root-files.js";
import { approveNamesOf, terminalApproval } from "./terminal-approval.js";
import { printTimeline } from "./timeline-text.js";
import { parseCount, parseInput, parseNameList, parseSeconds, parseSize, subcommand, UsageError } from "./usage.js";

/** Options shared by `ears run` and `ears replay`. */
export const SESSION_OPTIONS = {
  record: { type: "string" },
  timeout: { type: "string" },
  "call-timeout": { type: "string" },
  json: { type: "boolean" },
  quiet: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  sandbox: { type: "boolean" },
  "no-sandbox": { type: "boolean" },
  "sandbox-read": { type: "string", multiple: true },
  "sandbox-write": { type: "string", multiple: true },
  "sandbox-show-secrets": { type: "boolean" },
  "sandbox-allow-broad": { type: "boolean" },
  "sandbox-mechanism": { type: "string" },
  env: { type: "string", multiple: true },
} as const;

/** The options of `ears run`, which `ears exec` takes too. */
export const RUN_OPTIONS = {
  ...SESSION_OPTIONS,
  verbose: { type: "boolean" },
  allow: { type: "string", multiple: true },
  approve: { type: "string", multiple: true },
  input: { type: "string" },
  capabilities: { type: "string" },
  root: { type: "string" },
  ...CONNECTOR_OPTIONS,
  memory: { type: "string" },
  processes: { type: "string" },
  "cpu-time": { type: "string" },
  "tmp-size": { type: "string" },
} as const;

/** Runs `ears run` with `argv` (the words after "run"); resolves with the exit status. Throws {@link UsageError}. */
export const runCommand = subcommand("run", RUN_OPTIONS, RUN_HELP, async ({ values, positionals, command }, io) => {
  const guest = guestCommand("run", positionals, command);
  const { contract: _contract, closeConnectors, ...host } = await hostOptionsOf(values, io);
  try {
    const report = await runGuest({ ...runOptionsOf(host), command: guest[0]!, args: guest.slice(1) });
    return await reportRun(report, values, io, host);
  } finally {
    await closeConnectors();
  }
});

/** The command-line options every run of a guest takes (`ears run`, `ears exec`). */
export type HostValues = {
  input?: string;
  root?: string;
  capabilities?: string;
  allow?: string[];
  approve?: string[];
  record?: string;
  timeout?: string;
  "call-timeout"?: string;
  quiet?: boolean;
  json?: boolean;
  verbose?: boolean;
} & ConnectorValues &
  Parameters<typeof sandboxOf>[0] &
  Parameters<typeof resourceLimitsOf>[0];

/** What {@link hostOptionsOf} gives a command: runGuest's options, the transcript, and the connectors' contract and close. */
export type HostOptionsOfCli = Omit<GuestCommand, "command" | "args"> &
  RunWatchers & {
    /**
     * The allowed capabilities as a contract, when connectors (--mcp-config, --fetch-allow) declare types:
     * theirs, and the others untyped. `undefined` without connectors (an untyped ears, as before).
     */
    contract: Contract | undefined;
    /** The --approve names (checked: existing, allowed capabilities); `approval` asks for them on the terminal. */
    approve: string[];
    /** Closes the MCP servers' connections; call it when the command is done. Never rejects. */
    closeConnectors: () => Promise<void>;
  };

/**
 * The options of runGuest or runCode in what {@link hostOptionsOf} gives: without the CLI's own (--approve's
 * names, the recorder, the timeline), which a run refuses as unknown options.
 */
export function runOptionsOf<T extends { approve?: unknown } & RunWatchers>(host: T): Omit<T, "approve" | keyof RunWatchers> {
  const { approve: _approve, recorder: _recorder, timeline: _timeline, ...options } = host;
  return options;
}

/** What a run from the command line keeps besides the host options: the --record transcript and the --verbose timeline. */
export interface RunWatchers {
  recorder: Recorder | undefined;
  timeline: TimelineBuilder | undefined;
}

/**
 * The host side of a run from the command line: input, limits, built-in and --capabilities handlers,
 * the connectors (--mcp-config's tools and --fetch-allow's fetch, allowed by default), --allow, the
 * sandbox, --approve (asked on the terminal), callbacks, and the --record transcript (opened before anything starts, so a bad path is a
 * usage error). Throws {@link UsageError}, after closing any connector it opened.
 */
export async function hostOptionsOf(values: HostValues, io: CliIo): Promise<HostOptionsOfCli> {
  const input = parseInput(values.input, io.cwd);
  const limits = { ...limitsOf(values), ...resourceLimitsOf(values) };
  let builtins: Capabilities;
  try {
    builtins = await rootFiles(resolve(io.cwd, values.root ?? "."));
  } catch (error) {
    throw new UsageError(`--root: ${describeError(error)}`);
  }
  const custom = values.capabilities === undefined ? {} : await loadCapabilityModule(values.capabilities, io.cwd);
  const sandbox = sandboxOf(values, io.cwd);
  const connectors = await connectorsOf(values, io);
  let allowed: string[];
  let approve: string[];
  let contract: Contract | undefined;
  let recorder: Recorder | undefined;
  const capabilities: Capabilities = Object.assign(Object.create(null) as Capabilities, builtins, custom);
  try {
    const clash = Object.keys(connectors.capabilities).filter((name) => Object.hasOwn(custom, name));
    if (clash.length > 0) {
      throw new UsageError(
        `--capabilities exports ${clash.map((n) => JSON.stringify(n)).join(", ")}, which a connector also provides; rename one`,
      );
    }
    Object.assign(capabilities, connectors.capabilities);
    // The connectors' capabilities are allowed by default, as a contract's are.
    allowed = [...new Set([...parseNameList(values.allow), ...Object.keys(connectors.capabilities)])];
    const unknown = allowed.filter((name) => !Object.hasOwn(capabilities, name));
    if (unknown.length > 0) {
      throw new UsageError(
        `--allow names ${unknown.map((n) => JSON.stringify(n)).join(", ")}, but no such capability exists ` +
          `(available: ${Object.keys(capabilities).join(", ")}); add a handler with --capabilities`,
      );
    }
    approve = approveNamesOf(values.approve, capabilities, allowed);
    contract = Object.keys(connectors.specs).length === 0 ? undefined : contractOf(allowed, connectors.specs);
    recorder = startRecording(values.record, io.cwd);
  } catch (error) {
    await connectors.close();
    throw error;
  }
  const timeline = values.verbose ? new TimelineBuilder() : undefined;
  // The CLI warns of a limit nothing enforces after each run (printLimitWarnings), not once as a process warning.
  onUnenforcedDefault(null);
  const startedAt = performance.now();
  const now = () => performance.now() - startedAt;
  return {
    contract,
    approve,
    // Every call that needs approval (--approve, or a handler marked requireApproval) is asked on the terminal.
    approval: terminalApproval(approve, { stdin: io.stdin ?? process.stdin, stderr: io.stderr, quiet: values.quiet ?? false }),
    closeConnectors: () => connectors.close().catch(() => {}),
    sandbox,
    cwd: io.cwd,
    allowed,
    input,
    capabilities,
    limits,
    onLog: values.quiet ? undefined : logPrinter(io.stderr),
    onFrame:
      timeline === undefined
        ? recorder?.onFrame
        : (from, line) => {
            timeline.add(transcriptEntry(from, line), now());
            return recorder?.onFrame(from, line);
          },
    onStderr: guestStderrTo(
      values.quiet ? undefined : guestStderrPrinter(io.stderr),
      recorder,
      timeline && ((chunk) => timeline.add({ from: "guest", stderr: chunk }, now())),
    ),
    signal: io.signal,
    recorder,
    timeline,
  };
}

/** The allowed names as a contract: the connectors' specs, and an untyped spec for every other name. */
export function contractOf(allowed: readonly string[], specs: Record<string, CapabilitySpec>): Contract {
  return defineCapabilities(Object.fromEntries(allowed.map((name) => [name, Object.hasOwn(specs, name) ? specs[name]! : {}])));
}

/**
 * Closes the transcript with the report note, prints the result (or the --json report), the notes, the
 * usage and, with --verbose, the timeline; the exit status.
 */
export async function reportRun(report: RunReport, values: HostValues, io: CliIo, { recorder, timeline }: RunWatchers): Promise<number> {
  const recorded = await finishRecording(recorder, io, report);
  // With --json the report is the output: one that cannot be written fails the command (exit 2).
  const printed = values.json ? printJson(report, io.stdout, io.stderr) : true;
  if (!values.json && report.outcome !== undefined) printOutcome(report.outcome, io.stdout, io.stderr);
  printSandboxNote(report, io, values.quiet ?? false);
  printNotes(inFlagTerms(report), io.stderr, values.quiet ?? false);
  printLimitWarnings(report, io.stderr);
  if (!values.json) printUsage(report, io.stderr, values.quiet ?? false);
  if (timeline !== undefined) printRunTimeline(timeline, report, io);
  return recorded && printed ? exitStatusOf(report) : ExitStatus.SessionError;
}

/**
 * The sandbox from --sandbox, --no-sandbox, --sandbox-read, --sandbox-write, --sandbox-mechanism and --env. Like
 * the options object of runGuest, a path, a mechanism or --env requires the sandbox. Paths must exist (usage error).
 */
export function sandboxOf(
  values: {
    sandbox?: boolean;
    "no-sandbox"?: boolean;
    "sandbox-read"?: string[];
    "sandbox-write"?: string[];
    "sandbox-show-secrets"?: boolean;
    "sandbox-allow-broad"?: boolean;
    "sandbox-mechanism"?: string;
    env?: string[];
  },
  cwd: string,
): SandboxSetting {
  const mechanism = values["sandbox-mechanism"];
  if (mechanism !== undefined && mechanism !== "auto" && mechanism !== "bubblewrap" && mechanism !== "landlock") {
    throw new UsageError(`--sandbox-mechanism must be auto, bubblewrap or landlock, not ${JSON.stringify(mechanism)}`);
  }
  const readable = values["sandbox-read"] ?? [];
  const writable = values["sandbox-write"] ?? [];
  const env = values.env ?? [];
  const showSecrets = values["sandbox-show-secrets"] === true;
  const allowBroadPaths = values["sandbox-allow-broad"] === true;
  const shaping = [
    ...(readable.length > 0 ? ["--sandbox-read"] : []),
    ...(writable.length > 0 ? ["--sandbox-write"] : []),
    ...(showSecrets ? ["--sandbox-show-secrets"] : []),
    ...(allowBroadPaths ? ["--sandbox-allow-broad"] : []),
    ...(mechanism !== undefined ? ["--sandbox-mechanism"] : []),
    ...(env.length > 0 ? ["--env"] : []),
  ];
  if (values["no-sandbox"]) {
    if (values.sandbox) throw new UsageError("--sandbox and --no-sandbox contradict each other; give one");
    if (shaping.length > 0)
      throw new UsageError(`${shaping.join(", ")} shape the sandbox, which --no-sandbox turns off; drop one or the other`);
    return false;
  }
  if (shaping.length === 0) return values.sandbox ? true : "auto";
  for (const [option, paths] of [
    ["--sandbox-read", readable],
    ["--sandbox-write", writable],
  ] as const) {
    for (const path of paths) {
      if (!existsSync(resolve(cwd, path)))
        throw new UsageError(`${option} ${JSON.stringify(path)}: no such file or directory (paths are relative to the working directory)`);
    }
  }
  for (const entry of env) {
    const problem = envEntryProblem(entry);
    if (problem !== undefined) throw new UsageError(`--env: ${problem}`);
  }
  return {
    readable: readable.map((p) => resolve(cwd, p)),
    writable: writable.map((p) => resolve(cwd, p)),
    env,
    ...(showSecrets ? { showSecrets } : {}),
    ...(allowBroadPaths ? { allowBroadPaths } : {}),
    ...(mechanism !== undefined ? { mechanism } : {}),
  };
}

/** The one-line note that "auto" found no sandbox and the guest ran with the user's rights. */
export function printSandboxNote(report: RunReport, io: CliIo, quiet: boolean): void {
  if (quiet || report.sandboxFallback === undefined) return;
  endGuestStderrLine(io.stderr);
  io.stderr.write(
    `ears: the guest ran without a sandbox: ${report.sandboxFallback} (--sandbox requires one, --no-sandbox silences this note)\n`,
  );
}

/**
 * The report as the CLI's notes show it: a failure message that names a host limit names the flag that
 * set it (`--timeout`, not `limits.runTimeoutMs`); `commandFlags` adds a command's own (ears mcp's
 * `--max-result`). The `--json` report stays as the host wrote it.
 */
export function inFlagTerms<Report extends { failure?: { code: string; message: string } }>(
  report: Report,
  commandFlags: readonly (readonly [string, string])[] = [],
): Report {
  if (report.failure === undefined) return report;
  let message = report.failure.message;
  for (const [limit, flag] of [...LIMIT_FLAGS, ...commandFlags]) message = message.replaceAll(limit, flag);
  return message === report.failure.message ? report : { ...report, failure: { ...report.failure, message } };
}

/** How a host limit named in a failure message is set from the command line. */
const LIMIT_FLAGS = [
  ["(limits.runTimeoutMs)", "(--timeout)"],
  ["(limits.memoryBytes)", "(--memory)"],
  ["; limits.memoryBytes)", "; --memory)"],
  ["(limits.cpuTimeMs)", "(--cpu-time)"],
  ["limits.memoryBytes (", "--memory ("],
  ["limits.processes (", "--processes ("],
  ["limits.cpuTimeMs (", "--cpu-time ("],
  ["limits.tmpBytes (", "--tmp-size ("],
] as const;

/** The guest command after `--`, or a usage error that shows how to give it. */
export function guestCommand(name: string, positionals: readonly string[], command: readonly string[]): string[] {
  if (positionals.length > 0) {
    throw new UsageError(
      `unexpected ${JSON.stringify(positionals[0])} before --; write the guest command after --, e.g. ears ${name} -- node guest.mjs`,
    );
  }
  if (command.length === 0 || command[0] === "") {
    throw new UsageError(`no guest command; write it after --, e.g. ears ${name} -- node guest.mjs (see ears ${name} --help)`);
  }
  return [...command];
}

/** The host limits from --timeout and --call-timeout. */
export function limitsOf(values: { timeout?: string; "call-timeout"?: string }): HostLimits {
  const limits: HostLimits = {};
  const runTimeoutMs = parseSeconds("timeout", values.timeout);
  const callTimeoutMs = parseSeconds("call-timeout", values["call-timeout"]);
  if (runTimeoutMs !== undefined) limits.runTimeoutMs = runTimeoutMs;
  if (callTimeoutMs !== undefined) limits.callTimeoutMs = callTimeoutMs;
  return limits;
}

/** The resource limits from --memory, --processes, --cpu-time and --tmp-size (`ears run`, `ears exec`). */
export function resourceLimitsOf(values: { memory?: string; processes?: string; "cpu-time"?: string; "tmp-size"?: string }): HostLimits {
  const limits: HostLimits = {};
  const memoryBytes = parseSize("memory", values.memory);
  const processes = parseCount("processes", values.processes);
  const cpuTimeMs = parseSeconds("cpu-time", values["cpu-time"]);
  const tmpBytes = parseSize("tmp-size", values["tmp-size"]);
  if (memoryBytes !== undefined) limits.memoryBytes = memoryBytes;
  if (processes !== undefined) limits.processes = processes;
  if (cpuTimeMs !== undefined) limits.cpuTimeMs = cpuTimeMs;
  if (tmpBytes !== undefined) limits.tmpBytes = tmpBytes;
  return limits;
}

/** The guest's stderr to ours (unless --quiet), into the transcript and onto the timeline, as each one asks; undefined for none. */
export function guestStderrTo(
  print: ((chunk: string) => void) | undefined,
  recorder: Recorder | undefined,
  timeline?: (chunk: string) => void,
): ((chunk: string) => void) | undefined {
  if (print === undefined && recorder === undefined && timeline === undefined) return undefined;
  return (chunk) => {
    print?.(chunk);
    recorder?.stderr(chunk);
    timeline?.(chunk);
  };
}

/** Opens the --record transcript before the guest starts, so a bad path is a usage error, not a lost run. */
export function startRecording(path: string | undefined, cwd: string): Recorder | undefined {
  if (path === undefined) return undefined;
  try {
    return recordTo(resolve(cwd, path), { timed: true });
  } catch (error) {
    throw new UsageError(`--record: ${describeError(error)}`);
  }
}

/**
 * Flushes the transcript, after the run's report as its closing note when there is one; false (after
 * saying why on stderr) when it could not be written completely.
 */
export async function finishRecording(recorder: Recorder | undefined, io: CliIo, report?: RunReport): Promise<boolean> {
  if (recorder === undefined) return true;
  try {
    if (report !== undefined) recorder.report(report);
    await recorder.close();
    return true;
  } catch (error) {
    io.stderr.write(`ears: ${describeError(error)}\n`);
    return false;
  }
}

/** The --verbose timeline of a run that has ended: what the session showed, with the report's failure and usage. */
function printRunTimeline(timeline: TimelineBuilder, report: RunReport, io: CliIo): void {
  const { logs: _logs, calls: _calls, stderr: _stderr, outcome: _outcome, hello: _hello, ...rest } = report;
  timeline.add({ from: "host", report: JSON.parse(JSON.stringify(rest)) as Json });
  printTimeline(timeline.build(), io.stderr);
}
