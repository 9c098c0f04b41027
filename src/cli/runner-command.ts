/** `ears runner [--no-sandbox] [-- <command> [args...]]`: the far end of a remote runner (docs/remote.md). */
import { serveRunner } from "../host/remote/runner.js";
import { RUNNER_HELP } from "./help.js";
import type { CliIo } from "./report-output.js";
import { subcommand, UsageError } from "./usage.js";

const RUNNER_OPTIONS = {
  "no-sandbox": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Runs `ears runner` (the words after "runner") on this process's stdin and stdout; resolves with its exit status. */
export const runnerCommand = subcommand(
  "runner",
  RUNNER_OPTIONS,
  RUNNER_HELP,
  async ({ values, positionals, command, sawSeparator }, io: CliIo) => {
    if (positionals.length > 0) {
      throw new UsageError(`unexpected ${JSON.stringify(positionals[0])}; a guest program goes after --: ears runner -- node guest.mjs`);
    }
    const [program, ...args] = command;
    if (sawSeparator && program === undefined) throw new UsageError("no command after --; e.g. ears runner -- node guest.mjs");
    // SIGHUP too: a connection's end may come as one (a terminal, some sshd setups) rather than as the end of stdin.
    const hangUp = new AbortController();
    const onHangUp = () => hangUp.abort(new Error("ears runner received SIGHUP"));
    process.once("SIGHUP", onHangUp);
    const signal = io.signal === undefined ? hangUp.signal : AbortSignal.any([io.signal, hangUp.signal]);
    try {
      return await serveRunner(
        { noSandbox: values["no-sandbox"] === true, guest: program === undefined ? undefined : { command: program, args } },
        { stdin: io.stdin ?? process.stdin, stdout: io.stdout, stderr: io.stderr, signal },
      );
    } finally {
      process.off("SIGHUP", onHangUp);
    }
  },
);
