/**
 * Scripted models for docs/frameworks.md's two agents, as the `./model.js` and `./agents-model.js` the
 * examples import ("yours" in the docs): TypeScript sources written beside the examples by
 * test/docs/frameworks.test.ts (in the repository) and test/package/pack.test.ts (in a packed consumer).
 * Each model's first step calls the code tool with a body asking both tools for Paris and Tokyo in
 * parallel; its second step answers with what the code tool returned, so the example prints it.
 */

/** The body both models write: four calls at once, one object back. */
const BODY = [
  "const cities = [['Paris', 'Europe/Paris'], ['Tokyo', 'Asia/Tokyo']] as const;",
  "const answers = await Promise.all(cities.map(async ([city, zone]) => {",
  "  const [w, t] = await Promise.all([ears.call(WEATHER, { city }), ears.call(TIME, { zone })]);",
  "  if (w.status === 'failure' || t.status === 'failure') return `${city}: unknown`;",
  "  const celsius = (w.structured as { celsius: number }).celsius;",
  "  return `${city}: ${celsius} °C at ${String(t.structured).length === 5 ? 'HH:MM' : t.structured}`;",
  "}));",
  "return answers.join('; ');",
].join("\\n");

/** `./model.js` for the AI SDK example: the AI SDK's mock language model, scripted. */
export const AI_MODEL = `import { MockLanguageModelV3 } from "ai/test";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const body = "${BODY}".replaceAll("WEATHER", '"getWeather"').replaceAll("TIME", '"getTime"');
let step = 0;
export const model = new MockLanguageModelV3({
  doGenerate: async (options) => {
    step += 1;
    if (step === 1) {
      const call = { type: "tool-call" as const, toolCallId: "call-1", toolName: "code", input: JSON.stringify({ code: body }) };
      return { content: [call], finishReason: { unified: "tool-calls" as const, raw: undefined }, usage, warnings: [] };
    }
    const results = options.prompt.flatMap((message) => (message.role === "tool" ? message.content : []));
    const text = JSON.stringify(results.map((part) => (part.type === "tool-result" ? part.output : part)));
    return { content: [{ type: "text" as const, text }], finishReason: { unified: "stop" as const, raw: undefined }, usage, warnings: [] };
  },
});
`;

/** `./agents-model.js` for the OpenAI Agents example: a scripted Model. */
export const AGENTS_MODEL = `import { Usage, type Model } from "@openai/agents";

const body = "${BODY}".replaceAll("WEATHER", '"get_weather"').replaceAll("TIME", '"get_time"');
let step = 0;
export const model: Model = {
  async getResponse(request) {
    step += 1;
    if (step === 1) {
      const args = JSON.stringify({ code: body });
      const call = { type: "function_call" as const, callId: "call-1", name: "run_code", arguments: args, status: "completed" as const };
      return { usage: new Usage(), output: [call] };
    }
    const items = typeof request.input === "string" ? [] : request.input;
    const text = JSON.stringify(items.flatMap((item) => (item.type === "function_call_result" ? [item.output] : [])));
    const content = [{ type: "output_text" as const, text }];
    const message = { type: "message" as const, role: "assistant" as const, status: "completed" as const, content };
    return { usage: new Usage(), output: [message] };
  },
  getStreamedResponse() {
    throw new Error("the scripted model does not stream");
  },
};
`;

/** What each example prints with its scripted model: the code tool's output, as the model's answer. */
export const EXPECTED_ANSWER = "Paris: 15 °C at HH:MM; Tokyo: 15 °C at HH:MM";
