/** `ears declarations [options]`: prints the TypeScript a prompt needs for the capabilities a body may call. */
import { escapeUnsafeText } from "../protocol/text.js";
import { DECLARATIONS_HELP } from "./help.js";
import { ExitStatus } from "./report-output.js";
import { contractOf, hostOptionsOf, RUN_OPTIONS } from "./run-command.js";
import { subcommand, UsageError } from "./usage.js";

const DECLARATIONS_OPTIONS = {
  help: RUN_OPTIONS.help,
  quiet: RUN_OPTIONS.quiet,
  allow: RUN_OPTIONS.allow,
  capabilities: RUN_OPTIONS.capabilities,
  root: RUN_OPTIONS.root,
  "mcp-config": RUN_OPTIONS["mcp-config"],
  "fetch-allow": RUN_OPTIONS["fetch-allow"],
  "fetch-header": RUN_OPTIONS["fetch-header"],
} as const;

/**
 * Runs `ears declarations` with `argv`: the declarations of exactly the capabilities `ears exec` or
 * `ears mcp` with the same options lets a body call (the connectors' typed, the others untyped).
 * Throws {@link UsageError}.
 */
export const declarationsCommand = subcommand(
  "declarations",
  DECLARATIONS_OPTIONS,
  DECLARATIONS_HELP,
  async ({ values, positionals, sawSeparator }, io) => {
    if (positionals.length > 0 || sawSeparator) throw new UsageError("ears declarations takes options only (see ears declarations --help)");
    const { contract, closeConnectors, allowed } = await hostOptionsOf(values, io);
    try {
      // Descriptions and names come from MCP servers: declarations() escapes every control and bidirectional
      // character in them already, colours too; escaping again here only keeps that true on the terminal, whatever prints them.
      io.stdout.write(escapeUnsafeText((contract ?? contractOf(allowed ?? [], {})).declarations(), { keepLineBreaks: true }));
      return ExitStatus.Success;
    } finally {
      await closeConnectors();
    }
  },
);
