/**
 * Resume once: a ledger claims a resume before anything of it runs, so one token runs its approved calls
 * once, also when two host processes present it at the same moment. The ledgers' claim semantics
 * (property tests against a set), a real redis-server, and two processes released together by a barrier.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import fc from "fast-check";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ApprovalTokenError,
  DEFAULT_REDIS_LEDGER_TTL_MS,
  fileLedger,
  memoryLedger,
  redisLedger,
  requireApproval,
  resumeCode,
  runCode,
  type ApprovalLedger,
  type Capabilities,
} from "../../../src/host/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { hasRedisServer, startRedisServer, type RedisServer } from "../../helpers/redis.js";

failOnUnhandledRejections();

const KEY = "ledger-test-key-".repeat(2) + "0123456789";
const dist = pathToFileURL(join(import.meta.dirname, "../../../dist/host/index.js")).href;
const redisModule = pathToFileURL(createRequire(import.meta.url).resolve("redis")).href;
const dir = mkdtempSync(join(tmpdir(), "ears-ledger-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(dir, `d${++dirs}`);
// node-redis types its IPC options against a newer @types/node than this project's; `path` is what it reads at run time.
const connectRedis = (path: string) => createClient({ socket: { path } as never }).connect();

const BODY =
  'const a = await ears.call("lookup", { who: "ada" });\n' +
  'const p = await ears.call("pay", { iban: a.structured.iban, amount: 120 });\n' +
  "return p.status;";

function handlers() {
  const runs = { lookup: 0, pay: 0 };
  const capabilities: Capabilities = {
    lookup: ({ who }: { who: string }) => (runs.lookup++, { iban: `IBAN-${who}` }),
    pay: requireApproval(({ amount }: { amount: number }) => (runs.pay++, { paid: amount })),
  } as never;
  return { runs, capabilities };
}

async function pausedToken(): Promise<unknown> {
  const { capabilities } = handlers();
  const report = await runCode({ code: BODY, capabilities, approval: { decide: () => ({ pause: true }), tokenKey: KEY } });
  expect(report.paused?.pending).toEqual([expect.objectContaining({ id: 2, name: "pay" })]);
  return report.paused!.token;
}

/**
 * The claim semantics every ledger keeps, as a property: over any sequence of batches of ids (a batch is
 * claimed all at once, with Promise.all), exactly the first claim of each id resolves true.
 */
async function checkClaims(make: () => ApprovalLedger | Promise<ApprovalLedger>, numRuns: number, seed: number): Promise<void> {
  const ids = fc.constantFrom("a", "b", "c", "token:x", "é/..\\\u0000", "x".repeat(300));
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(ids, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 }), async (batches) => {
      const ledger = await make();
      const seen = new Set<string>();
      for (const batch of batches) {
        const answers = await Promise.all(batch.map((id) => ledger.claim(id)));
        const firsts = new Map<string, number>();
        answers.forEach((answer, index) => {
          const id = batch[index]!;
          if (answer) firsts.set(id, (firsts.get(id) ?? 0) + 1);
        });
        for (const id of new Set(batch)) {
          expect(firsts.get(id) ?? 0, `claims of ${JSON.stringify(id)} that won`).toBe(seen.has(id) ? 0 : 1);
          seen.add(id);
        }
      }
    }),
    { numRuns, seed },
  );
}

