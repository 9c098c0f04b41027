// Terminal escaping of guest-controlled text: no control sequence but newline, tab and colour/style SGR
// reaches the terminal, the escaping loses nothing, and no guest line can start with "ears:".
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  escapeJsonControls,
  escapeResultText,
  escapeTerminalText,
  PrefixedLines,
  SGR_RESET,
  unescapeTerminalText,
} from "../../src/cli/terminal-text.js";

/** Hostile text: real attack sequences, lone controls, backslashes next to "x", and any code units. */
const hostileText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "\x1b]52;c;aGVsbG8=\x07", // OSC 52: write the clipboard
        "\x1b]0;owned\x1b\\", // OSC 0: set the title, ST-terminated
        "\x1b[2K\x1b[1A", // erase line, cursor up
        "\x1b[8m", // conceal
        "\x1b[31m",
        "\x1b[1;38;5;8m",
        "\x1b[38;2;1;2;3m",
        "\x1b[0m",
        "\x1b[m", // colours and styles
        "\x1b",
        "\x9b31m",
        "\x9d0;t\x9c",
        "\x7f",
        "\r",
        "\b",
        "\x00",
        "\n",
        "\t",
        "\\",
        "\\\\",
        "x",
        "x1b",
        "\\x1b",
        "ears: the session failed",
        "\nears:",
        "\u202e", // right-to-left override
        "\u2066\u2069", // an isolate
        "\u200f\u061c", // marks
        "\u2028",
        "\\u202e",
      ),
      fc.string({ unit: "binary", maxLength: 6 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(""));

/** What may reach the terminal: ESC only as the start of an SGR without parameter 8 in a style position. */
function assertTerminalSafe(output: string, allowLineBreaks = true): void {
  const withoutSgr = output.replace(/\x1b\[[0-9;:]{0,64}m/g, (sgr) => {
    // Conceal (8) hides text; inside 38/48/58 colour forms an 8 is a colour value, so those are skipped here.
    if (!/[345]8/.test(sgr)) expect(sgr.slice(2, -1).split(/[;:]/)).not.toContain("8");
    return "";
  });
  expect(withoutSgr).not.toMatch(allowLineBreaks ? /[\x00-\x08\x0b-\x1f\x7f-\x9f]/ : /[\x00-\x1f\x7f-\x9f]/);
  expect(withoutSgr).not.toMatch(/[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
  assertStylesEndWithTheirLine(output);
}

/** No colour or style set in `output` is still set at a newline or at its end: the next line (ears' own) starts plain. */
function assertStylesEndWithTheirLine(output: string): void {
  let open = false;
  for (const match of output.matchAll(/\x1b\[([0-9;:]{0,64})m|\n/g)) {
    if (match[0] === "\n") expect(open).toBe(false);
    else open = !/^[0;:]*$/.test(match[1]!);
  }
  expect(open).toBe(false);
}

/** `text` without the resets escaping adds after colours (and any the text had): what unescaping must give back. */
const withoutResets = (text: string) => text.replaceAll(SGR_RESET, "");

describe("escapeTerminalText", () => {
  it("lets through no control character but newline and tab, and ESC only as a colour/style SGR", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        assertTerminalSafe(escapeTerminalText(text));
        assertTerminalSafe(escapeTerminalText(text, { singleLine: true }), false);
      }),
      { numRuns: 2000, seed: 0x7e_55 },
    );
  });

  it("is lossless and unambiguous: unescaping gives back exactly the text (the resets added after colours aside)", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (text, singleLine) => {
        expect(withoutResets(unescapeTerminalText(escapeTerminalText(text, { singleLine })))).toBe(withoutResets(text));
      }),
      { numRuns: 2000, seed: 0x7e_56 },
    );
  });

  it("leaves ordinary text, colours and lone backslashes as they are", () => {
    expect(escapeTerminalText("plain text\twith a tab\n")).toBe("plain text\twith a tab\n");
    expect(escapeTerminalText("\x1b[1;31merror\x1b[0m")).toBe("\x1b[1;31merror\x1b[0m");
    expect(escapeTerminalText("C:\\Users\\ada")).toBe("C:\\Users\\ada");
  });

  it("reads an 8 inside a colour form (38/48/58 ;5;n and ;2;r;g;b) as a colour value, and an 8 after one as conceal", () => {
    for (const sgr of ["\x1b[38;5;8m", "\x1b[48;5;8m", "\x1b[58;5;8m", "\x1b[38;2;8;8;8m", "\x1b[1;48;2;8;8;8;4m", "\x1b[38;5;8;48;5;8m"]) {
      expect(escapeTerminalText(`${sgr}x`)).toBe(`${sgr}x${SGR_RESET}`);
    }
    for (const sgr of ["\x1b[38;5;1;8m", "\x1b[38;2;1;2;3;8m", "\x1b[38;8m", "\x1b[;8m"]) {
      expect(escapeTerminalText(`${sgr}x`)).toBe(`\\x1b${sgr.slice(1)}x`);
    }
    expect(escapeTerminalText("")).toBe("");
    expect(new PrefixedLines("> ").format("")).toBe("");
  });

  it("ends a colour left open at the end of its line and of its text, so the next line starts plain", () => {
    // Black on black, never reset: ears' next line (its approval question) would be drawn invisible.
    expect(escapeTerminalText("\x1b[30;40mhidden")).toBe("\x1b[30;40mhidden\x1b[0m");
    expect(escapeTerminalText("\x1b[30;40mone\ntwo\n")).toBe("\x1b[30;40mone\x1b[0m\ntwo\n");
    expect(escapeTerminalText("\x1b[31ma\x1b[mb")).toBe("\x1b[31ma\x1b[mb");
    expect(escapeTerminalText("\x1b[31ma\x1b[0;1mb")).toBe("\x1b[31ma\x1b[0;1mb\x1b[0m");
    expect(escapeTerminalText("\x1b[7mx\ny", { singleLine: true })).toBe("\x1b[7mx\\x0ay\x1b[0m");
  });

  it.each([
    ["OSC 52 clipboard write", "\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"],
    ["a title change", "\x1b]0;owned\x1b\\", "\\x1b]0;owned\\x1b\\\\"],
    ["cursor up and erase", "\x1b[1A\x1b[2K", "\\x1b[1A\\x1b[2K"],
    ["concealed text", "\x1b[8msecret", "\\x1b[8msecret"],
    ["a carriage return", "ok\rears: fake", "ok\\x0dears: fake"],
    ["a C1 CSI", "\x9b2J", "\\x9b2J"],
    ["a backslash before x", "\\x1b", "\\\\x1b"],
    ["a right-to-left override", "abc\u202edef", "abc\\u202edef"],
    ["isolates and marks", "\u2066a\u2069\u200e\u061c", "\\u2066a\\u2069\\u200e\\u061c"],
    ["a backslash before u", "\\u202e", "\\\\u202e"],
  ])("shows %s escaped", (_name, text, shown) => {
    expect(escapeTerminalText(text)).toBe(shown);
  });
});

