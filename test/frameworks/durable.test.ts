/**
 * Durable approvals in the framework adapters: a call that needs approval pauses the run, the token stays
 * on the host (in the store), the model reads { status: "paused", resumeId, pending }, and the app resumes
 * with code.resume(resumeId, { decisions }), once, in one process. Across processes (the host that paused
 * exits, two new ones race to resume on a shared store and ledger) with the AI SDK 6 and 7:
 * test/frameworks/ai-sdks.test.ts.
 */
import { Agent, run, tool as agentsTool, Usage, type Model, type ModelResponse } from "@openai/agents";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createCodeTool, memoryLedger, memoryStore, type CodeToolOutput } from "../../src/frameworks/ai.js";
import { codeTool } from "../../src/frameworks/openai-agents.js";

const KEY = "durable-test-key-0123456789abcdef";
const BODY =
  'const a = await ears.call("lookup", { who: "ada" });\n' +
  'const p = await ears.call("pay", { iban: a.structured, amount: 120 });\n' +
  'return p.status === "success" ? p.structured : p.code + ": " + p.content;';
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

describe("durable approvals, in one process", () => {
  it("AI SDK: the run pauses, the model reads the paused output; resume runs the payment once; a second resume is refused", async () => {
    const runs = { lookup: 0, pay: 0 };
    const tools = {
      lookup: tool({ inputSchema: z.object({ who: z.string() }), execute: async ({ who }) => (runs.lookup++, `IBAN-${who}`) }),
      pay: tool({
        inputSchema: z.object({ iban: z.string(), amount: z.number() }),
        needsApproval: true,
        execute: async ({ amount, iban }) => (runs.pay++, `paid ${amount} to ${iban}`),
      }),
    };
    const code = createCodeTool({ tools, pool: false, approval: { tokenKey: KEY, store: memoryStore(), ledger: memoryLedger() } });
    const prompts: string[] = [];
    let step = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async (options) => {
        prompts.push(JSON.stringify(options.prompt));
        return step++ === 0
          ? {
              content: [{ type: "tool-call", toolCallId: "c1", toolName: "code", input: JSON.stringify({ code: BODY }) }],
              finishReason: { unified: "tool-calls", raw: undefined },
              usage,
              warnings: [],
            }
          : {
              content: [{ type: "text", text: "waiting for approval" }],
              finishReason: { unified: "stop", raw: undefined },
              usage,
              warnings: [],
            };
      },
    });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "pay ada" });
    const paused = result.steps[0]!.toolResults[0]!.output as CodeToolOutput;
    expect(paused).toMatchObject({
      status: "paused",
      resumeId: expect.any(String),
      pending: [{ id: 2, name: "pay", arguments: { iban: "IBAN-ada", amount: 120 } }],
      content: expect.stringMatching(/^The run is paused: 1 call waits for a person's approval/),
    });
    // The token stays on the host: the model saw the resume id and the pending call, never the token.
    expect(prompts.at(-1)).toContain(paused.resumeId);
    expect(prompts.at(-1)).not.toContain("ears-approval-token");
    expect(runs).toEqual({ lookup: 1, pay: 0 });
    const resumed = await code.resume(paused.resumeId!, { decisions: { 2: { approved: true, by: "ada" } } });
    expect(resumed).toEqual({ status: "success", content: "", structured: "paid 120 to IBAN-ada" });
    expect(runs).toEqual({ lookup: 1, pay: 1 });
    const again = await code.resume(paused.resumeId!, { decisions: { 2: { approved: true } } });
    expect(again).toMatchObject({ status: "failure", code: "UnknownResumeId", content: expect.stringContaining("nothing was run") });
    expect(runs).toEqual({ lookup: 1, pay: 1 });
  });

  it("Agents SDK: the same with a scripted model; a denial reaches the body as ApprovalDenied and pay never runs", async () => {
    const runs = { lookup: 0, pay: 0 };
    const lookup = agentsTool({
      name: "lookup",
      description: "IBAN",
      parameters: z.object({ who: z.string() }),
      execute: async ({ who }) => (runs.lookup++, `IBAN-${who}`),
    });
    const pay = agentsTool({
      name: "pay",
      description: "Pay",
      parameters: z.object({ iban: z.string(), amount: z.number() }),
      needsApproval: true,
      execute: async ({ amount }) => (runs.pay++, `paid ${amount}`),
    });
    const code = codeTool({ tools: [lookup, pay], pool: false, approval: { tokenKey: KEY } });
    let index = 0;
    const model: Model = {
      async getResponse(): Promise<ModelResponse> {
        const output: ModelResponse["output"] =
          index++ === 0
            ? [{ type: "function_call", callId: "c1", name: "run_code", arguments: JSON.stringify({ code: BODY }), status: "completed" }]
            : [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "waiting" }] }];
        return { usage: new Usage(), output };
      },
      getStreamedResponse() {
        throw new Error("the scripted model does not stream");
      },
    };
    const result = await run(new Agent({ name: "A", model, tools: [code] }), "pay");
    const item = result.newItems.find((each) => each.type === "tool_call_output_item") as { output: unknown };
    const paused = (typeof item.output === "string" ? JSON.parse(item.output) : item.output) as CodeToolOutput;
    expect(paused).toMatchObject({ status: "paused", pending: [{ id: 2, name: "pay" }] });
    const denied = (await code.resume(paused.resumeId!, {
      decisions: { 2: { approved: false, reason: "over budget" } },
    })) as CodeToolOutput;
    expect(denied).toMatchObject({ status: "success", structured: expect.stringMatching(/^ApprovalDenied: .*over budget/) });
    const again = (await code.resume(paused.resumeId!, { decisions: { 2: { approved: true } } })) as CodeToolOutput;
    expect(again).toMatchObject({ status: "failure", code: "UnknownResumeId" });
    expect(runs).toEqual({ lookup: 1, pay: 0 });
  });

  it("resume refuses what does not fit before its claim, keeping the paused run for a right resume", async () => {
    const runs = { pay: 0 };
    const tools = {
      pay: tool({ inputSchema: z.object({}), needsApproval: true, execute: async () => (runs.pay++, "paid") }),
    };
    const code = createCodeTool({ tools, pool: false, approval: { tokenKey: KEY } });
    let last: CodeToolOutput | undefined;
    const body = 'const p = await ears.call("pay", {});\nreturn p.status;';
    for await (const value of code.execute!({ code: body }, { toolCallId: "c", messages: [] }) as AsyncIterable<CodeToolOutput>)
      last = value;
    expect(await code.resume(last!.resumeId!, { decisions: { 9: { approved: true } } })).toMatchObject({
      status: "failure",
      code: "InvalidArguments",
      content: expect.stringContaining('"9", not pending'),
    });
    expect(await code.resume("nope", { decisions: {} })).toMatchObject({ status: "failure", code: "UnknownResumeId" });
    expect(await code.resume(last!.resumeId!, { decisions: { 1: { approved: true } } })).toEqual({
      status: "success",
      content: "",
      structured: "success",
    });
    expect(runs.pay).toBe(1);
  });
});
