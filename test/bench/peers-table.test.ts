// The pure parts of the peers benchmark (bench/lib/peers-table.mjs, issue 33): the probe body that decides each
// row's isolation line, the line itself, the per-call figure and the table. The peers themselves are not loaded
// here (their packages are the benchmark's own, bench/peers); the probe runs in node:vm and in a child Node.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createContext, Script } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BODIES,
  isolationSummary,
  peersRows,
  peersTable,
  perCallMicros,
  probeBody,
  PROBE_ENV,
  quantile,
  type Probe,
} from "../../bench/lib/peers-table.mjs";

const dir = mkdtempSync(join(tmpdir(), "ears-peers-test-"));
const hostFile = join(dir, "host-file.txt");
const token = "probe-token-1";
writeFileSync(hostFile, token);
const server = createServer((socket) => socket.destroy());
let port = 0;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const TOOLS_PRELUDE = "const hostFn = tools.add;\nconst add = async (a, b) => (await tools.add({ a, b })).sum;\n";
const add = ({ a, b }: { a: number; b: number }) => ({ sum: a + b });

async function inVm(code: string): Promise<unknown> {
  const context = createContext({ tools: { add } });
  return new Script(`(async () => {${TOOLS_PRELUDE}${code}\n})()`).runInContext(context);
}

describe("peers benchmark: bodies and probe", () => {
  it("every body gives its expected value", async () => {
    for (const body of Object.values(BODIES)) expect(await inVm(body.code)).toBe(body.expect);
  });

  it("the probe reaches everything from node:vm through a host function, and says so", async () => {
    process.env[PROBE_ENV] = token;
    try {
      const found = (await inVm(probeBody({ hostFile, token, port }))) as Probe;
      expect(found).toEqual({ hostRealm: true, systemFile: true, hostFile: true, env: true, socket: true, spawn: true });
      expect(isolationSummary(found)).toBe(
        "reached the host's realm (a host function's constructor); " +
          "reached /etc/hostname, a host file, the host's env, a loopback socket, a process",
      );
    } finally {
      delete process.env[PROBE_ENV];
    }
  });

  it("the probe reaches nothing in a context whose only function is its own, and nothing of the host's env it was not given", async () => {
    const context = createContext({});
    const code = `const tools = { add: (args) => ({ sum: args.a + args.b }) };\n${TOOLS_PRELUDE}${probeBody({ hostFile, token, port })}`;
    const found = (await new Script(`(async () => {${code}\n})()`).runInContext(context)) as Probe;
    expect(isolationSummary(found)).toBe("reached nothing; not /etc/hostname, a host file, the host's env, a loopback socket, a process");
  });

  it("in a child Node without the variable, the probe finds files, socket and processes but not the env", () => {
    const body = `${TOOLS_PRELUDE}${probeBody({ hostFile, token, port: 1 })}`;
    const tools = "const tools = { add: async (a) => ({ sum: a.a + a.b }) };";
    const script = `${tools}\n(async () => {${body}\n})().then((v) => console.log(JSON.stringify(v)));`;
    const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", env: { PATH: process.env.PATH } });
    const found = JSON.parse(run.stdout) as Probe;
    // Port 1 on loopback has no listener: the socket probe must fail, not pass on any connect attempt.
    expect(found).toEqual({ hostRealm: false, systemFile: true, hostFile: true, env: false, socket: false, spawn: true });
  });

  it("a probe that did not come back is a summary saying why", () => {
    expect(isolationSummary(undefined, "the runner crashed")).toBe("probe failed: the runner crashed");
  });
});

describe("peers benchmark: figures and table", () => {
  it("quantiles interpolate, and none of nothing is NaN", () => {
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBeCloseTo(9.1);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it("per call is the ten-call body's (result - first call) / 10, in µs, median over runs", () => {
    expect(perCallMicros([{ resultMs: 12, firstCallMs: 10 }, { resultMs: 25, firstCallMs: 21 }, { resultMs: 5 }])).toBe(300);
    expect(perCallMicros([{ resultMs: 5 }])).toBeUndefined();
    expect(perCallMicros(undefined)).toBeUndefined();
  });

  it("rows show median / p90, the end where there is one, per call, and a skipped system's reason", () => {
    const runs = (ms: number, end?: number) =>
      Array.from({ length: 10 }, (_, i) => ({ resultMs: ms + i, firstCallMs: ms + i - 1, ...(end !== undefined && { endMs: end + i }) }));
    const rows = peersRows([
      { name: "a", samples: { one: runs(1), ten: runs(10, 20), compute: runs(100) }, isolation: "reached nothing" },
      { name: "b", samples: undefined, skipped: "npm ci failed", isolation: "not probed" },
    ]);
    expect(rows).toEqual([
      {
        name: "a",
        cells: ["5.50 / 9.10", "14.5 / 18.1 (end 24.5 / 28.1)", "105 / 108", "100"],
        isolation: "reached nothing",
      },
      { name: "b", cells: ["not run: npm ci failed"], isolation: "not probed" },
    ]);
    const text = peersTable("Round 1 of 2", [{ name: "a", samples: { one: runs(1) }, isolation: "reached nothing" }]);
    expect(text.split("\n")).toEqual([
      "Round 1 of 2",
      "System | one add call: median / p90 ms | ten add calls: median / p90 ms | small compute: median / p90 ms | µs per call",
      "-------|-------------------------------|--------------------------------|--------------------------------|------------",
      "a      | 5.50 / 9.10                   | - / -                          | - / -                          | -",
      "Isolation, probed:",
      "  a: reached nothing",
    ]);
  });
});
