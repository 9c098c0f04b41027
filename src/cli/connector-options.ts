/**
 * The connector options of `ears run`, `exec`, `declarations` and `mcp`: `--mcp-config <file>` (the
 * servers' tools become capabilities) and `--fetch-allow <origin>` / `--fetch-header` (a `fetch`
 * capability whose secrets stay in ears).
 */
import { mkdtempSync, readdirSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connectMcpServers, fetchCapability, FETCH_SPEC, readMcpConfig, type Capabilities } from "../host/index.js";
import type { CapabilitySpec } from "../contract/contract.js";
import { describeError } from "../protocol/errors.js";
import { escapeUnsafeText } from "../protocol/text.js";
import { endGuestStderrLine, type CliIo } from "./report-output.js";
import { escapeTerminalText } from "./terminal-text.js";
import { UsageError } from "./usage.js";

/** The parseArgs options for connectors. */
export const CONNECTOR_OPTIONS = {
  "mcp-config": { type: "string" },
  "files-dir": { type: "string" },
  "fetch-allow": { type: "string", multiple: true },
  "fetch-header": { type: "string", multiple: true },
} as const;

/** The option values {@link connectorsOf} reads. */
export interface ConnectorValues {
  "mcp-config"?: string;
  "files-dir"?: string;
  "fetch-allow"?: string[];
  "fetch-header"?: string[];
  quiet?: boolean;
}

/** The capabilities the connectors add, their specs (for declarations and typecheck), and how to close them. */
export interface Connectors {
  capabilities: Capabilities;
  specs: Record<string, CapabilitySpec>;
  close(): Promise<void>;
}

/** The name of the fetch capability `--fetch-allow` adds. */
export const FETCH_NAME = "fetch";

/**
 * Connects the MCP servers of `--mcp-config` and builds `fetch` from `--fetch-allow`/`--fetch-header`.
 * Servers' stderr goes to ears' stderr (`[mcp <server>] line`), or nowhere with --quiet. Throws
 * {@link UsageError} for a bad option; a server that cannot be reached is a UsageError too (nothing ran).
 */
export async function connectorsOf(values: ConnectorValues, io: CliIo): Promise<Connectors> {
  const capabilities: Capabilities = Object.create(null);
  const specs: Record<string, CapabilitySpec> = {};
  const headerLines = values["fetch-header"] ?? [];
  const allow = values["fetch-allow"] ?? [];
  if (headerLines.length > 0 && allow.length === 0) throw new UsageError("--fetch-header needs --fetch-allow for the same origin");
  if (allow.length > 0) {
    const headers = fetchHeadersOf(headerLines, process.env);
    try {
      capabilities[FETCH_NAME] = fetchCapability({ allow, headers });
    } catch (error) {
      throw new UsageError(`--fetch-allow: ${(error as Error).message.replace(/^fetchCapability: options\.\w+: /, "")}`);
    }
    specs[FETCH_NAME] = FETCH_SPEC;
  }
  let close = async () => {};
  const file = values["mcp-config"];
  if (values["files-dir"] !== undefined && file === undefined)
    throw new UsageError("--files-dir needs --mcp-config (it is where MCP tools' images go)");
  if (file !== undefined) {
    let config;
    try {
      config = readMcpConfig(resolve(io.cwd, file));
    } catch (error) {
      throw new UsageError(`--mcp-config: ${describeError(error)}`);
    }
    const quiet = values.quiet ?? false;
    const files = filesDirOf(values["files-dir"], io);
    let connection;
    try {
      connection = await connectMcpServers(config, {
        filesDir: files.dir,
        onServerStderr: (server, line) => {
          if (quiet) return;
          endGuestStderrLine(io.stderr);
          // An upstream server's stderr is another party's text: escaped like a guest's.
          io.stderr.write(`[mcp ${escapeUnsafeText(server)}] ${escapeTerminalText(line, { singleLine: true })}\n`);
        },
      });
    } catch (error) {
      files.done(true);
      if (error instanceof Error && error.name === "MissingPeerError") throw new UsageError(error.message);
      throw new UsageError(`--mcp-config ${file}: ${describeError(error)}`);
    }
    // No clash with fetch: an MCP capability's name always holds a ".", "<server>.<tool>".
    for (const name of connection.contract.names) {
      capabilities[name] = connection.capabilities[name]!;
      specs[name] = connection.contract.specs[name]!;
    }
    close = async () => {
      await connection.close();
      files.done(quiet);
    };
  }
  return { capabilities, specs, close };
}

/**
 * Where the MCP tools' images and other files are saved: `--files-dir` (created if missing, yours), or
 * by default a fresh private directory under the OS temporary directory. Either way the CLI never
 * deletes a file it saved: its path was printed (in a result, a log, a tool's content) and must still
 * exist after ears exits (issue 29 item 10). `done()` removes the default directory only when it stayed
 * empty, and otherwise names it on stderr (unless `quiet`).
 */
function filesDirOf(given: string | undefined, io: CliIo): { dir: string; done(quiet: boolean): void } {
  if (given !== undefined) {
    return { dir: resolve(io.cwd, given), done: () => {} };
  }
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), "ears-files-"));
  } catch (error) {
    throw new UsageError(`cannot create a directory for MCP tools' files under ${tmpdir()}: ${describeError(error)}; give --files-dir DIR`);
  }
  return {
    dir,
    done(quiet) {
      let count: number;
      try {
        count = readdirSync(dir).length;
        if (count === 0) rmdirSync(dir);
      } catch {
        return; // Removed meanwhile, by someone else: nothing of ours to name.
      }
      if (count > 0 && !quiet) {
        endGuestStderrLine(io.stderr);
        io.stderr.write(
          `ears: ${count === 1 ? "1 file" : `${count} files`} from MCP tools kept in ${dir} ` +
            "(ears does not delete them; --files-dir chooses the directory)\n",
        );
      }
    },
  };
}

/**
 * `--fetch-header 'https://api.example.com=Authorization: Bearer ${TOKEN}'`: a header for one origin,
 * whose `${NAME}` parts are read from ears' own environment (quote it so the shell leaves them), so the
 * secret is neither in the command line's text nor ever shown to a body. Throws {@link UsageError}.
 */
export function fetchHeadersOf(lines: readonly string[], env: NodeJS.ProcessEnv): Record<string, Record<string, string>> {
  const headers: Record<string, Record<string, string>> = {};
  for (const line of lines) {
    const match = /^(https?:\/\/[^=\s]+)=([!#$%&'*+.^_`|~\w-]+):\s*(.*)$/.exec(line);
    if (match === null) {
      throw new UsageError(
        `--fetch-header ${JSON.stringify(line)}: write <origin>=<Name>: <value>, e.g. ` +
          `--fetch-header 'https://api.example.com=Authorization: Bearer \${API_TOKEN}'`,
      );
    }
    const [, origin, name, template] = match as unknown as [string, string, string, string];
    const value = template.replace(/\$\{([A-Za-z_]\w*)\}/g, (_, variable: string) => {
      const found = env[variable];
      if (found === undefined) throw new UsageError(`--fetch-header for ${origin}: the environment variable ${variable} is not set`);
      return found;
    });
    const key = URL.canParse(origin) ? new URL(origin).origin : origin;
    (headers[key] ??= {})[name] = value;
  }
  return headers;
}
