/**
 * @posoco/ears/ai with the AI SDK 7 (issue 30: the peer range is `^6 || ^7`). The root's dev dependency is
 * the AI SDK 6, which npm picks on Node 20 (7 declares Node >= 22); the 7 lives in tools/ai7, installed
 * from its lock on first use. The built package is linked into tools/ai7/node_modules and run with
 * `--preserve-symlinks`, so its entry resolves `ai` to the 7 there; the agent loop is the AI SDK 7's own
 * `generateText` and `streamText` with its mock model (`ai/test`).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { installedToolFolder } from "../helpers/tool-folders.js";

const root = resolve(import.meta.dirname, "../..");

const SCRIPT = `
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test";
import { z } from "zod";
import { createCodeTool } from "@posoco/ears/ai";

const entry = createRequire(import.meta.url).resolve("@posoco/ears/package.json").replace(/package\\.json$/, "dist/frameworks/ai.main.js");
const aiOfEntry = JSON.parse(readFileSync(createRequire(entry).resolve("ai/package.json"), "utf8")).version;
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
const body = [
  'const [w, t] = await Promise.all([ears.call("getWeather", { city: "Paris" }), ears.call("getTime", { zone: "UTC" })]);',
  'if (w.status === "failure" || t.status === "failure") return "failed";',
  'console.log("both");',
  "return { celsius: w.structured.celsius, time: t.structured };",
].join("\\n");
const seen = [];
const tools = {
  getWeather: tool({
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ celsius: z.number() }),
    execute: async ({ city }, options) => (seen.push(options.toolCallId), { celsius: city.length }),
  }),
  getTime: tool({
    inputSchema: z.object({ zone: z.string() }),
    execute: async ({ zone }, options) => (seen.push(options.toolCallId), "noon " + zone),
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
const model = new MockLanguageModelV4({
  doGenerate: async (options) => {
    prompts.push(JSON.stringify(options.prompt));
    const parts = content();
    return { content: parts, finishReason: finishReason(parts), usage, warnings: [] };
  },
  doStream: async (options) => {
    prompts.push(JSON.stringify(options.prompt));
    const parts = content();
    const stream = parts[0].type === "text"
      ? [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "done" }, { type: "text-end", id: "t" }]
      : parts;
    stream.push({ type: "finish", finishReason: finishReason(parts), usage });
    return { stream: convertArrayToReadableStream(stream) };
  },
});
const generated = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "go" });
step = 0;
const streamed = streamText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "go" });
const parts = [];
for await (const part of streamed.fullStream) {
  if (part.type === "tool-result") parts.push({ preliminary: part.preliminary === true, status: part.output.status });
}
console.log(JSON.stringify({
  aiOfEntry,
  text: generated.text,
  output: generated.steps[0].toolResults[0].output,
  sawResult: prompts[1].includes('"celsius":5'),
  seen,
  streamed: parts,
}));
`;

describe("createCodeTool with the AI SDK 7", () => {
  let folder: string;
  beforeAll(() => {
    folder = installedToolFolder("ai7");
    // The built package, as a consumer's node_modules holds it: its package.json (exports) and dist.
    const linked = join(folder, "node_modules/@posoco/ears");
    rmSync(linked, { recursive: true, force: true });
    mkdirSync(linked, { recursive: true });
    symlinkSync(join(root, "package.json"), join(linked, "package.json"));
    symlinkSync(join(root, "dist"), join(linked, "dist"), "dir");
    writeFileSync(join(folder, "node_modules/.ears-ai7-check.mjs"), SCRIPT);
  }, 180_000);

  it("runs a body calling two tools in parallel in generateText, and streams in streamText, with the SDK 7 loaded by the entry", () => {
    const output = execFileSync(
      process.execPath,
      ["--preserve-symlinks", "--preserve-symlinks-main", join(folder, "node_modules/.ears-ai7-check.mjs")],
      { cwd: folder, encoding: "utf8" },
    );
    const result = JSON.parse(output);
    expect(result.aiOfEntry).toMatch(/^7\./);
    expect(result.text).toBe("done");
    expect(result.output).toEqual({ status: "success", content: "", structured: { celsius: 5, time: "noon UTC" }, logs: ["[info] both"] });
    expect(result.sawResult).toBe(true);
    // Two calls in each loop, each with the code tool call's id.
    expect(result.seen).toEqual(["call-1", "call-1", "call-1", "call-1"]);
    expect(result.streamed.at(-1)).toEqual({ preliminary: false, status: "success" });
    expect(
      result.streamed.slice(0, -2).every((part: { preliminary: boolean; status: string }) => part.preliminary && part.status === "running"),
    ).toBe(true);
  });
});
