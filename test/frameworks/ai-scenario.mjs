/**
 * The issue's proofs for @posoco/ears/ai as one host program, run against whichever AI SDK the bare `ai`
 * resolves to where this file is loaded from: the AI SDK 6 when run in place (the root's dev dependency),
 * the AI SDK 7 when run through its link in tools/ai7/node_modules with `--preserve-symlinks` (see
 * test/frameworks/ai-sdks.test.ts). The agent loop is that SDK's own `generateText` with its own mock model
 * (`MockLanguageModelV4` in 7, `MockLanguageModelV3` in 6); nothing else differs between the two runs but
 * where each SDK wants the code tool's context (7: `toolsContext.code`, read as `options.context`; 6:
 * `experimental_context`). Each mode prints one JSON line per answer.
 *
 *   loop                                    two tools in parallel in generateText, and streamed in streamText
 *   sessions                                three turns over one session; the host reads the file after
 *   pause <dir> <kind>                      the run pauses for approval; the process then exits
 *   resume <dir> <kind> <id>                waits for "go" on stdin (a barrier), then resumes once
 *   resume-restored <dir> <kind> <id> <token>   puts the token back in the store, then resumes as resume
 *   bound | deadline                        a 10 MB result / an endless loop under the code tool's defaults
 *   tool-approval                           the AI SDK 7's toolApproval statuses on a body's calls
 *
 * `kind` is "file" (fileStore and fileLedger in <dir>) or "redis" (a store and redisLedger on the
 * redis-server listening on the unix socket $EARS_REDIS_SOCKET, node-redis imported from $EARS_REDIS_MODULE).
 * The side effects are lines appended to <dir>/effects.txt.
 */
import { appendFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import * as ai from "ai";
import * as aiTest from "ai/test";
import { z } from "zod";
import { createCodeTool, fileLedger, fileStore, redisLedger } from "@posoco/ears/ai";
import { createSession } from "@posoco/ears/host";

const { generateText, streamText, tool } = ai;
const stepCount = ai.isStepCount ?? ai.stepCountIs;
const MockModel = aiTest.MockLanguageModelV4 ?? aiTest.MockLanguageModelV3;
const sdk = JSON.parse(await readFile(new URL(import.meta.resolve("ai/package.json")), "utf8")).version;
const v7 = Number(sdk.split(".")[0]) >= 7;
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
// The SDK's own warnings (a deprecated part, a setting it ignores), collected instead of printed.
const warnings = [];
globalThis.AI_SDK_LOG_WARNINGS = (options) => warnings.push(...options.warnings);

/**
 * A mock model that answers each turn with one call of the code tool with `bodies[turn]`, then with text;
 * `prompts` gets every prompt it was sent, as JSON.
 */
function scripted(bodies, prompts) {
  let step = 0;
  return new MockModel({
    doGenerate: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      const turn = Math.floor(step / 2);
      const body = step++ % 2 === 0 ? bodies[turn] : undefined;
      if (body === undefined) {
        return {
          content: [{ type: "text", text: `turn ${turn + 1} done` }],
          finishReason: { unified: "stop", raw: undefined },
          usage,
          warnings: [],
        };
      }
      const call = { type: "tool-call", toolCallId: `call-${step}`, toolName: "code", input: JSON.stringify({ code: body }) };
      return { content: [call], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    },
  });
}

/** The code tool's context as each SDK passes it: 7 from `toolsContext.code` (`options.context`), 6 `experimental_context`. */
const contextOption = (context) => (v7 ? { toolsContext: { code: context } } : { experimental_context: context });
const contextOf = (options) => (v7 ? options.context : options.experimental_context);

const outputsOf = (result) => result.steps.flatMap((step) => step.toolResults.map((each) => each.output));

const mode = process.argv[2];

if (mode === "loop") {
  const { convertArrayToReadableStream } = aiTest;
  const body = [
    'const [w, t] = await Promise.all([ears.call("getWeather", { city: "Paris" }), ears.call("getTime", { zone: "UTC" })]);',
    'if (w.status === "failure" || t.status === "failure") return "failed";',
    'console.log("both");',
    "return { celsius: w.structured.celsius, time: t.structured };",
  ].join("\n");
  const seen = [];
  const tools = {
    getWeather: tool({
      inputSchema: z.object({ city: z.string() }),
      outputSchema: z.object({ celsius: z.number() }),
      execute: async ({ city }, options) => (seen.push(options.toolCallId), { celsius: city.length }),
    }),
    getTime: tool({
      inputSchema: z.object({ zone: z.string() }),
      execute: async ({ zone }, options) => (seen.push(options.toolCallId), `noon ${zone}`),
    }),
  };
  const code = createCodeTool({ tools, pool: false, sandbox: false, typecheck: true });
  let step = 0;
  const prompts = [];
  const content = () =>
    step++ === 0
      ? [{ type: "tool-call", toolCallId: "call-1", toolName: "code", input: JSON.stringify({ code: body }) }]
      : [{ type: "text", text: "done" }];
  const finishReason = (parts) => ({ unified: parts[0].type === "text" ? "stop" : "tool-calls", raw: undefined });
  const model = new MockModel({
    doGenerate: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      const parts = content();
      return { content: parts, finishReason: finishReason(parts), usage, warnings: [] };
    },
    doStream: async (options) => {
      prompts.push(JSON.stringify(options.prompt));
      const parts = content();
      const stream =
        parts[0].type === "text"
          ? [
              { type: "text-start", id: "t" },
              { type: "text-delta", id: "t", delta: "done" },
              { type: "text-end", id: "t" },
            ]
          : parts;
      stream.push({ type: "finish", finishReason: finishReason(parts), usage });
      return { stream: convertArrayToReadableStream(stream) };
    },
  });
  const generated = await generateText({ model, tools: { code }, stopWhen: stepCount(3), prompt: "go" });
  step = 0;
  const streamed = streamText({ model, tools: { code }, stopWhen: stepCount(3), prompt: "go" });
  const parts = [];
  for await (const part of streamed.fullStream) {
    if (part.type === "tool-result") parts.push({ preliminary: part.preliminary === true, status: part.output.status });
  }
  print({
    sdk,
    text: generated.text,
    output: generated.steps[0].toolResults[0].output,
    sawResult: prompts[1].includes('"celsius":5'),
    seen,
    streamed: parts,
  });
  process.exit(0);
}

