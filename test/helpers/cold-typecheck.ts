/**
 * The oracle for the warm checker: a body checked the way runCode checked it before issue 20, by
 * `tsc -p` run cold on a temporary directory, its output turned into runCode's message by the same
 * reading as then (plus the hint runCode now adds after the errors). The warm checker must say exactly this for every body.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { clip } from "../../src/protocol/text.js";
import { placeInBody } from "../../src/host/code/compile.js";
import { CHECK_CONFIG } from "../../src/host/code/check-protocol.js";
import { typeErrorHint } from "../../src/host/code/typecheck.js";

const CHECK_PREFIX = "async function __earsBody() {";
const CHECK_SUFFIX = "\n}\nexport {};\n";

/** What runCode said of `body` when it ran `tsc` (the package in `typescript`, a directory) for every check. */
export async function coldTypecheck(typescript: string, body: string, declarations: string): Promise<string | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "ears-cold-typecheck-"));
  try {
    writeFileSync(join(dir, "ears.d.ts"), declarations);
    writeFileSync(join(dir, "code.ts"), `${CHECK_PREFIX}${body}${CHECK_SUFFIX}`);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(CHECK_CONFIG));
    let output: string;
    try {
      await promisify(execFile)(process.execPath, [join(typescript, "bin", "tsc"), "-p", join(dir, "tsconfig.json"), "--pretty", "false"], {
        cwd: dir,
      });
      return undefined;
    } catch (error) {
      const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
      output = `${stdout}${stderr}`;
    }
    const errors = [...output.matchAll(/^code\.ts\((\d+),(\d+)\): error (TS\d+): (.*)((?:\n[ \t]+.*)*)/gm)].map(
      ([, line, column, id, message, details]) => {
        const l = Number(line);
        const explained = [
          message,
          ...details!
            .split("\n")
            .map((part) => part.trim())
            .filter((part) => part !== ""),
        ].join(" ");
        return `${placeInBody(body, l, Number(column) - 1 - (l === 1 ? CHECK_PREFIX.length : 0))}: ${clip(explained, 600)} (${id})`;
      },
    );
    if (errors.length === 0) return `typecheck: tsc failed: ${output.trim().slice(0, 1000)}`;
    const more = errors.length > 10 ? `; and ${errors.length - 10} more` : "";
    // The hint after the errors (issue 29 item 13) is new since then; the oracle adds it by the same rule.
    return `type errors: ${errors.slice(0, 10).join("; ")}${more}${typeErrorHint(errors)}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
