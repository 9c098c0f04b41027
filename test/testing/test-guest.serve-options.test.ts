/**
 * testGuest and replay take what serve takes (issue 22, item 2): a contract checks the program's calls
 * on the guest side and an input schema its input, as in a real run. And what the program prints
 * becomes log frames as in a real stdio run (item 14), scoped to the program: compared here with the
 * same program run as a real child process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapabilities, type Ears } from "../../src/index.js";
import { runGuest } from "../../src/host/index.js";
import { replay } from "../../src/testing/replay.js";
import { testGuest } from "../../src/testing/test-guest.js";

const tools = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const handlers = { add: ({ a, b }: { a: number; b: number }) => ({ sum: a + b }) };

describe("testGuest with serve's options", () => {
  it("checks the program's arguments against the contract before anything is sent (InvalidArguments)", async () => {
    const report = await testGuest(async (ears) => ears.call("add", { a: 1, b: "two" } as never), {
      contract: tools,
      capabilities: handlers as never,
    });
    expect(report.outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
    // Refused on the guest side: no request reached the host.
    expect(report.transcript.map((entry) => entry.frame.type)).toEqual(["hello", "invoke", "result"]);
    expect(report.calls).toEqual([]);
  });

  it("checks a success's structured against the contract before the program sees it", async () => {
    const report = await testGuest(
      async (ears) => {
        const sum = await ears.call("add", { a: 1, b: 2 });
        return sum.status;
      },
      { contract: tools, capabilities: { add: () => ({ status: "success", content: "", structured: { sum: "3" } }) } },
    );
    // The host handler is not contract-checked here (a plain handler), so only the guest can catch it.
    expect(report.outcome?.structured).toBe("failure");
    const unchecked = await testGuest(async (ears) => (await ears.call("add", { a: 1, b: 2 })).status, {
      capabilities: { add: () => ({ status: "success", content: "", structured: { sum: "3" } }) },
    });
    expect(unchecked.outcome?.structured).toBe("success");
  });

  it("gives the program its input through the schema, and ends input that does not match as InvalidInput", async () => {
    const inputSchema = z.object({ n: z.coerce.number() });
    let ran = 0;
    const program = async (_ears: Ears, input: { n: number }) => {
      ran += 1;
      return input.n + 1;
    };
    const good = await testGuest(program, { inputSchema, input: { n: "41" } });
    expect(good.outcome?.structured).toBe(42);
    const bad = await testGuest(program, { inputSchema, input: { n: "x" } });
    expect(bad.outcome).toMatchObject({ status: "failure", code: "InvalidInput" });
    expect(ran).toBe(1);
  });

  it("rejects a contract or schema that serve would refuse, with testGuest's name", async () => {
    await expect(testGuest(async () => 1, { contract: {} as never })).rejects.toThrow(
      new TypeError("testGuest: options.contract must be a contract made by defineCapabilities"),
    );
    await expect(testGuest(async () => 1, { inputSchema: {} as never })).rejects.toThrow(
      /^testGuest: options\.inputSchema must be a Standard Schema/,
    );
  });

  it("replays a recording against a contract-typed program, with the contract's checks", async () => {
    const recorded = await testGuest(async (ears: Ears<typeof tools.specs>) => ears.call("add", { a: 1, b: 2 }), {
      contract: tools,
      capabilities: tools.implement(handlers),
    });
    expect(recorded.outcome?.status).toBe("success");
    const same = await replay(recorded.transcript, { run: async (ears) => ears.call("add", { a: 1, b: 2 }), contract: tools });
    expect(same.ok).toBe(true);
    // The contract refuses the bad call before it is sent: the replay diverges where the request should be.
    const bad = await replay(recorded.transcript, { run: async (ears) => ears.call("add", { a: 1, b: "2" } as never), contract: tools });
    expect(bad.ok).toBe(false);
    expect(bad.divergence).toMatch(
      /made only 0 of the 1 recorded requests and then returned failure InvalidArguments .*do not match the contract/,
    );
  });
});

describe("testGuest captures what the program prints, as a real run does", () => {
  const scratch = mkdtempSync(join(tmpdir(), "ears-test-guest-console-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  // Methods whose text does not depend on a terminal or a clock (a drawn table, group indents, timers do).
  const program = `export async function program(ears, input) {
  console.log("log", { a: 1 }, input.n);
  console.info("info");
  console.dir({ deep: { x: [1, 2] } });
  console.count("hits");
  console.count("hits");
  console.warn("warn %s", "formatted");
  console.error(new Error("shown").message);
  console.debug("debug");
  await ears.log("between", "info");
  process.stdout.write("raw write\\n");
  await new Promise((done) => setTimeout(done, 1));
  console.log("after a timer");
  return input.n;
}
`;
  const programFile = join(scratch, "program.mjs");
  writeFileSync(programFile, program);
  const guestFile = join(scratch, "guest.mjs");
  const dist = pathToFileURL(resolve(import.meta.dirname, "../../dist/index.js")).href;
  writeFileSync(
    guestFile,
    `import { serve, stdio } from ${JSON.stringify(dist)};\nimport { program } from "./program.mjs";\n` +
      "await serve({ wire: stdio(), run: program });\n",
  );

  it("the same logs, levels and order as the program run as a real child process over stdio", async () => {
    const { program: run } = (await import(pathToFileURL(programFile).href)) as { program: (ears: Ears, input: { n: number }) => unknown };
    const inProcess = await testGuest(run as never, { input: { n: 7 } });
    const real = await runGuest({ command: process.execPath, args: [guestFile], input: { n: 7 }, sandbox: false });
    expect(real.outcome?.structured).toBe(7);
    expect(inProcess.outcome?.structured).toBe(7);
    const lines = (logs: { level: string; content: string }[]) => logs.map(({ level, content }) => `${level}: ${content}`);
    expect(lines(inProcess.logs)).toEqual(lines(real.logs));
    expect(lines(inProcess.logs)).toContain("info: log { a: 1 } 7");
  });

  const apart = "leaves alone what is printed outside the program (the test, the handlers, after the result), and keeps programs apart";
  it(apart, () => {
    // A child process, so that its real stdout shows what passed through (the kit's build, as users import it).
    const testing = pathToFileURL(resolve(import.meta.dirname, "../../dist/testing/index.js")).href;
    const script = `const { testGuest } = await import(${JSON.stringify(testing)});
let late = [];
const reports = await Promise.all(["one", "two"].map((name) => testGuest(
  async (ears) => {
    process.stdout.write(name + " before\\n");
    await ears.call("tool");
    console.log(name + " after");
    late.push(() => console.log(name + " after its result"));
    return name;
  },
  { capabilities: { tool: () => { console.log("handler of " + name); return "ok"; } } },
)));
console.log("the test itself");
for (const print of late) print();
process.stderr.write(JSON.stringify(reports.map((report) => report.logs.map((log) => log.level + ": " + log.content))));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout.split("\n").sort()).toEqual([
      "",
      "handler of one",
      "handler of two",
      "one after its result",
      "the test itself",
      "two after its result",
    ]);
    const logs: unknown = JSON.parse(child.stderr);
    expect(logs).toEqual([
      ["info: one before", "info: one after"],
      ["info: two before", "info: two after"],
    ]);
  });
});