describe("ledgers: claim semantics", () => {
  it("memoryLedger: the first claim of each id wins, every later one (also at once) is refused", async () => {
    await checkClaims(() => memoryLedger(), 200, 4301);
  });

  it("fileLedger: the same, across ledger objects on one directory (as two processes would have)", async () => {
    await checkClaims(
      () => {
        const where = freshDir();
        let turn = 0;
        const ledgers = [fileLedger(where), fileLedger(where)];
        return { claim: (id) => ledgers[turn++ % 2]!.claim(id) };
      },
      60,
      4302,
    );
  });

  it("fileLedger makes its directory 0700, names claim files by a digest (no id reaches a path), says why it cannot claim", async () => {
    const where = join(freshDir(), "nested");
    const ledger = fileLedger(where);
    expect(await ledger.claim("../../etc/passwd")).toBe(true);
    expect(existsSync(join(where, "../../etc/passwd"))).toBe(false);
    expect(statSync(where).mode & 0o777).toBe(0o700);
    expect(readdirSync(where)).toEqual([expect.stringMatching(/^[0-9a-f]{64}\.claim$/)]);
    // The claim file says what was claimed, when and by which process.
    expect(JSON.parse(readFileSync(join(where, readdirSync(where)[0]!), "utf8"))).toEqual({
      id: "../../etc/passwd",
      claimedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      pid: process.pid,
    });
    // The directory gone after the first claim: the next claim rejects (it cannot say), it does not answer false.
    rmSync(where, { recursive: true, force: true });
    await expect(ledger.claim("b")).rejects.toThrow(/fileLedger: cannot claim in .*ENOENT/);
    // A file where the directory should be: the claim rejects naming the directory, it does not answer false.
    const blocked = join(freshDir());
    writeFileSync(blocked, "not a directory");
    await expect(fileLedger(blocked).claim("a")).rejects.toThrow(/EEXIST|ENOTDIR/);
  });

  it("bad ids and options are refused, naming them", async () => {
    await expect(memoryLedger().claim("")).rejects.toThrow("memoryLedger: a claim's id must be a non-empty string");
    await expect(fileLedger(freshDir()).claim(3 as never)).rejects.toThrow("fileLedger: a claim's id must be a non-empty string");
    await expect(redisLedger({ call: async () => "OK" }).claim("")).rejects.toThrow("redisLedger: a claim's id must be a non-empty string");
    expect(() => fileLedger("")).toThrow(/fileLedger: dir/);
    expect(() => fileLedger(3 as never)).toThrow(/fileLedger: dir/);
    for (const client of [null, "redis://x", 5])
      expect(() => redisLedger(client as never)).toThrow(/client must be a connected Redis client/);
    for (const options of [null, 5, "x"]) {
      expect(() => redisLedger({ call: async () => "OK" }, options as never)).toThrow(
        "redisLedger: options must be an object { prefix?, ttlMs? }",
      );
    }
    // A client that answers nothing for a key already set (undefined, as some clients give nil) is a refused claim.
    expect(await redisLedger({ call: async () => undefined }).claim("a")).toBe(false);
    expect(DEFAULT_REDIS_LEDGER_TTL_MS).toBe(30 * 24 * 60 * 60 * 1000);
    for (const ledger of [null, "ledger", { claim: 1 }]) {
      expect(() => runCode({ code: "return 1", approval: { ledger: ledger as never } })).toThrow(
        "runCode: options.approval.ledger must be a ledger (memoryLedger(), fileLedger(dir), redisLedger(client))",
      );
    }
    expect(() => redisLedger({} as never)).toThrow(/node-redis \(sendCommand\) or ioredis \(call\)/);
    expect(() => redisLedger({ call: async () => "OK" }, { ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => redisLedger({ call: async () => "OK" }, { prefix: 1 as never })).toThrow(/prefix/);
    await expect(redisLedger({ call: async () => "QUEUED" }).claim("a")).rejects.toThrow(/not "OK" or nil/);
  });
});

describe("resumeCode with a ledger", () => {
  it("a second resume of one token is refused (AlreadyResumed) before anything runs; the payment happened once", async () => {
    const token = await pausedToken();
    const ledger = memoryLedger();
    const { runs, capabilities } = handlers();
    const options = { capabilities, approval: { tokenKey: KEY, ledger }, decisions: { 2: { approved: true as const } } };
    const first = await resumeCode(token, options);
    expect(first.outcome?.structured).toBe("success");
    const second = resumeCode(JSON.stringify(token), options);
    await expect(second).rejects.toBeInstanceOf(ApprovalTokenError);
    await expect(second).rejects.toMatchObject({
      problem: "AlreadyResumed",
      message: expect.stringMatching(/already resumed.*nothing was run/),
    });
    expect(runs).toEqual({ lookup: 0, pay: 1 });
  });

  it("two resumes at once: one runs, the other is refused", async () => {
    const token = await pausedToken();
    const ledger = memoryLedger();
    const { runs, capabilities } = handlers();
    const options = { capabilities, approval: { tokenKey: KEY, ledger }, decisions: { 2: { approved: true as const } } };
    const settled = await Promise.allSettled([resumeCode(token, options), resumeCode(token, options)]);
    expect(settled.map((s) => s.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(runs.pay).toBe(1);
  });

  it("a resume refused for its options or decisions claims nothing: a right one afterwards runs", async () => {
    const token = await pausedToken();
    const ledger = memoryLedger();
    const { runs, capabilities } = handlers();
    expect(() => resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger }, decisions: { 9: { approved: true } } })).toThrow(
      /not pending/,
    );
    expect(() => resumeCode(token, { capabilities, approval: { tokenKey: "w".repeat(32), ledger }, decisions: {} })).toThrow(
      ApprovalTokenError,
    );
    const report = await resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger }, decisions: { 2: { approved: true } } });
    expect(report.outcome?.structured).toBe("success");
    expect(runs.pay).toBe(1);
  });

  it("a ledger that fails, or answers something else, refuses the resume and nothing runs", async () => {
    const token = await pausedToken();
    const { runs, capabilities } = handlers();
    const broken: ApprovalLedger = { claim: () => Promise.reject(new Error("connection refused")) };
    await expect(
      resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger: broken }, decisions: { 2: { approved: true } } }),
    ).rejects.toThrow(/could not claim this token: connection refused; nothing was run/);
    const odd = { claim: () => Promise.resolve("yes") } as unknown as ApprovalLedger;
    await expect(
      resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger: odd }, decisions: { 2: { approved: true } } }),
    ).rejects.toThrow(/true or false/);
    expect(() =>
      resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger: {} as never }, decisions: { 2: { approved: true } } }),
    ).toThrow(/options.approval.ledger must be a ledger/);
    expect(() => runCode({ code: "return 1", approval: { ledger: 1 as never } })).toThrow(/options.approval.ledger/);
    expect(runs).toEqual({ lookup: 0, pay: 0 });
  });

  it("two runs that pause alike get tokens claimed apart (each pause's token is its own)", async () => {
    const [a, b] = [await pausedToken(), await pausedToken()];
    const ledger = memoryLedger();
    const { runs, capabilities } = handlers();
    for (const token of [a, b]) {
      await resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger }, decisions: { 2: { approved: true } } });
    }
    expect(runs.pay).toBe(2);
  });
});

