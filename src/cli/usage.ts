/**
 * Command-line parsing for `ears`: node:util parseArgs in strict mode, the guest command after `--`,
 * `--help`, and usage errors that say what was wrong and where to look (exit status 64).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { describeError } from "../protocol/errors.js";
import { jsonProblem, type Json } from "../protocol/json.js";
import { byteSize } from "../protocol/text.js";
import { ExitStatus, type CliIo } from "./report-output.js";

/** A mistake in how `ears` was called. Printed as `ears: <message>` with exit status 64. */
export class UsageError extends Error {
  override name = "UsageError";
}

type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

/** What {@link parseCommandLine} found. */
export interface CommandLine<Values> {
  values: Values;
  /** Words before `--` that are not options (e.g. the transcript path of `ears replay`). */
  positionals: string[];
  /** The guest command and its arguments: everything after the first `--`, untouched. */
  command: string[];
  /** Whether a `--` was present at all. */
  sawSeparator: boolean;
}

/** The option values parseArgs finds for `Spec`. */
export type OptionValues<Spec extends OptionSpec> = ReturnType<typeof parseArgs<StrictConfig<Spec>>>["values"];

type StrictConfig<Spec extends OptionSpec> = { options: Spec; allowPositionals: true; strict: true };

/**
 * An `ears` subcommand, as `(argv, io) => exit status`: parses `argv` with {@link parseCommandLine} and
 * answers `--help` (or `-h`) before `--` with `help` on stdout, so `run` sees only a command to carry out.
 * Throws {@link UsageError}.
 */
export function subcommand<const Spec extends OptionSpec & { help: { type: "boolean" } }>(
  command: string,
  options: Spec,
  help: string,
  run: (line: CommandLine<OptionValues<Spec>>, io: CliIo) => Promise<number>,
): Subcommand {
  const carryOut = async (argv: readonly string[], io: CliIo) => {
    const line = parseCommandLine(command, argv, options);
    if ((line.values as { help?: boolean }).help) {
      io.stdout.write(help);
      return ExitStatus.Success;
    }
    return run(line, io);
  };
  // The option table and the help travel with the command, so a test can hold one against the other.
  return Object.assign(carryOut, { command, options: options as OptionSpec, help });
}

/** A subcommand: `(argv, io) => exit status`, with its name, the options its parser takes and its help. */
export type Subcommand = ((argv: readonly string[], io: CliIo) => Promise<number>) & {
  readonly command: string;
  readonly options: OptionSpec;
  readonly help: string;
};

/**
 * Parses `argv` (without the subcommand) for `command`. Everything after the first `--` belongs to the
 * guest and is never parsed as an option. Throws {@link UsageError} for unknown options (with the
 * closest known one as a hint), missing values, and values given to flags.
 */
export function parseCommandLine<const Spec extends OptionSpec>(
  command: string,
  argv: readonly string[],
  options: Spec,
): CommandLine<OptionValues<Spec>> {
  const separator = argv.indexOf("--");
  const ours = separator < 0 ? argv : argv.slice(0, separator);
  let parsed;
  try {
    parsed = parseArgs({ args: [...ours], options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(explainParseError(command, error, options, ours));
  }
  return {
    values: parsed.values as never,
    positionals: parsed.positionals,
    command: separator < 0 ? [] : argv.slice(separator + 1),
    sawSeparator: separator >= 0,
  };
}

/** An example value for each option that takes one, for the message about a missing value. */
const VALUE_EXAMPLES: Record<string, string> = {
  allow: "read,list",
  approve: "send_email",
  input: `'{"path":"README.md"}'`,
  capabilities: "./caps.mjs",
  root: ".",
  record: "run.ndjson",
  timeout: "30",
  "call-timeout": "10",
  code: `'return 1;'`,
  "code-file": "body.ts",
  memory: "512M",
  processes: "64",
  "cpu-time": "10",
  "tmp-size": "64M",
};

// Messages carry no prefix: main() prints every usage error as "ears: <message>".
function explainParseError(command: string, error: unknown, options: OptionSpec, argv: readonly string[]): string {
  const code = (error as { code?: string }).code;
  const message = (error as Error).message ?? "";
  const help = `see ears ${command} --help`;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const given = /'([^']+)'/.exec(message)?.[1] ?? argv.find((a) => a.startsWith("-")) ?? "";
    const name = given.replace(/^-+/, "").split("=")[0]!;
    const hint = closest(name, Object.keys(options));
    return `unknown option ${given}${hint === undefined ? "" : ` (did you mean --${hint}?)`}; ${help}`;
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    // parseArgs words these "Option '--allow <value>' argument missing" and "... argument is ambiguous".
    const flag = /'(-{1,2}[\w-]+)/.exec(message)?.[1];
    const name = flag?.replace(/^-+/, "");
    if (flag !== undefined && name !== undefined && options[name]?.type === "string") {
      const example = VALUE_EXAMPLES[name] === undefined ? "" : `, e.g. ${flag} ${VALUE_EXAMPLES[name]}`;
      const next = argv[argv.indexOf(flag) + 1];
      if (/ambiguous/.test(message) && next !== undefined) {
        return (
          `${flag} needs a value${example}, but it is followed by the option ${next}; ` +
          `write ${flag}=VALUE for a value that starts with a dash; ${help}`
        );
      }
      return `${flag} needs a value${example}; ${help}`;
    }
    if (flag !== undefined && name !== undefined && options[name]?.type === "boolean") {
      return `${flag} is a switch and takes no value; ${help}`;
    }
    return `${message.split("\n")[0]!.replace(/\.$/, "")}; ${help}`;
  }
  return `${describeError(error)}; ${help}`;
}

