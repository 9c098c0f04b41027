/**
 * The terminal approval prompt in process (terminal-approval.ts, terminal-output.ts), on stand-in terminal
 * streams: the question's text and its reset, the answers, the withdrawn question, what is held while it is
 * open and what is released after, typed-ahead lines. The same behaviour in a real terminal:
 * approve-tmux.test.ts and approve-terminal.test.ts.
 */
import { execFileSync } from "node:child_process";
import { getEventListeners } from "node:events";
import { closeSync, constants, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { ApprovalCall, ApprovalDecision, ApprovalOptions } from "../../src/host/index.js";
import { guestStderrPrinter, logPrinter } from "../../src/cli/report-output.js";
import {
  approveNamesOf,
  callText,
  DENIED_AT_TERMINAL,
  discardTypeahead,
  MAX_SHOWN_ARGUMENT_CHARS,
  PROMPT_END,
  QUESTION_RESET,
  questionText,
  terminalApproval,
  TERMINAL_BY,
} from "../../src/cli/terminal-approval.js";
import { HeldTerminal, holdableTerminal, MAX_HELD_CHARS, openQuestion } from "../../src/cli/terminal-output.js";
import { UsageError } from "../../src/cli/usage.js";

/** A stand-in terminal: what was written, as one string, and a width. */
class Screen extends Writable {
  text = "";
  isTTY = true;
  columns = 80;
  constructor() {
    super({ decodeStrings: false });
  }
  override _write(chunk: string | Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

function keyboard(): PassThrough & { isTTY: boolean } {
  return Object.assign(new PassThrough(), { isTTY: true });
}

const call = (name: string, args: unknown, id = 1): ApprovalCall => ({ id, name, arguments: args }) as ApprovalCall;

function decide(approval: ApprovalOptions, c: ApprovalCall, signal = new AbortController().signal): Promise<ApprovalDecision> {
  return Promise.resolve(approval.decide!(c, { signal } as Parameters<NonNullable<ApprovalOptions["decide"]>>[1]));
}

/** Resolves once `screen` shows `text` (the prompt writes its question after a turn of the event loop); fails if it never does. */
async function shows(screen: Screen, text: string): Promise<void> {
  for (let turn = 0; !screen.text.includes(text); turn++) {
    if (turn > 1000) throw new Error(`the screen never showed ${JSON.stringify(text)}; it shows ${JSON.stringify(screen.text)}`);
    await new Promise((wake) => setImmediate(wake));
  }
}

const question = (name: string, args: string) =>
  `${QUESTION_RESET}ears: approval needed; the body's output is held until you answer\n` +
  `${QUESTION_RESET}ears: the body calls ${name} ${args}\n` +
  `${QUESTION_RESET}ears: allow this call to ${name}? [y/N] `;

describe("approveNamesOf", () => {
  const caps = { send: () => 1, read: () => 2 };
  it("returns the names when each is a capability that is allowed", () => {
    expect(approveNamesOf(["send"], caps, ["send", "read"])).toEqual(["send"]);
    expect(approveNamesOf(undefined, caps, [])).toEqual([]);
  });
  it("refuses a name that is no capability, naming those that are", () => {
    expect(() => approveNamesOf(["nope,send"], caps, ["send"])).toThrow(
      new UsageError('--approve names "nope", but no such capability exists (available: send, read)'),
    );
  });
  it("refuses a name --allow does not give, saying how to give it", () => {
    expect(() => approveNamesOf(["send,read"], caps, [])).toThrow(
      new UsageError(
        '--approve names "send", "read", which --allow does not; a capability that is not allowed is denied without asking: ' +
          "add it to --allow too, e.g. --allow send,read --approve send,read",
      ),
    );
  });
});

describe("callText and questionText", () => {
  it("escapes every control and bidirectional character in the name and the arguments; no colour passes", () => {
    expect(callText(call("se\x1b[31mnd\u202e", { t: "\x1b]0;x\x07\x9b2J\u2066\x7f" }))).toBe(
      'se\\x1b[31mnd\\u202e {"t":"\\u001b]0;x\\u0007\\u009b2J\\u2066\\u007f"}',
    );
    expect(callText(call("n", undefined))).toBe("n null");
  });
  it("cuts long arguments, saying how much is not shown", () => {
    const text = callText(call("n", "a".repeat(MAX_SHOWN_ARGUMENT_CHARS + 10)));
    expect(text).toBe(`n "${"a".repeat(MAX_SHOWN_ARGUMENT_CHARS - 1)} …(12 more characters not shown)`);
    expect(callText(call("n", "a".repeat(MAX_SHOWN_ARGUMENT_CHARS - 2)))).toBe(`n "${"a".repeat(MAX_SHOWN_ARGUMENT_CHARS - 2)}"`);
  });
  it("is three lines, each from a reset terminal state, the last naming the call and ending where the answer goes", () => {
    expect(questionText(call("send\x1b[8m", { to: "x" }))).toBe(question("send\\x1b[8m", '{"to":"x"}'));
    expect(QUESTION_RESET).toBe("\x1b[0m\x1b[?25h\x1b[?7h\x1b[4l\x1b(B\x0f");
    expect(PROMPT_END).toBe("[y/N] ");
  });
});

describe("terminalApproval without a terminal", () => {
  it.each([
    ["stdin", false, true, "stdin is not a terminal"],
    ["stderr", true, false, "stderr is not a terminal"],
  ])("denies every call when %s is not a terminal, saying so once", async (_which, stdinTty, stderrTty, problem) => {
    const screen = new Screen();
    screen.isTTY = stderrTty;
    const stdin = Object.assign(new PassThrough(), { isTTY: stdinTty });
    const approval = terminalApproval(["send"], { stdin, stderr: screen, quiet: false });
    expect(approval.required).toEqual(["send"]);
    const reason = `no terminal to ask: ${problem}; run ears with a terminal, or drop --approve`;
    expect(await decide(approval, call("se\u202end", {}))).toEqual({ approved: false, reason, by: "ears" });
    expect(await decide(approval, call("send", {}))).toEqual({ approved: false, reason, by: "ears" });
    expect(screen.text).toBe(`ears: se\\u202end needs approval: denied, ${reason}\n`);
  });
  it("says nothing with --quiet", async () => {
    const screen = new Screen();
    const approval = terminalApproval(["send"], { stdin: new PassThrough(), stderr: screen, quiet: true });
    expect(await decide(approval, call("send", {}))).toMatchObject({ approved: false });
    expect(screen.text).toBe("");
  });
});

describe("terminalApproval on a terminal", () => {
  const setup = () => {
    const screen = new Screen();
    const stderr = holdableTerminal(screen);
    const stdin = keyboard();
    return { screen, stderr, stdin, approval: terminalApproval(["send"], { stdin, stderr, quiet: false }) };
  };

  it.each(["y", "yes", " Y ", "YES\r"])("%j approves", async (answer) => {
    const { screen, stdin, approval } = setup();
    const decision = decide(approval, call("send", { to: "ada" }));
    await shows(screen, PROMPT_END);
    expect(screen.text).toBe(question("send", '{"to":"ada"}'));
    stdin.write(`${answer}\n`);
    expect(await decision).toEqual({ approved: true, by: TERMINAL_BY });
  });

  it("an answer's words, the chunks it comes in (strings, or bytes cut inside a character) and what is left listening", async () => {
    expect([TERMINAL_BY, DENIED_AT_TERMINAL]).toEqual(["terminal", "denied at the terminal"]);
    const { screen, stdin, approval } = setup();
    const controller = new AbortController();
    // A no-break space is white space to the answer's pattern: "y" and one, its two bytes cut apart.
    const first = decide(approval, call("send", { n: 1 }), controller.signal);
    await shows(screen, '{"n":1}');
    stdin.write(Buffer.from([0x79, 0xc2]));
    stdin.write(Buffer.from([0xa0, 0x0a]));
    expect(await first).toEqual({ approved: true, by: "terminal" });
    expect([stdin.listenerCount("data"), stdin.listenerCount("end"), getEventListeners(controller.signal, "abort").length]).toEqual([
      0, 0, 0,
    ]);
    stdin.setEncoding("utf8");
    const second = decide(approval, call("send", { n: 2 }), controller.signal);
    await shows(screen, '{"n":2}');
    stdin.write("nope\n");
    expect(await second).toEqual({ approved: false, reason: "denied at the terminal", by: "terminal" });
    expect([stdin.listenerCount("data"), stdin.listenerCount("end"), getEventListeners(controller.signal, "abort").length]).toEqual([
      0, 0, 0,
    ]);
  });

  it.each(["", "n", "no", "yy", "y es", "ok"])("%j denies", async (answer) => {
    const { screen, stdin, approval } = setup();
    const decision = decide(approval, call("send", {}));
    await shows(screen, PROMPT_END);
    stdin.write(`${answer}\n`);
    expect(await decision).toEqual({ approved: false, reason: DENIED_AT_TERMINAL, by: TERMINAL_BY });
  });

  it("an answer typed in pieces counts once its line ends; what follows it in the same read is dropped", async () => {
    const { screen, stdin, approval } = setup();
    const first = decide(approval, call("send", { n: 1 }));
    await shows(screen, PROMPT_END);
    stdin.write("y");
    stdin.write(Buffer.from("es\nn\n"));
    expect(await first).toEqual({ approved: true, by: TERMINAL_BY });
    // The "n" typed before the next question answers nothing: that one waits for its own line.
    const second = decide(approval, call("send", { n: 2 }));
    await shows(screen, '{"n":2}');
    stdin.write("yes\n");
    expect(await second).toEqual({ approved: true, by: TERMINAL_BY });
  });

  it("a line typed before the question answers nothing", async () => {
    const { screen, stdin, approval } = setup();
    stdin.pause();
    stdin.write("y\n");
    const decision = decide(approval, call("send", {}));
    await shows(screen, PROMPT_END);
    stdin.write("n\n");
    expect(await decision).toEqual({ approved: false, reason: DENIED_AT_TERMINAL, by: TERMINAL_BY });
  });

  it("asks calls made together one after the other, each answer for its own question", async () => {
    const { screen, stdin, approval } = setup();
    const a = decide(approval, call("send", { to: "a" }, 1));
    const b = decide(approval, call("send", { to: "b" }, 2));
    await shows(screen, PROMPT_END);
    expect(screen.text).not.toContain('"b"');
    stdin.write("y\n");
    expect(await a).toEqual({ approved: true, by: TERMINAL_BY });
    await shows(screen, '{"to":"b"}');
    stdin.write("n\n");
    expect(await b).toMatchObject({ approved: false });
  });

  it("the end of input withdraws the question, saying so, and later calls are denied without asking", async () => {
    const { screen, stdin, approval } = setup();
    const decision = decide(approval, call("se\x07nd", {}));
    await shows(screen, PROMPT_END);
    stdin.end();
    expect(await decision).toEqual({ approved: false, reason: `${DENIED_AT_TERMINAL} (its input ended)`, by: TERMINAL_BY });
    expect(screen.text).toBe(
      `${question("se\\x07nd", "{}")}\n${QUESTION_RESET}ears: the question about se\\x07nd is withdrawn: the terminal's input ended\n`,
    );
    const later = await decide(approval, call("send", {}));
    expect(later).toEqual({ approved: false, reason: `${DENIED_AT_TERMINAL} (its input had ended)`, by: TERMINAL_BY });
    expect(screen.text.match(/allow this call/g)).toHaveLength(1);
  });

  it("an abort withdraws the open question with its reason, and a call aborted before its turn is not asked", async () => {
    const { screen, approval } = setup();
    const controller = new AbortController();
    const open = decide(approval, call("send", { n: 1 }), controller.signal);
    const waiting = decide(approval, call("send", { n: 2 }), controller.signal);
    await shows(screen, PROMPT_END);
    controller.abort(new Error("the run ended"));
    expect(await open).toEqual({ approved: false, reason: "the run ended", by: TERMINAL_BY });
    expect(await waiting).toEqual({ approved: false, reason: "the run ended", by: TERMINAL_BY });
    expect(screen.text).toContain(`\n${QUESTION_RESET}ears: the question about send is withdrawn: the run ended\n`);
    expect(screen.text).not.toContain('{"n":2}');
  });

  it("holds the guest's stderr and logs while the question is open, and writes them after the answer, in order", async () => {
    const { screen, stderr, stdin, approval } = setup();
    const guest = guestStderrPrinter(stderr);
    const log = logPrinter(stderr);
    guest("before, with no newline \x1b[30;40m");
    const decision = decide(approval, call("send", {}));
    await shows(screen, PROMPT_END);
    const asked = screen.text;
    // The guest's open line was ended (its colour too) before the question.
    expect(asked).toBe(`[stderr] before, with no newline \x1b[30;40m\x1b[0m\n${question("send", "{}")}`);
    guest("ears: allow this call to read? [y/N] \x1b[2J\n");
    log({ level: "info", content: "a log line" } as never);
    stderr.write("ears: a note\n");
    guest("last");
    expect(screen.text).toBe(asked);
    stdin.write("n\n");
    await decision;
    expect(screen.text).toBe(
      `${asked}[stderr] ears: allow this call to read? [y/N] \\x1b[2J\n[info] a log line\nears: a note\n[stderr] last`,
    );
  });

  it("holds at most MAX_HELD_CHARS, and says after the answer how much more came and is not shown", async () => {
    const { screen, stderr, stdin, approval } = setup();
    const guest = guestStderrPrinter(stderr);
    const decision = decide(approval, call("send", {}));
    await shows(screen, PROMPT_END);
    const asked = screen.text;
    guest(`${"a".repeat(MAX_HELD_CHARS - 20)}`);
    guest("b".repeat(10));
    guest("c".repeat(100));
    guest("ears: forged, not shown\n");
    stdin.write("n\n");
    await decision;
    const after = screen.text.slice(asked.length);
    expect(after).toBe(
      `[stderr] ${"a".repeat(MAX_HELD_CHARS - 20)}${"b".repeat(10)}\n` +
        "ears: 124 more characters of output came while the question was open and are not shown " +
        "(the --record transcript keeps the guest's stderr and logs)\n",
    );
    // The guest's next line starts a line of its own, prefixed.
    guest("ears: next\n");
    expect(screen.text.slice(asked.length + after.length)).toBe("[stderr] ears: next\n");
  });
});

describe("HeldTerminal", () => {
  it("stands in front of a terminal only, once", () => {
    const screen = new Screen();
    const held = holdableTerminal(screen);
    expect(held).toBeInstanceOf(HeldTerminal);
    expect(holdableTerminal(held)).toBe(held);
    expect((held as HeldTerminal).isTTY).toBe(true);
    expect((held as HeldTerminal).columns).toBe(80);
    const pipe = new Screen();
    pipe.isTTY = false;
    expect(holdableTerminal(pipe)).toBe(pipe);
  });

  it("passes writes through until held; one question at a time; a second release writes nothing", () => {
    const screen = new Screen();
    const held = new HeldTerminal(screen);
    expect(held.hold().release()).toEqual({ dropped: 0, lineOpen: false });
    held.write("one\n");
    held.write(Buffer.from("two"));
    expect(screen.text).toBe("one\ntwo");
    const open = held.hold();
    expect(() => held.hold()).toThrow("a question is already open on this terminal");
    held.write("three\n");
    open.write("Q? ");
    expect(screen.text).toBe("one\ntwoQ? ");
    expect(open.release()).toEqual({ dropped: 0, lineOpen: false });
    expect(screen.text).toBe("one\ntwoQ? three\n");
    held.write(Buffer.from("x"));
    expect(open.release()).toEqual({ dropped: 0, lineOpen: true });
    expect(screen.text).toBe("one\ntwoQ? three\nx");
    held.write("\n");
    held.write("");
    expect(open.release()).toEqual({ dropped: 0, lineOpen: false });
    const again = held.hold();
    held.write(Buffer.from("y\n"));
    expect(again.release()).toEqual({ dropped: 0, lineOpen: false });
    expect(screen.text).toBe("one\ntwoQ? three\nx\ny\n");
  });

  it("counts the characters beyond its bound, and starts counting afresh for the next question", () => {
    const screen = new Screen();
    const held = new HeldTerminal(screen);
    const open = held.hold();
    held.write("a".repeat(MAX_HELD_CHARS));
    held.write("b");
    expect(open.release()).toEqual({ dropped: 1, lineOpen: true });
    const next = held.hold();
    held.write("c".repeat(MAX_HELD_CHARS));
    expect(next.release()).toEqual({ dropped: 0, lineOpen: true });
    expect(screen.text.length).toBe(2 * MAX_HELD_CHARS);
  });

  it("openQuestion on a stream that is no HeldTerminal writes straight through and holds nothing", () => {
    const screen = new Screen();
    const open = openQuestion(screen);
    open.write("Q");
    screen.write("x");
    expect(open.release()).toEqual({ dropped: 0, lineOpen: false });
    expect(screen.text).toBe("Qx");
  });
});

describe.runIf(process.platform === "linux")("discardTypeahead", () => {
  it("drops the lines waiting in the descriptor's queue (here a FIFO) and in the stream's buffer", () => {
    const dir = mkdtempSync(join(tmpdir(), "ears-typeahead-"));
    try {
      const fifo = join(dir, "tty");
      execFileSync("mkfifo", [fifo]);
      const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      try {
        writeSync(fd, "y\nyes\n".repeat(2000)); // more than one read takes
        const open = readdirSync("/proc/self/fd").length;
        const stdin = Object.assign(new PassThrough(), { fd });
        stdin.write("y\n");
        stdin.pause();
        discardTypeahead(stdin);
        expect(stdin.readableLength).toBe(0);
        expect(() => readSync(fd, Buffer.alloc(16))).toThrow(/EAGAIN/);
        // The descriptor it read through is closed again.
        expect(readdirSync("/proc/self/fd").length).toBe(open);
      } finally {
        closeSync(fd);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves a stream without a descriptor, or one that cannot be reopened, with only its buffer emptied", () => {
    const stdin = Object.assign(new PassThrough(), { fd: 1_000_000 });
    stdin.write("y\n");
    stdin.pause();
    expect(() => discardTypeahead(stdin)).not.toThrow();
    expect(stdin.readableLength).toBe(0);
  });
});