/** Two host processes, each resuming `token` with its own ledger object on one shared store, released together. */
async function race(
  token: unknown,
  kind: "file" | "redis",
  where: string,
): Promise<{ answers: Record<string, unknown>[]; effects: string[] }> {
  const tokenFile = join(dir, `token-${++dirs}.json`);
  writeFileSync(tokenFile, JSON.stringify(token));
  const effects = join(dir, `effects-${dirs}.txt`);
  writeFileSync(effects, "");
  const script = join(dir, "race.mjs");
  writeFileSync(
    script,
    `import { appendFileSync, readFileSync } from "node:fs";
import { fileLedger, redisLedger, requireApproval, resumeCode } from ${JSON.stringify(dist)};
const [tokenFile, kind, where, effects, key] = process.argv.slice(2);
let client;
let ledger;
if (kind === "file") ledger = fileLedger(where);
else {
  const { createClient } = await import(${JSON.stringify(redisModule)});
  client = await createClient({ socket: { path: where } }).connect();
  ledger = redisLedger(client);
}
const capabilities = {
  lookup: ({ who }) => { appendFileSync(effects, "lookup " + process.pid + "\\n"); return { iban: "IBAN-" + who }; },
  pay: requireApproval(({ amount }) => { appendFileSync(effects, "pay " + amount + " " + process.pid + "\\n"); return { paid: amount }; }),
};
const token = readFileSync(tokenFile, "utf8");
process.stdout.write("ready\\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
let answer;
try {
  const report = await resumeCode(token, { capabilities, approval: { tokenKey: key, ledger }, decisions: { 2: { approved: true } } });
  answer = { outcome: report.outcome ?? null, failure: report.failure ?? null };
} catch (error) {
  answer = { error: error.name, problem: error.problem, message: error.message };
}
await client?.quit();
process.stdout.write(JSON.stringify(answer) + "\\n");
process.stdin.destroy();
`,
  );
  const children = [0, 1].map(() =>
    spawn(process.execPath, [script, tokenFile, kind, where, effects, KEY], { stdio: ["pipe", "pipe", "inherit"] }),
  );
  const lines = children.map((child) => createInterface({ input: child.stdout })[Symbol.asyncIterator]());
  // The barrier: both processes have loaded everything and hold the token; then both are told to go at once.
  for (const line of lines) expect((await line.next()).value).toBe("ready");
  for (const child of children) child.stdin.write("go\n");
  const answers = await Promise.all(lines.map(async (line) => JSON.parse((await line.next()).value as string) as Record<string, unknown>));
  await Promise.all(children.map((child) => (child.exitCode !== null ? undefined : new Promise((resolve) => child.once("exit", resolve)))));
  return { answers, effects: readFileSync(effects, "utf8").split("\n").filter(Boolean) };
}

