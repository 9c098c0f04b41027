/** `ears exec --code '<body>' | --code-file <path> [options]`: run a code body under a local host. */
import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { runCode, type RunReport, type Session } from "../host/index.js";
import { describeError } from "../protocol/errors.js";
import { EXEC_HELP } from "./help.js";
import { ExitStatus } from "./report-output.js";
import { hostOptionsOf, reportRun, RUN_OPTIONS, runOptionsOf } from "./run-command.js";
import { subcommand, UsageError } from "./usage.js";
import { durableSession, workspaceSizeOf } from "./workspace-option.js";

const EXEC_OPTIONS = {
  ...RUN_OPTIONS,
  code: { type: "string" },
  "code-file": { type: "string" },
  typecheck: { type: "boolean" },
  cwd: { type: "string" },
  workspace: { type: "string" },
  "workspace-size": { type: "string" },
  "no-record-code": { type: "boolean" },
} as const;

/** Runs `ears exec` with `argv` (the words after "exec"); resolves with the exit status. Throws {@link UsageError}. */
export const execCommand = subcommand("exec", EXEC_OPTIONS, EXEC_HELP, async ({ values, positionals, sawSeparator }, io) => {
  if (positionals.length > 0 || sawSeparator) {
    throw new UsageError(
      "ears exec runs a code body, not a command; give it with --code '<body>' or --code-file <path> " +
        "(for a program, use ears run -- <command>)",
    );
  }
  const code = codeOf(values.code, values["code-file"], io.cwd);
  // The body works in a private empty directory unless --cwd names one (shown read-only, secrets masked)
  // or --workspace one (writable, kept: a durable session's directory).
  const cwd = values.cwd === undefined ? undefined : workingDirectoryOf(values.cwd, io.cwd);
  const workspace = workspaceOf(values);
  const { contract, closeConnectors, ...host } = await hostOptionsOf(values, io);
  // The body is part of what happened (the timeline numbers its lines as failures do), unless left out.
  if (values["no-record-code"] !== true) {
    host.recorder?.code(code);
    host.timeline?.add({ from: "host", code });
  }
  let session: Session | undefined;
  try {
    // The workspace is opened last, after every other option was checked, and closed (its DIR kept) in any case.
    if (workspace !== undefined) session = await durableSession("--workspace", workspace.dir, workspace.bytes, io.cwd);
    let running: Promise<RunReport>;
    try {
      // With connectors, --typecheck checks against their types; without, against an untyped ears.
      running = runCode({
        ...runOptionsOf(host),
        ...(session === undefined ? { cwd } : { cwd: undefined, session }),
        code,
        typecheck: values.typecheck ?? false,
        ...(contract === undefined ? {} : { contract }),
      });
    } catch (error) {
      // amaro is not installed: say what to install, as for any failure to start (exit 2).
      if (!(error instanceof Error && error.name === "MissingPeerError")) throw error;
      await host.recorder?.close().catch(() => {});
      io.stderr.write(`ears: ${error.message}\n`);
      return ExitStatus.SessionError;
    }
    return await reportRun(await running, values, io, host);
  } finally {
    await session?.close();
    await closeConnectors();
  }
});

/**
 * --workspace DIR and --workspace-size, checked against the options they cannot go with: a session's
 * workspace is the working directory (not with --cwd) and its runs are sandboxed (not with --no-sandbox).
 */
function workspaceOf(values: { workspace?: string; "workspace-size"?: string; cwd?: string; "no-sandbox"?: boolean }) {
  const bytes = workspaceSizeOf(values["workspace-size"]);
  if (values.workspace === undefined) {
    if (bytes !== undefined) throw new UsageError("--workspace-size bounds --workspace DIR; give --workspace too");
    return undefined;
  }
  if (values.workspace === "") throw new UsageError("--workspace needs a directory, e.g. --workspace ./work");
  if (values.cwd !== undefined)
    throw new UsageError("--workspace and --cwd both choose the body's working directory; give one (--workspace: writable and kept)");
  if (values["no-sandbox"])
    throw new UsageError("--workspace runs the body sandboxed (its workspace is all it may write); drop --no-sandbox");
  return { dir: values.workspace, bytes };
}

/** --cwd as an absolute path to an existing directory. */
function workingDirectoryOf(dir: string, cwd: string): string {
  const path = resolve(cwd, dir);
  if (!existsSync(path) || !statSync(path).isDirectory()) throw new UsageError(`--cwd ${JSON.stringify(dir)}: no such directory`);
  return path;
}

/** The body from --code or --code-file: exactly one of them. */
function codeOf(code: string | undefined, file: string | undefined, cwd: string): string {
  if (code !== undefined && file !== undefined) throw new UsageError("give the body once: --code or --code-file, not both");
  if (code !== undefined) return code;
  if (file === undefined) throw new UsageError(`no code body; give it with --code '<body>' or --code-file <path> (see ears exec --help)`);
  try {
    // A byte order mark is an editor's, not part of the code (it would shift the first line's columns).
    return readFileSync(resolve(cwd, file), "utf8").replace(/^\uFEFF/, "");
  } catch (error) {
    throw new UsageError(`cannot read --code-file ${file}: ${describeError(error)}`);
  }
}
