/**
 * Every code tool's safe defaults and its one description: the AI SDK's and the Agents SDK's code tools
 * stop a body at 50 s and refuse a result over 1 MiB unless told otherwise, escape control characters in
 * every string a model reads, and describe themselves with the same text as ears mcp's run_code,
 * short enough to repeat in every request.
 */
import { tool as agentsTool, RunContext } from "@openai/agents";
import { tool, type ToolExecutionOptions } from "ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runCodeDescription } from "../../src/code-tool/mcp-server.js";
import { escapeControls, escapeJson } from "../../src/code-tool/output.js";
import { bodyText, CODE_TOOL_MAX_RESULT_BYTES, CODE_TOOL_RUN_TIMEOUT_MS, toolDeclarations } from "../../src/code-tool/text.js";
import type { CodeToolOutput } from "../../src/code-tool/core.js";
import { createCodeTool } from "../../src/frameworks/ai.js";
import { codeTool } from "../../src/frameworks/openai-agents.js";
import { defineCapabilities } from "../../src/contract/contract.js";

/** The two small tools the issue measured (3,592 characters of description before). */
const aiTools = {
  getWeather: tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ city: z.string(), celsius: z.number() }),
    execute: async ({ city }) => ({ city, celsius: 21 }),
  }),
  getTime: tool({
    description: "The time in a zone",
    inputSchema: z.object({ zone: z.string() }),
    execute: async ({ zone }) => `12:00 in ${zone}`,
  }),
};
const agentsTools = [
  agentsTool({
    name: "get_weather",
    description: "The weather in a city",
    parameters: z.object({ city: z.string() }),
    execute: async () => 21,
  }),
  agentsTool({
    name: "get_time",
    description: "The time in a zone",
    parameters: z.object({ zone: z.string() }),
    execute: async () => "12:00",
  }),
];

/** Runs a body through the AI SDK code tool's execute (a generator: its last value is the result). */
async function aiRun(
  code: string,
  options: Parameters<typeof createCodeTool>[0] = { tools: aiTools, pool: false },
): Promise<CodeToolOutput> {
  const codeTool = createCodeTool(options);
  let last: CodeToolOutput | undefined;
  const run = codeTool.execute!({ code }, { toolCallId: "c1", messages: [] } as ToolExecutionOptions) as AsyncIterable<CodeToolOutput>;
  for await (const value of run) last = value;
  return last!;
}

async function agentsRun(code: string): Promise<CodeToolOutput> {
  const tool = codeTool({ tools: agentsTools, pool: false });
  return (await tool.invoke(new RunContext(), JSON.stringify({ code }))) as CodeToolOutput;
}