/** The known name nearest to `name` by edit distance, when it is near enough to be a likely typo. */
function closest(name: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(name.length / 3)) || (best !== undefined && best.startsWith(name) && name.length >= 2)
    ? best
    : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** `--allow a,b --allow c` -> ["a", "b", "c"]: trimmed, empty items dropped, duplicates removed. */
export function parseNameList(values: readonly string[] | undefined): string[] {
  const names = (values ?? [])
    .flatMap((v) => v.split(","))
    .map((n) => n.trim())
    .filter((n) => n !== "");
  return [...new Set(names)];
}

/** `--timeout 1.5` -> 1500 (ms). Throws {@link UsageError} for anything but a positive, finite number of seconds. */
export function parseSeconds(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const seconds = /^\s*\d*\.?\d+(e[+-]?\d+)?\s*$/i.test(text) ? Number(text) : NaN;
  if (!(Number.isFinite(seconds) && seconds > 0)) {
    throw new UsageError(`--${option} takes a positive number of seconds (e.g. --${option} 30), got ${JSON.stringify(text)}`);
  }
  return Math.max(1, Math.round(seconds * 1000));
}

const SIZE_UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/**
 * The least value of each size option: below it a run could not even start (Node needs tens of MiB), so
 * `--memory 10` is a mistake (10 bytes, meant as 10M or 10G), refused rather than a run that dies at once.
 */
export const SIZE_MINIMUMS: Readonly<Record<string, number>> = {
  memory: 16 * 1024 ** 2,
  "tmp-size": 64 * 1024,
  "max-result": 1024,
  "workspace-size": 1024 ** 2,
};

/**
 * `--memory 512M` -> 536870912: a whole number of bytes, or a number with K, M or G (powers of 1024; a
 * trailing "iB" or "B" is accepted). Throws {@link UsageError} for anything else, or a size under the
 * option's {@link SIZE_MINIMUMS} entry (1 byte for others), naming the accepted forms.
 */
export function parseSize(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^\s*(\d*\.?\d+)\s*([kmg]?)(?:i?b)?\s*$/i.exec(text);
  const bytes = match === null ? NaN : Math.floor(Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!);
  const forms = `a size in bytes, or with K, M or G (e.g. --${option} 512M)`;
  if (!(Number.isSafeInteger(bytes) && bytes > 0)) {
    throw new UsageError(`--${option} takes ${forms}, got ${JSON.stringify(text)}`);
  }
  const least = SIZE_MINIMUMS[option] ?? 1;
  if (bytes < least) {
    throw new UsageError(
      `--${option} ${text.trim()} is ${byteSize(bytes)}, under the least of ${byteSize(least)}; ` +
        `it takes ${forms} of at least ${byteSize(least)}`,
    );
  }
  return bytes;
}

/** `--processes 64` -> 64. Throws {@link UsageError} for anything but a positive whole number. */
export function parseCount(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const count = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!(Number.isSafeInteger(count) && count > 0)) {
    throw new UsageError(`--${option} takes a positive whole number (e.g. --${option} 64), got ${JSON.stringify(text)}`);
  }
  return count;
}

/**
 * `--input`: JSON text, or `@path` to read the JSON from a file (relative to `cwd`). Throws
 * {@link UsageError} for unreadable files, text that is not JSON, and numbers JSON cannot keep (1e999).
 */
export function parseInput(text: string | undefined, cwd: string): Json {
  if (text === undefined) return null;
  let source = "--input";
  let json = text;
  if (text.startsWith("@")) {
    const path = text.slice(1);
    if (path === "") throw new UsageError("--input @ needs a file name, e.g. --input @input.json");
    source = `--input file ${path}`;
    try {
      // Editors on Windows save a byte order mark, which JSON.parse rejects; it is not part of the JSON.
      json = readFileSync(resolve(cwd, path), "utf8").replace(/^\uFEFF/, "");
    } catch (error) {
      throw new UsageError(`cannot read ${source}: ${describeError(error)}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new UsageError(
      `${source} is not valid JSON (${describeError(error)}); ` +
        `pass JSON text such as --input '{"n":1}' (quote it for the shell), or --input @file.json`,
    );
  }
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new UsageError(`${source} cannot be sent unchanged: ${problem.replace(/^\$/, "input")}`);
  return value as Json;
}
