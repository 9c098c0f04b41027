/**
 * The issue's proofs for @posoco/ears/ai with both AI SDKs of its peer range, each with its own mock
 * model: three turns over one session, a durable approval across host processes (the host that paused
 * exits; two new ones race to resume, released together by a barrier; the payment once, the lookup
 * replayed; a third process, its store given the token back, refused by the shared ledger), on a fileStore
 * and fileLedger and on a real redis-server, and a 10 MB result and an endless loop under the code tool's
 * defaults. One scenario program, test/frameworks/ai-scenario.mjs, run in place for the AI SDK 6 (the
 * root's dev dependency) and through its link in tools/ai7 with `--preserve-symlinks` for the AI SDK 7
 * (installed from its lock on first use), so the package's entry resolves `ai` to that SDK.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { hasRedisServer, startRedisServer, type RedisServer } from "../helpers/redis.js";
import { installedToolFolder } from "../helpers/tool-folders.js";

const root = resolve(import.meta.dirname, "../..");
const scenario = join(import.meta.dirname, "ai-scenario.mjs");
const redisModule = pathToFileURL(createRequire(import.meta.url).resolve("redis")).href;
// Sessions mount a workspace inside bubblewrap (as test/frameworks/sessions.test.ts).
const canRunSessions = process.platform === "linux" && process.getuid?.() === 0 && bwrapPath !== undefined;
// The AI SDK 7 declares Node >= 22; the package's own floor (22.12.0) is above it, so this holds in every CI run.
const nodeMajor = Number(process.versions.node.split(".")[0]);

/** Links the built package into tools/ai7 as a consumer's node_modules holds it, and the scenario beside it. */
function linkAi7(): string {
  const folder = installedToolFolder("ai7");
  const linked = join(folder, "node_modules/@posoco/ears");
  rmSync(linked, { recursive: true, force: true });
  mkdirSync(linked, { recursive: true });
  symlinkSync(join(root, "package.json"), join(linked, "package.json"));
  symlinkSync(join(root, "dist"), join(linked, "dist"), "dir");
  const script = join(folder, "node_modules/.ears-ai-scenario.mjs");
  rmSync(script, { force: true });
  symlinkSync(scenario, script);
  return script;
}

interface Paused {
  sdk: string;
  output: { status: string; resumeId: string; pending: unknown; content: string };
  token: string;
  modelSawResumeId: boolean;
  modelSawToken: boolean;
}
interface Answer {
  status: string;
  code?: string;
  content: string;
  structured?: unknown;
}

const sdks = [
  { major: 6, skip: undefined as string | undefined, argv: () => [scenario] },
  {
    major: 7,
    skip: nodeMajor < 22 ? `the AI SDK 7 needs Node >= 22 (this is ${process.versions.node})` : undefined,
    argv: (() => {
      let script: string | undefined;
      return () => ["--preserve-symlinks", "--preserve-symlinks-main", (script ??= linkAi7())];
    })(),
  },
];

/** Starts the scenario (argv: the SDK's way to run it) in `mode`; its JSON lines are read with `next()`. */
function startScenario(argv: string[], args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [...argv, ...args], {
    stdio: ["pipe", "pipe", "inherit"],
    cwd: root,
    env: { ...process.env, ...env },
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    child,
    exited,
    next: async <T>() => {
      const line = await lines.next();
      if (line.done === true) throw new Error(`the ${args[0]} scenario ended without an answer (exit ${await exited})`);
      return JSON.parse(line.value as string) as T;
    },
  };
}

/** Runs the scenario in `mode` to its one answer and a clean exit. */
async function onceScenario<T>(argv: string[], args: string[], env?: Record<string, string>): Promise<T> {
  const run = startScenario(argv, args, env);
  const answer = await run.next<T>();
  expect(await run.exited).toBe(0);
  return answer;
}

