// How much of the OpenAI Agents code tool's host CPU per run is ears' own and how much is the SDK's `invoke`s
// the adapter keeps on purpose (issue 43). Three contenders run the code-tool scenario's body on one pool of 2:
//   direct  runCode, its capabilities calling the tools' functions (the scenario's direct run);
//   floor   the least the Agents SDK asks for the same work, without ears' code tool: a function tool (the code
//           tool's strict JSON schema) whose execute is a bare runCode whose capabilities call each tool's own
//           `invoke` (the SDK's work the adapter keeps: three `invoke`s per run, nothing else);
//   agents  codeTool's `invoke`, as the scenario calls it.
// As the scenario: a full GC and a pause before every run, the order rotating. Measured: this thread's CPU time
// over each run (process.threadCpuUsage: not the GC's helper threads nor libuv's, which the load moves most),
// and the difference from the run just before in the same repetition (paired), whose median the load moves
// less than a difference of medians. Pin it to one CPU when the machine is shared:
//   taskset -c 0 node scripts/with-node.mjs 24 bench/tools/agents-floor.mjs [repetitions=150] [pauseMs=250]
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { RunContext, tool } from "@openai/agents";
import { z } from "zod";
import { codeTool } from "@posoco/ears/openai-agents";
import { Outcome } from "@posoco/ears";
import { createRunPool, runCode } from "@posoco/ears/host";
import { gc, rotate } from "../lib/measure.mjs";
import { fmt, summarize } from "../lib/stats.mjs";

const [repetitions = 150, pauseMs = 250] = process.argv.slice(2).map(Number);
const body =
  "const [w, t] = await Promise.all([\n" +
  '  ears.call("get_weather", { city: "Paris" }),\n' +
  '  ears.call("get_time", { zone: "Europe/Paris" }),\n' +
  "]);\n" +
  'if (w.status === "failure" || t.status === "failure") return "a call failed";\n' +
  "return { celsius: (w.structured as { celsius: number }).celsius, time: t.structured };";
const EXPECTED = JSON.stringify({ celsius: 5, time: "12:00 in Europe/Paris" });
const weather = async ({ city }) => ({ city, celsius: city.length });
const time = async ({ zone }) => `12:00 in ${zone}`;
const tools = () => [
  tool({ name: "get_weather", description: "The weather in a city", parameters: z.object({ city: z.string() }), execute: weather }),
  tool({ name: "get_time", description: "The time in a zone", parameters: z.object({ zone: z.string() }), execute: time }),
];
const env = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG ?? "C.UTF-8" };
const details = { toolCall: { type: "function_call", callId: "call-1", name: "run_code", arguments: "" } };
const input = JSON.stringify({ code: body });
const pool = createRunPool({ size: 2, env });

const direct = {
  get_weather: async (args) => Outcome.success("", await weather(args)),
  get_time: async (args) => Outcome.success("", await time(args)),
};
const floorTools = Object.fromEntries(
  tools().map((each) => [
    each.name,
    async (args, ctx) => Outcome.success("", await each.invoke(new RunContext(), JSON.stringify(args), { ...details, signal: ctx.signal })),
  ]),
);
const floor = tool({
  name: "run_code",
  description: "Runs a body",
  parameters: {
    type: "object",
    properties: { code: { type: "string", description: "The body of an async function, in TypeScript" } },
    required: ["code"],
    additionalProperties: false,
  },
  strict: true,
  execute: async ({ code }) => {
    const report = await runCode({ code, pool, capabilities: floorTools });
    if (!report.ok) return report.failure;
    const { status, content, structured } = report.outcome;
    return { status, content, structured };
  },
});
const agents = codeTool({ pool, tools: tools() });

const contenders = [
  {
    name: "direct",
    run: async () => {
      const report = await runCode({ code: body, pool, capabilities: direct });
      return report.outcome?.structured;
    },
  },
  { name: "floor", run: async () => (await floor.invoke(new RunContext(), input, details)).structured },
  { name: "agents", run: async () => (await agents.invoke(new RunContext(), input, details)).structured },
];

async function measured(contender) {
  await new Promise((resolve) => setTimeout(resolve, pauseMs));
  gc();
  const [thread, whole, start] = [process.threadCpuUsage(), process.cpuUsage(), performance.now()];
  const value = await contender.run();
  const ms = performance.now() - start;
  const [threadUsed, wholeUsed] = [process.threadCpuUsage(thread), process.cpuUsage(whole)];
  if (JSON.stringify(value) !== EXPECTED) throw new Error(`agents-floor: ${contender.name} gave ${JSON.stringify(value)}`);
  return { thread: (threadUsed.user + threadUsed.system) / 1000, process: (wholeUsed.user + wholeUsed.system) / 1000, ms };
}

try {
  for (const contender of contenders) for (let i = 0; i < 2; i++) await measured(contender);
  const samples = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let rep = 0; rep < repetitions; rep++) {
    for (const contender of rotate(contenders, rep)) samples[contender.name].push(await measured(contender));
  }
  console.log(
    `${repetitions} runs each, ${pauseMs} ms apart; load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  for (const [key, title] of [
    ["thread", "this thread's CPU, ms"],
    ["process", "the process's CPU (GC and libuv threads too), ms"],
    ["ms", "wall clock, ms"],
  ]) {
    const of = (name) => samples[name].map((sample) => sample[key]);
    console.log(title);
    for (const { name } of contenders) {
      const s = summarize(of(name));
      console.log(`  ${name.padEnd(7)} median ${fmt(s.median)} (quartiles ${fmt(s.q1)} to ${fmt(s.q3)})`);
    }
    for (const [a, b, what] of [
      ["floor", "direct", "the SDK's invokes"],
      ["agents", "floor", "ears' code tool over them"],
      ["agents", "direct", "the whole adapter"],
    ]) {
      const s = summarize(of(a).map((value, i) => value - of(b)[i]));
      console.log(`  ${a} - ${b} (${what}): paired median ${fmt(s.median)} (quartiles ${fmt(s.q1)} to ${fmt(s.q3)})`);
    }
  }
} finally {
  await pool.close();
}
