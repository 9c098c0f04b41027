/**
 * Guest-controlled text made safe for a terminal. A guest's log level and content, its stderr and its
 * result content reach `ears`'s human output; raw, they could drive the terminal (OSC 52 writes the
 * clipboard, OSC 0 sets the title, cursor movement and erase rewrite earlier lines, CR overwrites a
 * line; a bidirectional override reorders what is shown). Here every control and bidirectional character
 * (protocol/text.ts, `UNSAFE_CHARACTER`) is shown escaped, except newline, tab and SGR sequences that only
 * set colours and text style. A colour the text sets ends with its line: a reset (`ESC[0m`) is written
 * before each newline and at the end of every text that set one, so no guest colour outlives its own
 * text (it could otherwise draw the next line of `ears`, its approval question, black on black).
 *
 * The escaping is unambiguous: a control character becomes `\xHH` (two lower-case hex digits; C0, DEL and
 * C1 alike), a bidirectional character `\uHHHH`, and a backslash the guest wrote is doubled when it is
 * followed by `x`, `u`, another backslash or an escaped character, or ends the text, so `\x1b` in the output
 * always means ESC was escaped, and `\\x1b` means the guest wrote a backslash followed by "x1b".
 * {@link unescapeTerminalText} inverts it (the resets added after colours aside).
 */
import { escapeUnsafeJson, UNSAFE_CHARACTER, unsafeEscape } from "../protocol/text.js";

/** How one piece of guest text is shown. */
export interface TerminalTextOptions {
  /** Escape newline and tab too (for one-line fields such as a log level or a failure code). */
  singleLine?: boolean;
}

// SGR: CSI, parameters (digits separated by ";" or ":"), "m". Anything else after ESC is escaped.
const SGR = /\x1b\[([0-9;:]{0,64})m/y;
// What needs a look: the unsafe characters and backslash.
const SPECIAL = new RegExp(`${UNSAFE_CHARACTER.source.slice(0, -1)}\\\\]`, "g");
const UNSAFE = new RegExp(`^${UNSAFE_CHARACTER.source}`);
/** Ends every colour and style an SGR set. */
export const SGR_RESET = "\x1b[0m";

/**
 * Returns `text` with every control sequence that does more than set colours shown escaped (see the
 * module comment). SGR sequences pass unless they conceal text (parameter 8); a line that kept one ends
 * with {@link SGR_RESET}.
 */
export function escapeTerminalText(text: string, options: TerminalTextOptions = {}): string {
  const singleLine = options.singleLine === true;
  let out = "";
  let from = 0;
  let styled = false;
  SPECIAL.lastIndex = 0;
  for (let match = SPECIAL.exec(text); match !== null; match = SPECIAL.exec(text)) {
    const at = match.index;
    const code = text.charCodeAt(at);
    let replacement: string | undefined;
    let length = 1;
    if (code === 0x5c) {
      // Doubled where the next character could make it read as an escape: another backslash, "x", "u",
      // any escaped character (its escape starts with a backslash), or the end (the next chunk could start with "x").
      const next = text.charAt(at + 1);
      if (next === "" || next === "\\" || next === "x" || next === "u" || UNSAFE.test(next)) replacement = "\\\\";
    } else if (code === 0x0a || code === 0x09) {
      if (singleLine) replacement = unsafeEscape(match[0]);
      else if (code === 0x0a && styled) {
        replacement = `${SGR_RESET}\n`;
        styled = false;
      }
    } else if (code === 0x1b) {
      SGR.lastIndex = at;
      const sgr = SGR.exec(text);
      if (sgr !== null && onlyStyles(sgr[1]!)) {
        length = sgr[0].length; // kept as it is
        SPECIAL.lastIndex = at + length;
        styled = !/^[0;:]*$/.test(sgr[1]!); // a reset ends the styles by itself
        continue;
      }
      replacement = unsafeEscape(match[0]);
    } else {
      replacement = unsafeEscape(match[0]);
    }
    if (replacement === undefined) continue;
    out += text.slice(from, at) + replacement;
    from = at + length;
  }
  const escaped = from === 0 ? text : out + text.slice(from);
  return styled ? escaped + SGR_RESET : escaped;
}

/** Inverts {@link escapeTerminalText}: `\xHH` and `\uHHHH` are the character, `\\` a backslash, any other `\` itself. */
export function unescapeTerminalText(text: string): string {
  return text.replace(/\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})/g, (_all, escaped: string) =>
    escaped === "\\" ? "\\" : String.fromCharCode(Number.parseInt(escaped.slice(1), 16)),
  );
}

/**
 * True when an SGR parameter list only sets colours and styles. Parameter 8 (conceal) hides text, so
 * it is refused; the numbers inside 38/48/58 colour forms (`38;5;n`, `38;2;r;g;b`) are colour values.
 */
function onlyStyles(parameters: string): boolean {
  const list = parameters.split(/[;:]/);
  for (let i = 0; i < list.length; i++) {
    const value = list[i] === "" ? 0 : Number(list[i]);
    if (value === 38 || value === 48 || value === 58) {
      const form = Number(list[i + 1]);
      i += form === 5 ? 2 : form === 2 ? 4 : 0;
    } else if (value === 8) {
      return false;
    }
  }
  return true;
}

/**
 * Prefixes every line of a guest's text stream (its stderr, which arrives in chunks cut anywhere) and
 * escapes it, so no guest line starts at column 0: `ears:` notes cannot be imitated.
 */
export class PrefixedLines {
  private atLineStart: boolean;

  /** `startsMidLine`: the caller already wrote the start of the first line (e.g. a `[level] ` label). */
  constructor(
    private readonly prefix: string,
    options: { startsMidLine?: boolean } = {},
  ) {
    this.atLineStart = options.startsMidLine !== true;
  }

  /** The chunk as it is to be written: escaped, with the prefix at the start of each new line. */
  format(chunk: string): string {
    if (chunk === "") return "";
    const escaped = escapeTerminalText(chunk);
    const body = escaped.replace(/\n(?!$)/g, `\n${this.prefix}`);
    const text = this.atLineStart ? this.prefix + body : body;
    this.atLineStart = escaped.endsWith("\n");
    return text;
  }

  /** Whether the last chunk ended its line (so a note can follow on a line of its own). */
  get lineEnded(): boolean {
    return this.atLineStart;
  }

  /** The caller ended the open line itself: the next chunk starts a new, prefixed line. */
  startNewLine(): void {
    this.atLineStart = true;
  }
}

/**
 * A multi-line text written for people on stdout (the result's content): escaped, and a line that
 * starts with `ears:` has its `e` escaped, so the text cannot pass for one of `ears`'s own notes.
 */
export function escapeResultText(text: string): string {
  return escapeTerminalText(text).replace(/(^|\n)ears:/g, "$1\\x65ars:");
}

/**
 * JSON text made safe for a terminal without changing its value: JSON.stringify escapes C0 controls
 * but leaves DEL, the C1 controls (U+0080 to U+009F, among them the one-character CSI U+009B) and the
 * bidirectional characters raw; they are written as `\u` escapes, which parse back to the same strings. Outside strings JSON text
 * is ASCII, so only string contents change form.
 */
export function escapeJsonControls(json: string): string {
  return escapeUnsafeJson(json);
}
