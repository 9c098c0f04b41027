#!/usr/bin/env node
/** The `ears` executable: the real process's streams, working directory and signals around {@link main}. */
import { main } from "./cli.js";

// A reader that goes away (`ears run ... | head`) must not crash the CLI while the guest is stopped.
process.stdout.on("error", () => {});
process.stderr.on("error", () => {});

const interrupt = new AbortController();
const onSignal = (signal: NodeJS.Signals) => {
  if (!interrupt.signal.aborted) interrupt.abort(new Error(`ears received ${signal}`));
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

// Exit by setting exitCode, never process.exit(): a large result still being written to a pipe is not cut off.
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  signal: interrupt.signal,
});
process.off("SIGINT", onSignal);
process.off("SIGTERM", onSignal);
