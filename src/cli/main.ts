#!/usr/bin/env node
/** The `ears` executable: the real process's streams, working directory and signals around {@link main}. */
import { main } from "./cli.js";
import { exitAfterOutput } from "./exit.js";

// A reader that goes away (`ears run ... | head`) must not crash the CLI while the guest is stopped.
process.stdout.on("error", () => {});
process.stderr.on("error", () => {});

const interrupt = new AbortController();
const onSignal = (signal: NodeJS.Signals) => {
  if (!interrupt.signal.aborted) interrupt.abort(new Error(`ears received ${signal}`));
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

const status = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  cwd: process.cwd(),
  signal: interrupt.signal,
});
process.off("SIGINT", onSignal);
process.off("SIGTERM", onSignal);
// The report is written: exit once it has reached the OS, even if a handler left work behind.
await exitAfterOutput(status);