function expectOneWinner({ answers, effects }: { answers: Record<string, unknown>[]; effects: string[] }): void {
  const won = answers.filter((answer) => answer.outcome !== undefined);
  const refused = answers.filter((answer) => answer.error !== undefined);
  expect(won).toEqual([{ outcome: expect.objectContaining({ status: "success", structured: "success" }), failure: null }]);
  expect(refused).toEqual([
    { error: "ApprovalTokenError", problem: "AlreadyResumed", message: expect.stringContaining("already resumed") },
  ]);
  // The approved payment ran once, in one process; the lookup before the pause was replayed, never run again.
  expect(effects).toEqual([expect.stringMatching(/^pay 120 \d+$/)]);
}

describe("two host processes racing one token", () => {
  it("on one fileLedger directory: one resumes, the other is refused, the payment happens once", async () => {
    expectOneWinner(await race(await pausedToken(), "file", freshDir()));
  });

  describe.skipIf(!hasRedisServer)("on a real redis-server", () => {
    let server: RedisServer;
    let client: Awaited<ReturnType<typeof connectRedis>>;
    beforeAll(async () => {
      server = await startRedisServer();
      client = await connectRedis(server.socket);
    });
    afterAll(async () => {
      await client?.quit();
      await server?.stop();
    });

    it("redisLedger (node-redis): claim semantics, and each claim is stored with its expiry", async () => {
      let run = 0;
      await checkClaims(() => redisLedger(client, { prefix: `prop${++run}:` }), 40, 4303);
      const ledger = redisLedger(client, { prefix: "ttl:", ttlMs: 60_000 });
      expect(await ledger.claim("t")).toBe(true);
      const ttl = Number(await client.sendCommand(["PTTL", "ttl:t"]));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      // The defaults: the key under "ears:resumed:", kept 30 days, its value saying when and which process claimed.
      expect(await redisLedger(client).claim("default-key")).toBe(true);
      expect(Number(await client.sendCommand(["PTTL", "ears:resumed:default-key"]))).toBeGreaterThan(29 * 24 * 60 * 60 * 1000);
      expect(JSON.parse(String(await client.sendCommand(["GET", "ears:resumed:default-key"])))).toEqual({
        claimedAt: expect.stringMatching(/^\d{4}-/),
        pid: process.pid,
      });
    });

    it("redisLedger through an ioredis-shaped client (call): the same claims", async () => {
      const ioredisLike = { call: (command: string, ...args: string[]) => client.sendCommand([command, ...args]) };
      let run = 0;
      await checkClaims(() => redisLedger(ioredisLike, { prefix: `io${++run}:` }), 20, 4304);
    });

    it("two processes resuming one token on one Redis: one resumes, the other is refused, the payment happens once", async () => {
      expectOneWinner(await race(await pausedToken(), "redis", server.socket));
    });

    it("a Redis that went away refuses the resume (the ledger cannot say), and nothing runs", async () => {
      const gone = await startRedisServer();
      const other = await createClient({ socket: { path: gone.socket, reconnectStrategy: false } as never }).connect();
      other.on("error", () => {});
      await gone.stop();
      const token = await pausedToken();
      const { runs, capabilities } = handlers();
      await expect(
        resumeCode(token, { capabilities, approval: { tokenKey: KEY, ledger: redisLedger(other) }, decisions: { 2: { approved: true } } }),
      ).rejects.toThrow(/could not claim this token/);
      expect(runs).toEqual({ lookup: 0, pay: 0 });
    });
  });
});