for (const sdk of sdks) {
  describe.skipIf(sdk.skip !== undefined)(
    `@posoco/ears/ai with the AI SDK ${sdk.major}${sdk.skip ? ` (skipped: ${sdk.skip})` : ""}`,
    () => {
      let argv: string[];
      const dirs: string[] = [];
      beforeAll(() => {
        argv = sdk.argv();
      }, 180_000);
      afterAll(() => {
        for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      });

      const start = (args: string[], env?: Record<string, string>) => startScenario(argv, args, env);
      const once = <T>(args: string[], env?: Record<string, string>) => onceScenario<T>(argv, args, env);

      it("runs a body calling two tools at once in generateText, and streams in streamText, with the entry on this SDK", async () => {
        const result = await once<{
          sdk: string;
          text: string;
          output: unknown;
          sawResult: boolean;
          seen: string[];
          streamed: { preliminary: boolean; status: string }[];
        }>(["loop"]);
        expect(result.sdk.startsWith(`${sdk.major}.`)).toBe(true);
        expect(result.text).toBe("done");
        expect(result.output).toEqual({
          status: "success",
          content: "",
          structured: { celsius: 5, time: "noon UTC" },
          logs: ["[info] both"],
        });
        expect(result.sawResult).toBe(true);
        // Two calls in each loop, each with the code tool call's id.
        expect(result.seen).toEqual(["call-1", "call-1", "call-1", "call-1"]);
        expect(result.streamed.at(-1)).toEqual({ preliminary: false, status: "success" });
        expect(result.streamed.slice(0, -2).every((part) => part.preliminary && part.status === "running")).toBe(true);
      });

      it.runIf(canRunSessions)(
        "three turns in one session: a file written in turn 1, transformed in turn 2, an image named in turn 3; the host takes the file",
        async () => {
          const result = await once<{
            sdk: string;
            outputs: unknown[];
            lastResult: unknown;
            taken: string;
            sessions: number;
            warnings: unknown[];
          }>(["sessions"]);
          expect(result.sdk.startsWith(`${sdk.major}.`)).toBe(true);
          const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
          expect(result.outputs).toEqual([
            { status: "success", content: "", structured: "written" },
            { status: "success", content: "", structured: ["notes.txt", "upper.txt"] },
            {
              status: "success",
              content: "",
              structured: { chart: "chart.png", size: 19 },
              files: [{ path: "chart.png", mediaType: "image/png", data: PNG }],
            },
          ]);
          // What the model read after turn 3: the output as text without the image, and the image as the SDK's own part.
          const imagePart =
            sdk.major >= 7
              ? { type: "file", data: { type: "data", data: PNG }, mediaType: "image/png" }
              : { type: "image-data", data: PNG, mediaType: "image/png" };
          expect(result.lastResult).toEqual({
            type: "content",
            value: [
              { type: "text", text: JSON.stringify({ status: "success", content: "", structured: { chart: "chart.png", size: 19 } }) },
              imagePart,
            ],
          });
          expect(result.taken).toBe("HELLO FROM TURN ONE");
          expect(result.sessions).toBe(1);
          // No part the SDK deprecates: the AI SDK 7 warns about image-data on every result that has one.
          expect(result.warnings).toEqual([]);
        },
      );

      const stores: { kind: "file" | "redis"; skip?: string }[] = [
        { kind: "file" },
        { kind: "redis", ...(hasRedisServer ? {} : { skip: "redis-server is not installed" }) },
      ];
      for (const { kind, skip } of stores) {
        describe.skipIf(skip !== undefined)(
          `durable approval across processes, ${kind} store and ledger${skip ? ` (skipped: ${skip})` : ""}`,
          () => {
            let server: RedisServer | undefined;
            let dir: string;
            beforeAll(async () => {
              dir = mkdtempSync(join(tmpdir(), `ears-ai${sdk.major}-${kind}-`));
              dirs.push(dir);
              if (kind === "redis") server = await startRedisServer();
            });
            afterAll(async () => {
              await server?.stop();
            });

            it("the pausing host exits; two race to resume: payment once, lookup replayed; the ledger refuses another", async () => {
              const env: Record<string, string> =
                server === undefined ? {} : { EARS_REDIS_SOCKET: server.socket, EARS_REDIS_MODULE: redisModule };
              writeFileSync(join(dir, "effects.txt"), "");
              const effects = () => readFileSync(join(dir, "effects.txt"), "utf8").split("\n").filter(Boolean);
              const paused = await once<Paused>(["pause", dir, kind], env);
              expect(paused.sdk.startsWith(`${sdk.major}.`)).toBe(true);
              expect(paused.output).toMatchObject({
                status: "paused",
                resumeId: expect.any(String),
                pending: [{ id: 2, name: "pay", arguments: { iban: "IBAN-ada", amount: 120 } }],
                content: expect.stringMatching(/^The run is paused: 1 call waits for a person's approval/),
              });
              // The model read the resume id, never the token (which the store holds).
              expect(paused.token).toEqual(expect.any(String));
              expect(paused).toMatchObject({ modelSawResumeId: true, modelSawToken: false });
              expect(effects()).toEqual([expect.stringMatching(/^lookup \d+$/)]);

              // Two new host processes, each loaded and holding the resume id, released together.
              const racers = [
                start(["resume", dir, kind, paused.output.resumeId], env),
                start(["resume", dir, kind, paused.output.resumeId], env),
              ];
              for (const racer of racers) expect(await racer.next<string>()).toBe("ready");
              for (const racer of racers) racer.child.stdin.write("go\n");
              const answers = await Promise.all(racers.map((racer) => racer.next<Answer>()));
              for (const racer of racers) expect(await racer.exited).toBe(0);
              expect(answers.filter((answer) => answer.status === "success")).toEqual([
                { status: "success", content: "", structured: "paid 120 to IBAN-ada" },
              ]);
              const refused = answers.filter((answer) => answer.status !== "success");
              expect(refused).toEqual([
                expect.objectContaining({ status: "failure", code: expect.stringMatching(/^(AlreadyResumed|UnknownResumeId)$/) }),
              ]);
              expect(refused[0]!.content).toMatch(/nothing was run/);

              // A third process whose store still holds the token (a replica, a restored backup): the shared ledger refuses it.
              const third = start(["resume-restored", dir, kind, paused.output.resumeId, paused.token], env);
              expect(await third.next<string>()).toBe("ready");
              third.child.stdin.write("go\n");
              const again = await third.next<Answer>();
              expect(again).toMatchObject({
                status: "failure",
                code: "AlreadyResumed",
                content: expect.stringContaining("nothing was run"),
              });
              expect(await third.exited).toBe(0);

              // The lookup ran once, before the pause (replayed on resume); the payment once, in the winner.
              const lines = effects();
              expect(lines.filter((line) => line.startsWith("lookup"))).toHaveLength(1);
              expect(lines.filter((line) => line.startsWith("pay"))).toEqual([expect.stringMatching(/^pay 120 \d+$/)]);
            });
          },
        );
      }

      it("a body's calls follow the AI SDK 7's toolApproval statuses, over each tool's own needsApproval", async () => {
        const result = await once<{
          output: Answer;
          ran: string[];
          asked: string[];
          policyCalls: unknown[];
          approvals: unknown[];
        }>(["tool-approval"]);
        expect(result.output).toEqual({
          status: "success",
          content: "",
          structured: [
            "approved 1",
            'ApprovalDenied: "denied" was not approved: not on weekends; it did not run',
            "asked 1",
            "unset 1",
            "overridden 1",
          ],
        });
        expect(result.ran).toEqual(["approved", "asked", "unset", "overridden"]);
        // Only the call the policy handed on reached decide, with the input its schema accepted and the code tool's context.
        expect(result.asked).toEqual(["asked"]);
        expect(result.policyCalls).toEqual([
          { input: { n: 1 }, toolCallId: "call-1", ...(sdk.major >= 7 ? { toolContext: { tenant: "t-1" } } : {}) },
        ]);
        expect(result.approvals).toEqual([
          { name: "approved", decision: "approved", by: "toolApproval" },
          { name: "denied", decision: "denied", by: "toolApproval" },
          { name: "asked", decision: "approved", by: "ada" },
          { name: "unset", decision: "approved", by: "needsApproval" },
        ]);
      });

      it("a 10 MB result is refused under the default bound, and the model reads a short failure", async () => {
        const result = await once<{ output: Answer; text: string; longestPrompt: number }>(["bound"]);
        expect(result.output).toMatchObject({ status: "failure", code: "ResultTooLarge" });
        expect(result.output.content.length).toBeLessThan(2000);
        expect(result.text).toBe("turn 1 done");
        expect(result.longestPrompt).toBeLessThan(10_000);
      });
    },
  );
}

// The endless loop waits out the 50 s default deadline: both SDKs at once, so the file waits for it once.
describe("an endless loop under the code tool's defaults", () => {
  const running = sdks.filter((sdk) => sdk.skip === undefined);
  const majors = running.map((sdk) => sdk.major).join(" and ");
  it(`is stopped at the default deadline (50 s), and the model reads RunTimeout (the AI SDK ${majors})`, { timeout: 180_000 }, async () => {
    const results = await Promise.all(running.map((sdk) => onceScenario<{ output: Answer; text: string }>(sdk.argv(), ["deadline"])));
    expect(results).toHaveLength(running.length);
    for (const result of results) {
      expect(result.output).toMatchObject({ status: "failure", code: "RunTimeout", content: expect.stringMatching(/50 s/) });
      expect(result.text).toBe("turn 1 done");
    }
  });
});
