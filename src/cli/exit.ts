/**
 * How the `ears` process ends once its report is written. Waiting for the event loop to empty would let
 * leftover work keep the CLI alive after the result: a `--capabilities` handler's timer or socket, or a
 * file-system call stuck in libuv's thread pool (a named pipe with no writer, a hung network mount).
 */

/** How long file-system calls still in the thread pool get to finish after the report, before ears ends anyway. */
export const STUCK_CALL_GRACE_MS = 2_000;
const POLL_MS = 50;

/**
 * Flushes stdout and stderr, then exits with `status`. If thread-pool file-system calls are still
 * pending after {@link STUCK_CALL_GRACE_MS}, `process.exit` would wait for them forever (libuv joins its
 * threads at exit), so ears says so on stderr and ends itself with SIGKILL: the report above is complete,
 * but the exit status is then the signal's.
 */
export async function exitAfterOutput(status: number): Promise<never> {
  await flushed(process.stdout);
  await flushed(process.stderr);
  for (let waited = 0; pendingFileSystemCalls() > 0 && waited < STUCK_CALL_GRACE_MS; waited += POLL_MS) {
    await new Promise((wake) => setTimeout(wake, POLL_MS));
  }
  const stuck = pendingFileSystemCalls();
  if (stuck > 0) {
    process.stderr.write(
      `ears: ${stuck} file-system call${stuck === 1 ? " is" : "s are"} still stuck ${STUCK_CALL_GRACE_MS / 1000} s after the report; ` +
        `Node cannot exit normally while one runs, so ears ends with SIGKILL (its exit status would have been ${status})\n`,
    );
    await flushed(process.stderr);
    process.kill(process.pid, "SIGKILL");
  }
  process.exit(status);
}

/** Thread-pool file-system requests still running in this process. */
function pendingFileSystemCalls(): number {
  return process.getActiveResourcesInfo().filter((name) => name.startsWith("FSReq")).length;
}

/** Resolves once everything written to `stream` so far has been handed to the OS (or the stream failed). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((done) => {
    if (stream.destroyed || !stream.writable) done();
    else stream.write("", () => done());
  });
}
