/** `ears run [options] -- <command> [args...]`: run a guest program under a local host. */
import { resolve } from "node:path";
import { runGuest } from "../host/index.js";
import type { Capabilities, HostLimits } from "../host/index.js";
import { describeError } from "../errors.js";
import { recordTo, type Recorder } from "../testing/transcript.js";
import { loadCapabilityModule } from "./capability-module.js";
import { RUN_HELP } from "./help.js";
import { exitStatusOf, ExitStatus, guestStderrPrinter, logPrinter, printJson, printNotes, printOutcome, type CliIo } from "./report-output.js";
import { rootFiles } from "./root-files.js";
import { parseCommandLine, parseInput, parseNameList, parseSeconds, UsageError } from "./usage.js";

/** Options shared by `ears run` and `ears replay`. */
export const SESSION_OPTIONS = {
  record: { type: "string" },
  timeout: { type: "string" },
  "call-timeout": { type: "string" },
  json: { type: "boolean" },
  quiet: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const RUN_OPTIONS = {
  ...SESSION_OPTIONS,
  allow: { type: "string", multiple: true },
  input: { type: "string" },
  capabilities: { type: "string" },
  root: { type: "string" },
} as const;

/** Runs `ears run` with `argv` (the words after "run"); resolves with the exit status. Throws {@link UsageError}. */
export async function runCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals, command } = parseCommandLine("run", argv, RUN_OPTIONS);
  if (values.help) {
    io.stdout.write(RUN_HELP);
    return ExitStatus.Success;
  }
  const guest = guestCommand("run", positionals, command);
  const input = parseInput(values.input, io.cwd);
  const limits = limitsOf(values);
  let builtins: Capabilities;
  try {
    builtins = await rootFiles(resolve(io.cwd, values.root ?? "."));
  } catch (error) {
    throw new UsageError(`--root: ${describeError(error)}`);
  }
  const custom = values.capabilities === undefined ? {} : await loadCapabilityModule(values.capabilities, io.cwd);
  const capabilities: Capabilities = Object.assign(Object.create(null) as Capabilities, builtins, custom);
  const allowed = parseNameList(values.allow);
  const unknown = allowed.filter((name) => !Object.hasOwn(capabilities, name));
  if (unknown.length > 0) {
    throw new UsageError(
      `--allow names ${unknown.map((n) => JSON.stringify(n)).join(", ")}, but no such capability exists (available: ${Object.keys(capabilities).join(", ")}); add a handler with --capabilities`,
    );
  }
  const recorder = startRecording(values.record, io.cwd);
  const report = await runGuest({
    command: guest[0]!,
    args: guest.slice(1),
    cwd: io.cwd,
    allowed,
    input,
    capabilities,
    limits,
    onLog: values.quiet ? undefined : logPrinter(io.stderr),
    onFrame: recorder?.onFrame,
    onStderr: values.quiet ? undefined : guestStderrPrinter(io.stderr),
    signal: io.signal,
  });
  const recorded = await finishRecording(recorder, io);
  // With --json the report is the output: one that cannot be written fails the command (exit 2).
  const printed = values.json ? printJson(report, io.stdout, io.stderr) : true;
  if (!values.json && report.outcome !== undefined) printOutcome(report.outcome, io.stdout, io.stderr);
  printNotes(report, io.stderr, values.quiet ?? false);
  return recorded && printed ? exitStatusOf(report) : ExitStatus.SessionError;
}

/** The guest command after `--`, or a usage error that shows how to give it. */
export function guestCommand(name: string, positionals: readonly string[], command: readonly string[]): string[] {
  if (positionals.length > 0) {
    throw new UsageError(
      `ears ${name}: unexpected ${JSON.stringify(positionals[0])} before --; write the guest command after --, e.g. ears ${name} -- node guest.mjs`,
    );
  }
  if (command.length === 0 || command[0] === "") {
    throw new UsageError(`ears ${name}: no guest command; write it after --, e.g. ears ${name} -- node guest.mjs (see ears ${name} --help)`);
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

/** Opens the --record transcript before the guest starts, so a bad path is a usage error, not a lost run. */
export function startRecording(path: string | undefined, cwd: string): Recorder | undefined {
  if (path === undefined) return undefined;
  try {
    return recordTo(resolve(cwd, path));
  } catch (error) {
    throw new UsageError(`--record: ${describeError(error)}`);
  }
}

/** Flushes the transcript; false (after saying why on stderr) when it could not be written completely. */
export async function finishRecording(recorder: Recorder | undefined, io: CliIo): Promise<boolean> {
  if (recorder === undefined) return true;
  try {
    await recorder.close();
    return true;
  } catch (error) {
    io.stderr.write(`ears: ${describeError(error)}\n`);
    return false;
  }
}
