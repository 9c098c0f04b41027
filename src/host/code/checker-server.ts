/**
 * The warm type checker (`node checker-server.js <typescript package directory>`): a long-lived child
 * of the host that checks one code body at a time and keeps what does not change between bodies (the
 * parsed standard library, the declarations while they stay the same). Started and owned by
 * `warm-checker.ts`; docs/code.md says why it is built this way.
 *
 * Protocol: one JSON request a line on stdin, `{ id, declarations, code }` (`code` is the body already
 * wrapped for checking); one JSON answer a line on stdout, `{ id, errors, other }` or `{ id, failed }`.
 * `errors` are the errors in `code.ts` (1-based line and column, the code, and the message with its
 * chain of explanations, outermost first); `other` is every other error, as tsc prints it. The errors
 * are the ones `tsc -p` reports, in its order: the project's own first, the type errors only when there
 * are none. It exits when stdin ends (the host is gone).
 *
 * TypeScript 5.x and 6 (a JavaScript compiler): the `typescript` module in this process, a program
 * rebuilt per body from its predecessor, with the library's source files parsed once. TypeScript 7 (a
 * native compiler without an in-process API): its API server (`typescript/unstable/async`, the native
 * `tsc --api` as this process's child) with one project whose files this process serves from memory.
 */
import { createInterface } from "node:readline";
import type { CheckAnswer, CheckRequest } from "./check-protocol.js";
import { loadChecker } from "./checkers.js";

/** Runs as the checker process: answers each request in turn. */
async function serveChecks(directory: string): Promise<void> {
  const checker = loadChecker(directory);
  // A failure to load is each request's answer (the host shows it), not a crash without a word.
  checker.catch(() => {});
  const answer = (message: CheckAnswer) => process.stdout.write(`${JSON.stringify(message)}\n`);
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    queue = queue.then(async () => {
      let request: CheckRequest;
      try {
        request = JSON.parse(line) as CheckRequest;
      } catch {
        return; // The host sends only JSON lines; anything else is not a request.
      }
      try {
        answer({ id: request.id, ...(await (await checker)(request.declarations, request.code)) });
      } catch (error) {
        // A compiler that threw (or an API server that died) may be left in any state: the answer, then a
        // clean exit, so the host's next check starts a fresh checker.
        const failed = `${JSON.stringify({ id: request.id, failed: error instanceof Error ? error.message : String(error) })}\n`;
        await new Promise<void>((resolve) => process.stdout.write(failed, () => resolve()));
        process.exit(1);
      }
    });
  });
  // The host closed its end (it ended or died): nothing more will be asked.
  lines.on("close", () => void queue.finally(() => process.exit(0)));
}

const directory = process.argv[2];
if (directory === undefined) throw new Error("usage: node checker-server.js <directory of the typescript package>");
await serveChecks(directory);
