/**
 * `--approve NAME,...` of `ears run` and `ears exec`: each call that needs approval is asked on the
 * terminal (docs/approvals.md, "From the command line"). The guest speaks the protocol on its own pipes,
 * not on ears' stdin, so ears reads the answer from its own stdin and writes the question on its stderr
 * (stdout is the result's). Both must be terminals; otherwise nobody could answer, and the call is denied
 * at once, saying why. A body may try to hide or forge the question (a colour left open, a forged question
 * wrapped to the start of a row, a "y" typed at it): while a question is open nothing else is drawn
 * (terminal-output.ts), it is drawn from a reset terminal state, its last line names the call, and lines
 * typed before it are discarded.
 */
import { closeSync, constants, openSync, readSync } from "node:fs";
import type { Readable, Writable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { ApprovalCall, ApprovalDecision, ApprovalOptions, Capabilities } from "../host/index.js";
import { describeError } from "../protocol/errors.js";
import { escapeUnsafeText } from "../protocol/text.js";
import { endGuestStderrLine } from "./report-output.js";
import { openQuestion, type OpenQuestion } from "./terminal-output.js";
import { escapeJsonControls } from "./terminal-text.js";
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
 * Written before each line of a question: the terminal state a question is drawn in, whatever was drawn
 * before it. SGR reset (no colour, no conceal, no reverse video: the one state a guest's text may set, see
 * terminal-text.ts), cursor shown (DECTCEM), line wrap on (DECAWM: a long question wraps onto rows of its
 * own instead of overwriting the last column), insert mode off (IRM), and the ASCII character set in G0,
 * selected (SCS, SI: a line-drawing set would garble the letters). Nothing that moves the cursor or
 * clears: origin mode, scroll margins and the alternate screen are left alone, since resetting them moves
 * the cursor and could draw the question over earlier text. A guest cannot set those anyway: its text is
 * escaped, and it runs in a session of its own with no controlling terminal to open.
 */
export const QUESTION_RESET = "\x1b[0m\x1b[?25h\x1b[?7h\x1b[4l\x1b(B\x0f";

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
 * control and bidirectional character escaped (JSON escapes C0; DEL, C1 and the bidirectional characters
 * are written as `\u` escapes; the name has no colour either), cut at {@link MAX_SHOWN_ARGUMENT_CHARS} with
 * the count of what is not shown.
 */
export function callText(call: ApprovalCall): string {
  let args = escapeJsonControls(JSON.stringify(call.arguments) ?? "null");
  if (args.length > MAX_SHOWN_ARGUMENT_CHARS) {
    const rest = args.length - MAX_SHOWN_ARGUMENT_CHARS;
    args = `${args.slice(0, MAX_SHOWN_ARGUMENT_CHARS)} …(${rest} more characters not shown)`;
  }
  return `${nameText(call.name)} ${args}`;
}

/** A capability's name in a question or note: every control and bidirectional character escaped, no colour. */
function nameText(name: string): string {
  return escapeUnsafeText(name);
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
          io.stderr.write(`ears: ${nameText(call.name)} needs approval: denied, ${reason}\n`);
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
    // From here until the answer, only the question reaches the terminal: what is written meanwhile waits.
    const question = openQuestion(this.stderr);
    let line: string | undefined;
    try {
      // Lines typed before the question answer nothing: a forged question could have drawn them.
      discardTypeahead(this.stdin);
      question.write(questionText(call));
      line = await readLine(this.stdin, signal);
      if (line === undefined) {
        // Withdrawn: say so, so the next question starts on a line of its own and nobody answers a gone one.
        const why = signal.aborted ? describeError(signal.reason) : "the terminal's input ended";
        question.write(`\n${QUESTION_RESET}ears: the question about ${nameText(call.name)} is withdrawn: ${why}\n`);
      }
    } finally {
      this.release(question);
    }
    if (line === undefined) {
      return signal.aborted
        ? { approved: false, reason: describeError(signal.reason), by: TERMINAL_BY }
        : { approved: false, reason: `${DENIED_AT_TERMINAL} (its input ended)`, by: TERMINAL_BY };
    }
    const approved = /^\s*y(es)?\s*$/i.test(line);
    return approved ? { approved: true, by: TERMINAL_BY } : { approved: false, reason: DENIED_AT_TERMINAL, by: TERMINAL_BY };
  }

  /** Writes what was held while the question was open, and says how much of it was not shown. */
  private release(question: OpenQuestion): void {
    const { dropped, lineOpen } = question.release();
    if (dropped === 0) return;
    endGuestStderrLine(this.stderr);
    this.stderr.write(
      `${lineOpen ? "\n" : ""}ears: ${dropped} more characters of output came while the question was open and are not shown ` +
        "(the --record transcript keeps the guest's stderr and logs)\n",
    );
  }
}

/**
 * The question for `call`, ending where the answer is typed: a line saying the body's output is held, the
 * call (name and arguments), and the question naming the call again, so the last line on the screen is
 * always about the call it decides. Each line starts from {@link QUESTION_RESET}.
 */
export function questionText(call: ApprovalCall): string {
  const name = nameText(call.name);
  return (
    `${QUESTION_RESET}ears: approval needed; the body's output is held until you answer\n` +
    `${QUESTION_RESET}ears: the body calls ${callText(call)}\n` +
    `${QUESTION_RESET}ears: allow this call to ${name}? ${PROMPT_END}`
  );
}

/**
 * Drops what was typed before a question: lines the stream has read but not delivered, and complete lines
 * still in the terminal's input queue (read through a non-blocking descriptor of the same terminal; where
 * that cannot be opened, only the former). A line typed before the question was seen answers nothing.
 */
export function discardTypeahead(stdin: Readable & { fd?: number }): void {
  while (stdin.readableLength > 0 && stdin.read() !== null);
  if (typeof stdin.fd !== "number") return;
  let fd: number;
  try {
    fd = openSync(`/proc/self/fd/${stdin.fd}`, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return;
  }
  try {
    const buffer = Buffer.alloc(4096);
    // EAGAIN (nothing more to read) ends it; so does the end of input (0).
    while (readSync(fd, buffer) > 0);
  } catch {
    // EAGAIN: the queue is empty.
  } finally {
    closeSync(fd);
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