describe("PrefixedLines", () => {
  it("starts every line with the prefix however the stream is cut, and loses nothing", () => {
    fc.assert(
      fc.property(hostileText, fc.array(fc.nat(), { maxLength: 5 }), (text, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const chunks: string[] = [];
        let from = 0;
        for (const point of [...points, text.length]) {
          chunks.push(text.slice(from, point));
          from = point;
        }
        const lines = new PrefixedLines("[stderr] ");
        const output = chunks.map((chunk) => lines.format(chunk)).join("");
        assertTerminalSafe(output);
        if (text === "") return;
        const shown = output.endsWith("\n") ? output.slice(0, -1).split("\n") : output.split("\n");
        for (const line of shown) expect(line.startsWith("[stderr] ")).toBe(true);
        expect(
          withoutResets(
            unescapeTerminalText(shown.map((line) => line.slice("[stderr] ".length)).join("\n") + (output.endsWith("\n") ? "\n" : "")),
          ),
        ).toBe(withoutResets(text));
      }),
      { numRuns: 1000, seed: 0x7e_57 },
    );
  });
});

describe("escapeResultText", () => {
  it("no line of a result can pass for an ears: note, and the text is still recoverable", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const shown = escapeResultText(text);
        assertTerminalSafe(shown);
        for (const line of shown.split("\n")) expect(line.startsWith("ears:")).toBe(false);
        expect(withoutResets(unescapeTerminalText(shown))).toBe(withoutResets(text));
      }),
      { numRuns: 1000, seed: 0x7e_58 },
    );
  });
});

describe("escapeJsonControls", () => {
  it("JSON text keeps its value and loses every control and bidi character JSON.stringify leaves raw (DEL, C1, U+202E, ...)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), hostileText, (value, text) => {
        const json = JSON.stringify({ value, text }, null, 2);
        const shown = escapeJsonControls(json);
        expect(shown).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        expect(JSON.parse(shown)).toEqual(JSON.parse(json));
      }),
      { numRuns: 500, seed: 0x7e_59 },
    );
  });
});
