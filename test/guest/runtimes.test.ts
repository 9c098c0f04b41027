// Guests under Bun and Deno as real children: their console writes to stdout past process.stdout.write,
// so the runtime must capture it there too (src/capture.ts), or the session breaks with a
// ProtocolViolation. A runtime that is not installed shows as skipped: see test/helpers/runtimes.ts.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runGuest } from "../../src/host/index.js";
import { ears } from "../helpers/spawn-ears.js";
import { runtimes } from "../helpers/runtimes.js";
import { tools } from "../../test-d/sample/contract.js";

const root = new URL("../../", import.meta.url).pathname;

const all = [{ name: "node", command: [process.execPath] }, ...runtimes];

/** The words after `--` in docs/typescript.md's ".ts guest" column for a runtime (e.g. `deno run -A … guest.ts`). */
function guestCommandOf(runtime: "node" | "bun" | "deno"): string[] {
  const table = readFileSync(new URL("docs/typescript.md", `file://${root}`), "utf8");
  const row = table.split("\n").find((line) => line.toLowerCase().startsWith(`| ${runtime} `));
  const cell = /`npx ears run -- ([^`]+)`/.exec(row ?? "")?.[1];
  if (cell === undefined) throw new Error(`docs/typescript.md has no ${runtime} row with \`npx ears run -- …\``);
  return cell.split(" ");
}

for (const name of ["node", "bun", "deno"] as const) {
  const runtime = all.find((candidate) => candidate.name === name);
  const command = runtime?.command ?? [];
  const title =
    name === "node"
      ? "a guest under node (the same test, for reference)"
      : `a guest under ${name} (npm package "${name}", or EARS_${name.toUpperCase()})`;
  describe.skipIf(runtime === undefined)(title, () => {
    it("sends every console method and stdout write as a log frame; the wire stays pure", async () => {
      const report = await runGuest({
        command: command[0]!,
        args: [...command.slice(1), "fixtures/guests/console-all.mjs"],
        cwd: root,
        input: { n: 1 },
      });
      expect(report.failure).toBeUndefined();
      expect(report.outcome).toEqual({ status: "success", content: "", structured: { input: { n: 1 } } });
      const logs = report.logs.map(({ level, content }) => `${level} ${content}`);
      expect(logs.slice(0, 4)).toEqual(["info log { a: 1 }", "info info", "info { deep: { x: 1 } }", "info dirxml"]);
      expect(logs).toContain("info group");
      expect(logs).toContain("info hits: 1");
      expect(logs.filter((line) => /^info t: \d+(\.\d+)?m?s$/.test(line))).toHaveLength(2);
      expect(logs.slice(-4)).toEqual(["warn warn", "error error", "debug debug", "info raw write"]);
    });

    it.skipIf(name === "node")(
      "runs a .ts guest natively: the typed-contract sample's guest.ts, as docs/typescript.md's row says",
      async () => {
        // The command is the docs table's (only the runtime's path and the guest's file differ), so a row that
        // fails for the layout the docs recommend (guest.ts importing "./contract.js") fails here.
        const words = guestCommandOf(name);
        expect(words.at(-1)).toBe("guest.ts");
        const report = await runGuest({
          command: command[0]!,
          args: [...words.slice(1, -1), "test-d/sample/guest.ts"],
          cwd: root,
          input: { path: "README.md" },
          capabilities: tools.implement({ read: async ({ path }) => `contents of ${path}`, add: ({ a, b }) => ({ sum: a + b }) }),
        });
        expect(report.failure).toBeUndefined();
        expect(report.outcome).toEqual({ status: "success", content: "", structured: { length: "contents of README.md".length, sum: 3 } });
      },
    );

    it.skipIf(name === "node")("runs the ears CLI itself, which then loads a .ts --capabilities module", async () => {
      const guest =
        "import('@posoco/ears').then(({ serve, stdio }) => serve({ wire: stdio(), run: (ears) => ears.call('add', { a: 1, b: 2 }) }))";
      const cli = [
        ...command,
        "dist/cli/main.js",
        "run",
        "--quiet",
        "--json",
        "--allow",
        "add",
        "--capabilities",
        "fixtures/cli/capabilities-add.ts",
      ];
      const run = spawnSync(cli[0]!, [...cli.slice(1), "--", process.execPath, "--input-type=module", "-e", guest], {
        cwd: root,
        encoding: "utf8",
      });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).outcome).toEqual({ status: "success", content: "", structured: { sum: 3 } });
    });

    it.skipIf(name === "node")("runs the ears CLI and its guest both under this runtime, sandboxed", () => {
      // Deno's child_process inserts its own flags after any argument equal to its executable's path;
      // bwrap's command line names that path (the bind and the program), so it is spelt apart there.
      const cli = [...command, "dist/cli/main.js", "run", "--quiet", "--json", "--sandbox", "--allow", "add"];
      const guest = ["--", ...command, "fixtures/cli/add-guest-plain.mjs"];
      const run = spawnSync(cli[0]!, [...cli.slice(1), "--capabilities", "fixtures/cli/capabilities-add.ts", ...guest], {
        cwd: root,
        encoding: "utf8",
      });
      expect(run.status, run.stdout + run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as { outcome: unknown; sandbox: { mechanism: string } | null };
      expect(report.outcome).toEqual({ status: "success", content: "", structured: { sum: 3 } });
      expect(report.sandbox?.mechanism).toBe("bubblewrap");
    });

    it("runs the demo under the CLI", async () => {
      const run = await ears(["run", "--quiet", "--allow", "read,list", "--", ...command, "fixtures/guests/demo.mjs"], { cwd: root });
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('"Dependencies, and why"');
    });
  });
}

// Node 20 does not load .ts; tsx (a dev dependency) does, through `node --import tsx`, as docs/typescript.md
// says. Node 22.6+ type stripping cannot be run on this Node 20 machine: the docs say so.
describe("a .ts guest and a .ts --capabilities module on Node 20 with tsx (node --import tsx)", () => {
  it("runs the typed-contract sample's guest.ts under the sandbox", async () => {
    const report = await runGuest({
      command: process.execPath,
      args: ["--import", "tsx", "test-d/sample/guest.ts"],
      cwd: root,
      input: { path: "README.md" },
      capabilities: tools.implement({ read: async ({ path }) => `contents of ${path}`, add: ({ a, b }) => ({ sum: a + b }) }),
    });
    expect(report.failure, report.stderr).toBeUndefined();
    expect(report.outcome).toEqual({ status: "success", content: "", structured: { length: "contents of README.md".length, sum: 3 } });
  });

  it("loads a .ts --capabilities module when the CLI runs with NODE_OPTIONS=--import=tsx, and the guest is .ts too", () => {
    const cli = [
      process.execPath,
      "dist/cli/main.js",
      "run",
      "--quiet",
      "--json",
      "--allow",
      "add",
      "--capabilities",
      "fixtures/cli/capabilities-add.ts",
    ];
    const guest = ["--", process.execPath, "--import", "tsx", "fixtures/cli/add-guest.ts"];
    const env = { ...process.env, NODE_OPTIONS: "--import=tsx" };
    const run = spawnSync(cli[0]!, [...cli.slice(1), ...guest], { cwd: root, encoding: "utf8", env });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).outcome).toEqual({ status: "success", content: "", structured: { sum: 3 } });
  });
});
