// The CLI speaks with one voice: every message starts "ears: ", a flag without its value gets the CLI's
// own sentence, -v prints the version, and a --timeout failure names --timeout.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cliInProcess } from "../helpers/cli-in-process.js";
import { ears } from "../helpers/spawn-ears.js";

const version = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

const cli = cliInProcess;

describe("ears CLI messages", () => {
  it("-v, -V and --version print the version", async () => {
    for (const flag of ["-v", "-V", "--version"]) expect(await cli([flag]), flag).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("every usage error is one line with the one prefix 'ears: ' (property, seeded)", async () => {
    // No "--" in the vocabulary, so no guest ever starts: every run ends in help, version or a usage error.
    const word = fc.constantFrom(
      "run",
      "replay",
      "help",
      "-v",
      "--allow",
      "--input",
      "--timeout",
      "--call-timeout",
      "--record",
      "--root",
      "--json",
      "--json=1",
      "--quiet",
      "--capabilities",
      "--bogus",
      "-x",
      "read",
      "0",
      "t.ndjson",
      "@",
      "",
    );
    await fc.assert(
      fc.asyncProperty(fc.array(word, { maxLength: 5 }), async (argv) => {
        const run = await cli(argv);
        if (run.code !== 64) return;
        expect(run.stderr).toMatch(/^ears: [^\n]+\n$/);
        expect(run.stderr).not.toMatch(/^ears: ears|^ears (run|replay):|Option '/);
      }),
      { seed: 64, numRuns: 300 },
    );
  });

  it("a --timeout failure names --timeout in the notes; the --json report keeps the host's words", async () => {
    const never = ["--", process.execPath, "-e", "setInterval(() => {}, 1000)"];
    const run = await ears(["run", "--timeout", "0.3", ...never]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "ears: the session failed: RunTimeout: the guest did not finish within 300 ms (--timeout); the run was stopped",
    );
    expect(run.stderr).not.toContain("limits.runTimeoutMs");
    const json = await ears(["run", "--json", "--quiet", "--timeout", "0.3", ...never]);
    expect(JSON.parse(json.stdout).failure.message).toContain("(limits.runTimeoutMs)");
  });

  // Node 22.18+ and 23.6+ strip types by default (process.features.typescript): a .ts module then loads as it
  // is; an older Node (22.12, the oldest supported) refuses it, and the CLI says what to do.
  const stripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);
  it.runIf(!stripsTypes)(
    "a .ts --capabilities module on a Node that does not strip types gets a usage error that says what to do",
    async () => {
      // A real child: inside vitest, import() would load .ts through vite.
      const run = await ears(["run", "--capabilities", "fixtures/cli/capabilities-add.ts", "--", "node", "guest.mjs"]);
      expect(run.code).toBe(64);
      expect(run.stderr).toMatch(
        /^ears: cannot load --capabilities module fixtures\/cli\/capabilities-add\.ts: Node [\d.]+ does not load TypeScript modules; compile it to \.js or \.mjs first/,
      );
    },
  );

  it.runIf(stripsTypes)("a .ts --capabilities module loads on a Node that strips types, with no flag", async () => {
    const run = await ears([
      "run",
      "--quiet",
      "--json",
      "--allow",
      "add",
      "--capabilities",
      "fixtures/cli/capabilities-add.ts",
      "--",
      process.execPath,
      "fixtures/cli/add-guest-plain.mjs",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).outcome).toEqual({ status: "success", content: "", structured: { sum: 3 } });
  });
});
