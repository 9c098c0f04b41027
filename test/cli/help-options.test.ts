/**
 * Every subcommand's help lists every option its parser takes, and names no option it does not take
 * (issue 29 item 9: ears mcp took --memory, --cpu-time and --processes without saying so). The table
 * and the help come from the command itself, so neither can drift from the other again.
 */
import { describe, expect, it } from "vitest";
import { declarationsCommand } from "../../src/cli/declarations-command.js";
import { doctorCommand } from "../../src/cli/doctor-command.js";
import { execCommand } from "../../src/cli/exec-command.js";
import { mcpCommand } from "../../src/cli/mcp-command.js";
import { replayCommand } from "../../src/cli/replay-command.js";
import { runCommand } from "../../src/cli/run-command.js";
import { runnerCommand } from "../../src/cli/runner-command.js";
import { timelineCommand } from "../../src/cli/timeline-command.js";

const COMMANDS = [runCommand, execCommand, replayCommand, timelineCommand, doctorCommand(), declarationsCommand, mcpCommand, runnerCommand];

describe("each subcommand's help and its option table", () => {
  it("covers every subcommand", () => {
    expect(COMMANDS.map((c) => c.command).sort()).toEqual(["declarations", "doctor", "exec", "mcp", "replay", "run", "runner", "timeline"]);
  });

  it.each(COMMANDS.map((c) => [c.command, c] as const))("ears %s --help names each option it takes", (_, command) => {
    const missing = Object.entries(command.options).flatMap(([name, spec]) => {
      const long = new RegExp(`--${name}(?![\\w-])`);
      const short = spec.short === undefined ? undefined : new RegExp(`(^|[\\s,(])-${spec.short}(?![\\w-])`, "m");
      return [
        ...(long.test(command.help) ? [] : [`--${name}`]),
        ...(short === undefined || short.test(command.help) ? [] : [`-${spec.short}`]),
      ];
    });
    expect(missing).toEqual([]);
  });

  it.each(COMMANDS.map((c) => [c.command, c] as const))("ears %s --help describes no option it does not take", (_, command) => {
    const options = command.help.slice(command.help.indexOf("\nOptions:"));
    // An option's own line: two spaces, then "--name" (or "-x, --name"), possibly a list of them.
    const described = [...options.matchAll(/^ {2}(?:-\w, )?(--[\w-]+(?:, --[\w-]+)*)/gm)].flatMap((m) => m[1]!.split(", "));
    expect(described.length).toBeGreaterThan(0);
    expect(described.filter((flag) => !Object.hasOwn(command.options, flag.slice(2)))).toEqual([]);
  });
});