if (mode === "sessions") {
  const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
  const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
  const TURNS = [
    `${FS}fs.writeFileSync("notes.txt", "hello from turn one");\nreturn "written";`,
    `${FS}fs.writeFileSync("upper.txt", fs.readFileSync("notes.txt", "utf8").toUpperCase());\nreturn fs.readdirSync(".").sort();`,
    `${FS}fs.writeFileSync("chart.png", Buffer.from("${PNG}", "base64"));\n` +
      'return { chart: "chart.png", size: fs.statSync("upper.txt").size };',
  ];
  const sessions = new Map();
  const prompts = [];
  const model = scripted(TURNS, prompts);
  // One code tool for every conversation: the session is the one of the call's context.
  const code = createCodeTool({
    tools: {},
    pool: false,
    session: async (options) => {
      const { conversation } = contextOf(options);
      if (!sessions.has(conversation)) sessions.set(conversation, await createSession());
      return sessions.get(conversation);
    },
  });
  const messages = [];
  const outputs = [];
  for (const text of ["write it", "transform it", "chart it"]) {
    messages.push({ role: "user", content: text });
    const result = await generateText({
      model,
      tools: { code },
      stopWhen: stepCount(3),
      messages,
      ...contextOption({ conversation: "c-1" }),
    });
    messages.push(...result.response.messages);
    outputs.push(...outputsOf(result));
  }
  // What the model read after turn 3: the tool result's parts as the SDK put them in the prompt.
  const toolParts = JSON.parse(prompts.at(-1))
    .filter((message) => message.role === "tool")
    .flatMap((message) => message.content)
    .filter((part) => part.type === "tool-result");
  const session = sessions.get("c-1");
  print({
    sdk,
    outputs,
    lastResult: toolParts.at(-1).output,
    taken: (await session.readFile("upper.txt")).toString(),
    sessions: sessions.size,
    warnings,
  });
  await session.close();
  process.exit(0);
}

if (mode === "bound" || mode === "deadline") {
  const body =
    mode === "bound"
      ? 'return "x".repeat(10_000_000);'
      : // Endless and idle: the deadline is what stops it, not a CPU limit, and a shared machine is spared a busy core.
        "for (;;) await new Promise((resolve) => setTimeout(resolve, 1000));";
  const prompts = [];
  const code = createCodeTool({ tools: {}, pool: false });
  const result = await generateText({ model: scripted([body], prompts), tools: { code }, stopWhen: stepCount(3), prompt: "go" });
  print({ sdk, output: outputsOf(result)[0], text: result.text, longestPrompt: Math.max(...prompts.map((prompt) => prompt.length)) });
  process.exit(0);
}

