/**
 * The `ears` command: dispatches to `run`, `exec`, `replay`, `timeline`, `doctor`, `declarations`, `mcp` and `runner`,
 * prints help and version, maps errors to exit statuses.
 */
import { describeError } from "../protocol/errors.js";
import { escapeUnsafeText } from "../protocol/text.js";
import { SDK } from "../protocol/version.js";
import { MAIN_HELP } from "./help.js";
import { declarationsCommand } from "./declarations-command.js";
import { doctorCommand } from "./doctor-command.js";
import { execCommand } from "./exec-command.js";
import { mcpCommand } from "./mcp-command.js";
import { replayCommand } from "./replay-command.js";
import { ExitStatus, type CliIo } from "./report-output.js";
import { runCommand } from "./run-command.js";
import { runnerCommand } from "./runner-command.js";
import { holdableTerminal } from "./terminal-output.js";
import { timelineCommand } from "./timeline-command.js";
import { UsageError } from "./usage.js";

/** The package version, as `ears --version` prints it. */
export const VERSION = SDK.slice(SDK.lastIndexOf("@") + 1);

/**
 * Runs `ears` with `argv` (without the node and script paths) and resolves with the exit status; never
 * rejects. Usage errors print `ears: <message>` on stderr and give 64.
 */
export async function main(argv: readonly string[], cliIo: CliIo): Promise<number> {
  // On a terminal, an approval question holds everything else written to stderr while it is open (terminal-output.ts).
  const io: CliIo = { ...cliIo, stderr: holdableTerminal(cliIo.stderr) };
  const [first, ...rest] = argv;
  try {
    switch (first) {
      case "run":
        return await runCommand(rest, io);
      case "replay":
        return await replayCommand(rest, io);
      case "exec":
        return await execCommand(rest, io);
      case "timeline":
        return await timelineCommand(rest, io);
      case "doctor":
        return await doctorCommand()(rest, io);
      case "declarations":
        return await declarationsCommand(rest, io);
      case "mcp":
        return await mcpCommand(rest, io);
      case "runner":
        return await runnerCommand(rest, io);
      case "--help":
      case "-h":
      case "help":
        io.stdout.write(MAIN_HELP);
        return ExitStatus.Success;
      case "--version":
      case "-V":
      case "-v":
        io.stdout.write(`${VERSION}\n`);
        return ExitStatus.Success;
      case undefined:
        throw new UsageError("no command; use ears run, ears exec, ears replay or ears timeline (see ears --help)");
      default:
        throw new UsageError(
          first.startsWith("-")
            ? `unknown option ${first}; options go after the command, e.g. ears run --allow read -- node guest.mjs (see ears --help)`
            : `unknown command ${JSON.stringify(first)}; ` +
                "the commands are run, exec, replay, timeline, doctor, declarations, mcp and runner (see ears --help)",
        );
    }
  } catch (error) {
    if (error instanceof UsageError) {
      // One prefix for every message the CLI prints; a message can quote what another party sent (an MCP server's error).
      io.stderr.write(`ears: ${escapeUnsafeText(error.message, { keepLineBreaks: true })}\n`);
      return ExitStatus.Usage;
    }
    io.stderr.write(`ears: internal error: ${error instanceof Error && error.stack ? error.stack : describeError(error)}\n`);
    return ExitStatus.SessionError;
  }
}
