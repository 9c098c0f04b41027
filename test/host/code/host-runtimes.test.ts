/**
 * runCode under Bun and Deno hosts (issue 29.4), in the default sandbox. The runner runs under the host's own
 * runtime (process.execPath), which the sandbox shows read-only wherever it is installed: here under /tmp (a
 * project made in the temporary directory, as a user trying the package does), which the sandbox's own private
 * /tmp used to hide ("bwrap: execvp …/bun.exe: No such file or directory").
 */
import { execFile } from "node:child_process";
import { copyFileSync, linkSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { runtimes } from "../../helpers/runtimes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Runs `script` with `command` and returns its stdout's last line as JSON. */
function run(command: string[], script: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(command[0]!, [...command.slice(1), script], { cwd: "/tmp", timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split("\n").at(-1)!));
    });
  });
}

describe.runIf(process.platform === "linux" && bwrapPath !== undefined && runtimes.length > 0)(
  "runCode under Bun and Deno hosts, in the default sandbox",
  () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync("/tmp/ears-host-runtime-");
      const body = "return { sum: 1 + 1, runtime: typeof Bun === 'object' ? 'bun' : typeof Deno === 'object' ? 'deno' : 'node' };";
      writeFileSync(
        join(dir, "host.mjs"),
        [
          `import { runCode } from ${JSON.stringify(join(root, "dist/host/index.js"))};`,
          `const { failure, outcome, sandbox } = await runCode({ code: ${JSON.stringify(body)} });`,
          "console.log(JSON.stringify({ failure: failure?.message ?? null, structured: outcome?.structured ?? null, " +
            "sandbox: sandbox?.mechanism ?? null }));",
        ].join("\n"),
      );
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each(runtimes.map((runtime) => [runtime.name, runtime] as const))(
      "%s installed under /tmp: the runner runs confined, under it",
      async (name, runtime) => {
        // The runtime's binary, placed under /tmp without copying its 100 MB where a hard link can be made.
        const real = realpathSync(runtime.command[0]!);
        const placed = join(mkdtempSync(join(dir, `${name}-`)), real.slice(real.lastIndexOf("/") + 1));
        try {
          linkSync(real, placed);
        } catch {
          copyFileSync(real, placed);
        }
        const result = await run([placed, ...runtime.command.slice(1)], join(dir, "host.mjs"));
        expect(result).toEqual({ failure: null, structured: { sum: 2, runtime: name }, sandbox: "bubblewrap" });
      },
      90_000,
    );
  },
);