if (mode === "tool-approval") {
  const ran = [];
  const echo = (name, extra = {}) =>
    tool({ inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => (ran.push(name), `${name} ${n}`), ...extra });
  const asked = [];
  const policyCalls = [];
  let approvals;
  const code = createCodeTool({
    tools: {
      approved: echo("approved"),
      denied: echo("denied"),
      asked: echo("asked"),
      unset: echo("unset", { needsApproval: true }),
      overridden: echo("overridden", { needsApproval: true }),
    },
    pool: false,
    toolApproval: {
      approved: "approved",
      denied: { type: "denied", reason: "not on weekends" },
      asked: (input, options) => (
        policyCalls.push({ input, toolCallId: options.toolCallId, toolContext: options.toolContext }),
        "user-approval"
      ),
      unset: () => undefined,
      overridden: "not-applicable",
    },
    approval: { decide: (call) => (asked.push(call.name), { approved: true, by: "ada" }) },
    onReport: (report) => (approvals = report.approvals.map(({ name, decision, by }) => ({ name, decision, by }))),
  });
  const body = [
    'const names = ["approved", "denied", "asked", "unset", "overridden"];',
    "const results = [];",
    "for (const name of names) {",
    "  const r = await ears.call(name, { n: 1 });",
    '  results.push(r.status === "success" ? r.structured : r.code + ": " + r.content);',
    "}",
    "return results;",
  ].join("\n");
  const result = await generateText({
    model: scripted([body], []),
    tools: { code },
    stopWhen: stepCount(3),
    prompt: "go",
    ...contextOption({ tenant: "t-1" }),
  });
  print({ sdk, output: outputsOf(result)[0], ran, asked, policyCalls, approvals });
  process.exit(0);
}

// Durable approvals: the host that pauses, and the hosts that resume, on a shared store and ledger.
const [where, kind, resumeId, token] = process.argv.slice(3);
const effects = `${where}/effects.txt`;
const KEY = "durable-test-key-0123456789abcdef";
let client;
let approval;
if (kind === "redis") {
  const { createClient } = await import(process.env.EARS_REDIS_MODULE);
  client = await createClient({ socket: { path: process.env.EARS_REDIS_SOCKET } }).connect();
  // A store on the same Redis: any { get, set, delete } is one.
  const store = {
    get: async (id) => (await client.get(`store:${id}`)) ?? undefined,
    set: async (id, token) => void (await client.set(`store:${id}`, token)),
    delete: async (id) => void (await client.del(`store:${id}`)),
  };
  approval = { tokenKey: KEY, store, ledger: redisLedger(client) };
} else {
  approval = { tokenKey: KEY, store: fileStore(`${where}/store`), ledger: fileLedger(`${where}/ledger`) };
}
const tools = {
  lookup: tool({
    inputSchema: z.object({ who: z.string() }),
    execute: async ({ who }) => (appendFileSync(effects, `lookup ${process.pid}\n`), `IBAN-${who}`),
  }),
  pay: tool({
    inputSchema: z.object({ iban: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: async ({ amount, iban }) => (appendFileSync(effects, `pay ${amount} ${process.pid}\n`), `paid ${amount} to ${iban}`),
  }),
};
const code = createCodeTool({ tools, pool: false, approval });
const finish = async () => {
  await client?.quit();
  process.exit(0);
};

if (mode === "pause") {
  const BODY =
    'const a = await ears.call("lookup", { who: "ada" });\n' +
    'const p = await ears.call("pay", { iban: a.structured, amount: 120 });\n' +
    'return p.status === "success" ? p.structured : p.code + ": " + p.content;';
  const prompts = [];
  const result = await generateText({ model: scripted([BODY], prompts), tools: { code }, stopWhen: stepCount(3), prompt: "pay ada" });
  const output = outputsOf(result)[0];
  const token = output.resumeId === undefined ? undefined : await approval.store.get(output.resumeId);
  // The model read the resume id and the pending call; the token stayed on the host.
  print({
    sdk,
    output,
    token,
    modelSawResumeId: prompts.at(-1).includes(output.resumeId),
    modelSawToken: prompts.some((p) => p.includes(token)),
  });
  await finish(); // the host goes away while the run waits for a person
}

if (mode === "resume" || mode === "resume-restored") {
  if (mode === "resume-restored") await approval.store.set(resumeId, token);
  print("ready");
  await new Promise((resolve) => process.stdin.once("data", resolve));
  print(await code.resume(resumeId, { decisions: { 2: { approved: true, by: "console" } } }));
  await finish();
}