describe("the one description", () => {
  it("for the same two tools, at most 60 % of the 3,592 characters measured before, in both adapters", () => {
    const ai = createCodeTool({ tools: aiTools, pool: false }).description!;
    const agents = codeTool({ tools: agentsTools, pool: false }).description;
    expect(ai.length).toBeLessThanOrEqual(0.6 * 3592);
    expect(agents.length).toBeLessThanOrEqual(0.6 * 3592);
    // The tools are declared, with their docs; the prelude every contract repeats is not.
    expect(ai).toContain("/** The weather in a city */\n  getWeather: { args: {\n    city: string;\n  }; result: TypedSuccess<{");
    expect(agents).toContain("get_time: { args: {\n    zone: string;\n  }; result: UntypedResult };");
    expect(ai).not.toContain("interface CallOptions");
  });

  it("starts with the one paragraph on writing a body in all three adapters, which says how a body reaches files", () => {
    const ai = createCodeTool({ tools: aiTools, pool: false }).description!;
    const agents = codeTool({ tools: agentsTools, pool: false }).description;
    const contract = defineCapabilities({ echo: { description: "Echo", arguments: z.object({ text: z.string() }) } });
    const mcp = runCodeDescription(contract.declarations(), false, { runTimeoutMs: CODE_TOOL_RUN_TIMEOUT_MS });
    expect(ai.startsWith(bodyText(false))).toBe(true);
    expect(agents.startsWith(bodyText(false))).toBe(true);
    expect(mcp.startsWith(bodyText(true))).toBe(true);
    expect(bodyText(false)).toContain('process.getBuiltinModule("node:fs")');
    expect(mcp).toContain("  echo: { args: {\n    text: string;\n  }; result: UntypedResult };");
  });

  it("names the defaults (50 s, 1 MiB) unless the limits say otherwise", () => {
    expect(CODE_TOOL_RUN_TIMEOUT_MS).toBe(50_000);
    expect(CODE_TOOL_MAX_RESULT_BYTES).toBe(1024 * 1024);
    const described = (limits?: { runTimeoutMs?: number; maxResultBytes?: number }) =>
      createCodeTool({ tools: aiTools, pool: false, ...(limits && { limits }) }).description!;
    expect(described()).toContain("Each run has 50 s of run time, 1 GiB of memory, a result of at most 1 MiB as JSON");
    expect(codeTool({ tools: agentsTools, pool: false }).description).toContain("50 s of run time");
    expect(described({ runTimeoutMs: 5000, maxResultBytes: 4096 })).toContain(
      "Each run has 5 s of run time, 1 GiB of memory, a result of at most 4 KiB",
    );
    expect(() => createCodeTool({ tools: aiTools, limits: 5 as never })).toThrow(/options.limits must be an object/);
  });

  it("keeps the whole declarations when they are not of the expected shape", () => {
    expect(toolDeclarations("interface X {}\n")).toBe("interface X {}\n");
  });
});

describe("safe defaults", () => {
  it("a 10 MB result is refused under the default bound (AI SDK and Agents SDK), saying how large it was", async () => {
    const body = 'return "x".repeat(10_000_000);';
    for (const output of [await aiRun(body), await agentsRun(body)]) {
      expect(output).toMatchObject({ status: "failure", code: "ResultTooLarge" });
      expect(output.content.length).toBeLessThan(2000);
    }
  });

  it("an endless loop is stopped at the default deadline (RunTimeout)", { timeout: 120_000 }, async () => {
    // Endless, and idle: the deadline is what stops it, not a CPU limit, and the shared machine is spared 50 s of a busy core.
    const output = await aiRun("for (;;) await new Promise((resolve) => setTimeout(resolve, 1000));");
    expect(output).toMatchObject({ status: "failure", code: "RunTimeout" });
    expect(output.content).toMatch(/50 s/);
  });

  it("control characters are escaped in every string of the output: content, structured (keys too), code and logs", async () => {
    const body =
      'console.log("log \\u001b[2J\\u0007");\n' +
      'return Outcome.failure("Bad\\u009b", "red \\u001b[31m\\u202e", { "k\\u001b": ["\\u2066x", 1, null, { n: "\\u0000" }] });';
    for (const output of [await aiRun(body), await agentsRun(body)]) {
      expect(output).toEqual({
        status: "failure",
        code: "Bad\\u009b",
        content: "red \\u001b[31m\\u202e",
        structured: { "k\\u001b": ["\\u2066x", 1, null, { n: "\\u0000" }] },
        logs: ["[info] log \\u001b[2J\\u0007"],
      });
    }
  });

  it("escaping: no control character is left, text without one is unchanged, each is written as its code", () => {
    const controls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        const escaped = escapeControls(text);
        expect(controls.test(escaped)).toBe(false);
        if (!controls.test(text)) expect(escaped).toBe(text);
        expect(escaped.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))).toBe(
          text.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        );
      }),
      { seed: 4305, numRuns: 300 },
    );
    expect(escapeControls("a\tb\nc")).toBe("a\tb\nc");
    expect(escapeJson({ "\u0007": ["\u001b", 2, true] })).toEqual({ "\\u0007": ["\\u001b", 2, true] });
  });
});
