import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { cliInProcess } from "../helpers/cli-in-process.js";
import { parseNameList, parseSeconds, subcommand, UsageError } from "../../src/cli/usage.js";

/** Runs the CLI in this process with captured output (only for paths that stop before starting a guest). */
const cli = (...argv: string[]) => cliInProcess(argv);

describe("usage errors exit 64 with a message that says what to do", () => {
  it.each([
    [[], "ears: no command; use ears run, ears exec, ears replay or ears timeline (see ears --help)"],
    [
      ["start"],
      'ears: unknown command "start"; the commands are run, exec, replay, timeline, doctor, declarations, mcp and runner (see ears --help)',
    ],
    [
      ["--allow", "read"],
      "ears: unknown option --allow; options go after the command, e.g. ears run --allow read -- node guest.mjs (see ears --help)",
    ],
    [["run", "--tmeout", "3", "--", "node"], "ears: unknown option --tmeout (did you mean --timeout?); see ears run --help"],
    [["run", "--colour", "--", "node"], "ears: unknown option --colour; see ears run --help"],
    [["run", "--allow"], "ears: --allow needs a value, e.g. --allow read,list; see ears run --help"],
    [["run", "--timeout"], "ears: --timeout needs a value, e.g. --timeout 30; see ears run --help"],
    [["replay", "t.ndjson", "--record"], "ears: --record needs a value, e.g. --record run.ndjson; see ears replay --help"],
    [
      ["run", "--allow", "--json", "--", "node"],
      "ears: --allow needs a value, e.g. --allow read,list, but it is followed by the option --json; " +
        "write --allow=VALUE for a value that starts with a dash; see ears run --help",
    ],
    [["run", "--json=yes", "--", "node"], "ears: --json is a switch and takes no value; see ears run --help"],
    [["run", "--timeout", "0", "--", "node"], 'ears: --timeout takes a positive number of seconds (e.g. --timeout 30), got "0"'],
    [
      ["run", "--call-timeout=-1", "--", "node"],
      'ears: --call-timeout takes a positive number of seconds (e.g. --call-timeout 30), got "-1"',
    ],
    [["run", "--input", "", "--", "node"], /^ears: --input is not valid JSON/],
    [["run", "--input", "@", "--", "node"], "ears: --input @ needs a file name, e.g. --input @input.json"],
    [["replay", "--", "node"], "ears: no transcript; e.g. ears replay run.ndjson -- node guest.mjs (see ears replay --help)"],
    [
      ["replay", "a.ndjson", "b", "--", "node"],
      'ears: unexpected "b" before --; write the guest command after --, e.g. ears replay -- node guest.mjs',
    ],
    [["replay", "a.ndjson"], "ears: no guest command; write it after --, e.g. ears replay -- node guest.mjs (see ears replay --help)"],
    [["replay", "--allow", "read", "t.ndjson", "--", "node"], "ears: unknown option --allow; see ears replay --help"],
  ])("%j", async (argv, message) => {
    const run = await cli(...argv);
    expect(run.code).toBe(64);
    expect(run.stdout).toBe("");
    if (typeof message === "string") expect(run.stderr).toBe(`${message}\n`);
    else expect(run.stderr).toMatch(message);
  });

  it("never parses the guest's own arguments after --", async () => {
    // --help after -- belongs to the guest: this is a usage error about the missing root, not help.
    const run = await cli("run", "--root", "/nonexistent-root", "--", "node", "guest.mjs", "--help");
    expect(run.code).toBe(64);
    expect(run.stderr).toMatch(/^ears: --root: the root \/nonexistent-root cannot be used/);
  });
});

describe("option values", () => {
  it("--allow lists are split, trimmed and deduplicated", () => {
    expect(parseNameList(["read, list", "read", ",search,"])).toEqual(["read", "list", "search"]);
    expect(parseNameList(undefined)).toEqual([]);
  });

  it("seconds become milliseconds; anything but a positive number is refused", () => {
    expect(parseSeconds("timeout", "1.5")).toBe(1500);
    expect(parseSeconds("timeout", "30")).toBe(30_000);
    expect(parseSeconds("timeout", ".25")).toBe(250);
    expect(parseSeconds("timeout", undefined)).toBeUndefined();
    for (const bad of ["", "abc", "1s", "-2", "0", "1e999", "Infinity", "0x10"]) {
      expect(() => parseSeconds("timeout", bad)).toThrow(UsageError);
    }
  });
});

describe("subcommand", () => {
  const OPTIONS = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;
  const seen: { json?: boolean; command: string[] }[] = [];
  const command = subcommand("try", OPTIONS, "try: help text\n", async ({ values, command }) => {
    seen.push({ json: values.json, command });
    return 3;
  });
  const io = () => {
    const stdout = new PassThrough();
    let out = "";
    stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    return { io: { stdout, stderr: new PassThrough(), cwd: process.cwd() }, printed: () => out };
  };

  it("answers --help or -h with the help text and exit status 0, without running the command", async () => {
    for (const flag of ["--help", "-h"]) {
      const { io: streams, printed } = io();
      expect(await command(["--json", flag, "--", "node"], streams)).toBe(0);
      expect(printed()).toBe("try: help text\n");
    }
    expect(seen).toEqual([]);
  });

  it("runs the command with the parsed line otherwise; --help after -- is the guest's", async () => {
    const { io: streams, printed } = io();
    expect(await command(["--json", "--", "node", "--help"], streams)).toBe(3);
    expect(seen).toEqual([{ json: true, command: ["node", "--help"] }]);
    expect(printed()).toBe("");
  });

  it("refuses an unknown option before it looks at --help", async () => {
    await expect(command(["--nope", "--help"], io().io)).rejects.toThrow("unknown option --nope; see ears try --help");
  });
});
