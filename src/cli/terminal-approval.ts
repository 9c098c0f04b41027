/**
 * `--approve NAME,...` of `ears run` and `ears exec`: each call that needs approval is asked on the
 * terminal (docs/approvals.md, "From the command line"). The guest speaks the protocol on its own pipes,
 * not on ears' stdin, so ears reads the answer from its own stdin and writes the question on its stderr
 * (stdout is the result's). Both must be terminals; otherwise nobody could answer, and the call is denied
 * at once, saying why.
 */
import type { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApprovalCall, ApprovalDecision, ApprovalOptions, Capabilities } from "../host/index.js";
import { describeError } from "../protocol/errors.js";
import { endGuestStderrLine } from "./report-output.js";
import { escapeJsonControls, escapeTerminalText } from "./terminal-text.js";
import { parseNameList, UsageError } from "./usage.js";

/** The longest arguments shown in a question (as JSON text); longer ones are cut, saying how much is not shown. */
export const MAX_SHOWN_ARGUMENT_CHARS = 2000;

/** The `by` of a decision typed at the terminal. */
export const TERMINAL_BY = "terminal";

/** The reason a body sees for a call denied at the prompt. */
export const DENIED_AT_TERMINAL = "denied at the terminal";

/** What the question ends with; the answer is typed after it. */
export const PROMPT_END = "[y/N] ";

/**
 * The names of `--approve`, checked: each must be a capability that exists and is allowed (a capability
 * that is not allowed is denied without asking, so approving it would mean nothing). Throws {@link UsageError}.
 */
export function approveNamesOf(values: readonly string[] | undefined, capabilities: Capabilities, allowed: readonly string[]): string[] {
  const names = parseNameList(values);
  const unknown = names.filter((name) => !Object.hasOwn(capabilities, name));
  if (unknown.length > 0) {
    throw new UsageError(
      `--approve names ${quoted(unknown)}, but no such capability exists (available: ${Object.keys(capabilities).join(", ")})`,
    );
  }
  const notAllowed = names.filter((name) => !allowed.includes(name));
  if (notAllowed.length > 0) {
    throw new UsageError(
      `--approve names ${quoted(notAllowed)}, which --allow does not; a capability that is not allowed is denied ` +
        `without asking: add it to --allow too, e.g. --allow ${notAllowed.join(",")} --approve ${notAllowed.join(",")}`,
    );
  }
  return names;
}

/**
 * A call as one line a person (or a client's dialog) can read: the name and the arguments as JSON, every
 * control character escaped (JSON escapes C0; DEL and C1 are written as `\u` escapes), cut at
 * {@link MAX_SHOWN_ARGUMENT_CHARS} with the count of what is not shown.
 */
export function callText(call: ApprovalCall): string {
  let args = escapeJsonControls(JSON.stringify(call.arguments) ?? "null");
  if (args.length > MAX_SHOWN_ARGUMENT_CHARS) {
    const rest = args.length - MAX_SHOWN_ARGUMENT_CHARS;
    args = `${args.slice(0, MAX_SHOWN_ARGUMENT_CHARS)} …(${rest} more characters not shown)`;
  }
  return `${escapeTerminalText(call.name, { singleLine: true })} ${args}`;
}

/** Where the terminal prompt reads and writes: ears' stdin and stderr. */
export interface TerminalIo {
  stdin: Readable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** --quiet: no note when a call is denied for want of a terminal. */
  quiet: boolean;
}

/**
 * The approval options of a run from the command line: the `--approve` names are required, and every call
 * that needs approval (those, and handlers marked with `requireApproval`) is asked on the terminal, one
 * question at a time (calls made together wait their turn). "y" or "yes" approves; anything else, an
 * empty line or the end of input denies with {@link DENIED_AT_TERMINAL}. Without a terminal every such
 * call is denied with a reason that says so.
 */
export function terminalApproval(required: readonly string[], io: TerminalIo): ApprovalOptions {
  const problem = !io.stdin.isTTY ? "stdin is not a terminal" : !io.stderr.isTTY ? "stderr is not a terminal" : undefined;
  if (problem !== undefined) {
    const reason = `no terminal to ask: ${problem}; run ears with a terminal, or drop --approve`;
    let noted = false;
    return {
      required,
      decide: (call) => {
        if (!noted && !io.quiet) {
          noted = true;
          endGuestStderrLine(io.stderr);
          io.stderr.write(`ears: ${escapeTerminalText(call.name, { singleLine: true })} needs approval: denied, ${reason}\n`);
        }
        return { approved: false, reason, by: "ears" };
      },
    };
  }
  const prompt = new TerminalPrompt(io.stdin, io.stderr);
  return { required, decide: (call, { signal }) => prompt.ask(call, signal) };
}

/** One question at a time on the terminal. */
class TerminalPrompt {
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly stdin: Readable,
    private readonly stderr: Writable,
  ) {}

  ask(call: ApprovalCall, signal: AbortSignal): Promise<ApprovalDecision> {
    const answer = this.turn.then(() => this.askNow(call, signal));
    this.turn = answer.catch(() => {});
    return answer;
  }

  private async askNow(call: ApprovalCall, signal: AbortSignal): Promise<ApprovalDecision> {
    // Asked no more (the run ended, or the decision deadline passed while an earlier question was open).
    if (signal.aborted) return { approved: false, reason: describeError(signal.reason), by: TERMINAL_BY };
    if (this.stdin.readableEnded) return { approved: false, reason: `${DENIED_AT_TERMINAL} (its input had ended)`, by: TERMINAL_BY };
    endGuestStderrLine(this.stderr);
    this.stderr.write(`ears: the body calls ${callText(call)}\nears: allow this call? ${PROMPT_END}`);
    const line = await readLine(this.stdin, signal);
    if (line === undefined) {
      // Withdrawn: say so, so the next question starts on a line of its own and nobody answers a gone one.
      const why = signal.aborted ? describeError(signal.reason) : "the terminal's input ended";
      this.stderr.write(`\nears: the question about ${escapeTerminalText(call.name, { singleLine: true })} is withdrawn: ${why}\n`);
      return { approved: false, reason: signal.aborted ? why : `${DENIED_AT_TERMINAL} (its input ended)`, by: TERMINAL_BY };
    }
    const approved = /^\s*y(es)?\s*$/i.test(line);
    return approved ? { approved: true, by: TERMINAL_BY } : { approved: false, reason: DENIED_AT_TERMINAL, by: TERMINAL_BY };
  }
}

/**
 * The next line typed, without its newline; undefined at the end of input or when `signal` aborts. What
 * follows the newline in the same read is dropped: an answer counts only when typed after its question.
 */
function readLine(stdin: Readable, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    // Decoded here, not with setEncoding: the stream is left as it was found.
    const decoder = new StringDecoder("utf8");
    let text = "";
    const finish = (line: string | undefined) => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      signal.removeEventListener("abort", onAbort);
      stdin.pause();
      resolve(line);
    };
    const onData = (chunk: Buffer | string) => {
      text += typeof chunk === "string" ? chunk : decoder.write(chunk);
      const end = text.indexOf("\n");
      if (end >= 0) finish(text.slice(0, end).replace(/\r$/, ""));
    };
    const onEnd = () => finish(undefined);
    const onAbort = () => finish(undefined);
    stdin.on("data", onData);
    stdin.once("end", onEnd);
    signal.addEventListener("abort", onAbort, { once: true });
    stdin.resume();
  });
}

function quoted(names: readonly string[]): string {
  return names.map((name) => JSON.stringify(name)).join(", ");
}
