/**
 * @posoco/ears/ai (issue 30): the code tool in a real AI SDK agent loop (`generateText`, `streamText`),
 * driven by the AI SDK's own mock language model (`ai/test`) scripted step by step: each step sees the
 * prompt the SDK built, so a step that reacts to the previous tool result proves the model saw it.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ToolExecutionOptions } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { createMCPClient } from "@ai-sdk/mcp";
import { Experimental_StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createCodeTool, type CodeToolOutput } from "../../src/frameworks/ai.js";
import { connectMcpServers, createRunPool, type RunReport } from "../../src/host/index.js";
import { goneWithin, uniqueMarker } from "../helpers/processes.js";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** One step of a scripted model: a body for the code tool, or a final answer. */
type Step = { code: string } | { text: string };

/** The AI SDK's mock model, answering each step with the next of `steps` (a function sees the prompt so far). */
function scripted(steps: ((prompt: string) => Step)[]) {
  const prompts: string[] = [];
  let index = 0;
  const next = (options: LanguageModelV3CallOptions): Step => {
    const prompt = JSON.stringify(options.prompt);
    prompts.push(prompt);
    const step = steps[index++];
    if (step === undefined) throw new Error(`the script has no step ${index}`);
    return step(prompt);
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const step = next(options);
      const content: LanguageModelV3Content[] =
        "code" in step
          ? [{ type: "tool-call", toolCallId: `call-${index}`, toolName: "code", input: JSON.stringify({ code: step.code }) }]
          : [{ type: "text", text: step.text }];
      return { content, finishReason: { unified: "code" in step ? "tool-calls" : "stop", raw: undefined }, usage, warnings: [] };
    },
    doStream: async (options) => {
      const step = next(options);
      const parts: LanguageModelV3StreamPart[] =
        "code" in step
          ? [{ type: "tool-call", toolCallId: `call-${index}`, toolName: "code", input: JSON.stringify({ code: step.code }) }]
          : [
              { type: "text-start", id: "t" },
              { type: "text-delta", id: "t", delta: step.text },
              { type: "text-end", id: "t" },
            ];
      parts.push({ type: "finish", finishReason: { unified: "code" in step ? "tool-calls" : "stop", raw: undefined }, usage });
      return { stream: convertArrayToReadableStream(parts) };
    },
  });
  return { model, prompts };
}

/**
 * The user's tools, recording the options each execute got. With `parallel`, each waits (up to 5 s) until
 * both have started, so a body that calls them one after the other gets a failure.
 */
function weatherTools({ parallel = false } = {}) {
  const seen: { name: string; options: ToolExecutionOptions }[] = [];
  let started = 0;
  let release: () => void = () => undefined;
  const bothStarted = new Promise<void>((resolve) => (release = resolve));
  const together = async () => {
    if (!parallel) return;
    started += 1;
    if (started === 2) release();
    const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("called one after the other")), 5000).unref());
    await Promise.race([bothStarted, timer]);
  };
  const tools = {
    getWeather: tool({
      description: "The weather in a city",
      inputSchema: z.object({ city: z.string() }),
      outputSchema: z.object({ city: z.string(), celsius: z.number() }),
      execute: async ({ city }, options) => {
        seen.push({ name: "getWeather", options });
        await together();
        return { city, celsius: city.length };
      },
    }),
    getTime: tool({
      description: "The time in a zone",
      inputSchema: jsonSchema<{ zone: string }>({ type: "object", properties: { zone: { type: "string" } }, required: ["zone"] }),
      execute: async ({ zone }, options) => {
        seen.push({ name: "getTime", options });
        await together();
        return `12:00 in ${zone}`;
      },
    }),
  };
  return { tools, seen };
}

/** The code tool's results in the order the SDK recorded them. */
function results(steps: { toolResults: { output: unknown }[] }[]): CodeToolOutput[] {
  return steps.flatMap((step) => step.toolResults.map((result) => result.output as CodeToolOutput));
}

describe("createCodeTool in an AI SDK agent loop (generateText, the SDK's mock model)", () => {
  it("runs a body calling two tools (in parallel), each tool's execute with the SDK's options; the next step sees the result", async () => {
    const { tools, seen } = weatherTools({ parallel: true });
    const { model, prompts } = scripted([
      () => ({
        code: [
          "const [w, t] = await Promise.all([",
          '  ears.call("getWeather", { city: "Paris" }),',
          '  ears.call("getTime", { zone: "Europe/Paris" }),',
          "]);",
          'if (w.status === "failure" || t.status === "failure") return "a call failed";',
          'console.log("both answered");',
          "return { celsius: w.structured.celsius, time: t.structured };",
        ].join("\n"),
      }),
      (prompt) => ({ text: prompt.includes('"celsius":5') && prompt.includes("12:00 in Europe/Paris") ? "5 degrees at noon" : "?" }),
    ]);
    const reports: RunReport[] = [];
    const code = createCodeTool({ tools, pool: false, typecheck: true, onReport: (report) => reports.push(report) });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(4), prompt: "Weather and time in Paris?" });

    expect(result.text).toBe("5 degrees at noon");
    expect(results(result.steps)).toEqual([
      { status: "success", content: "", structured: { celsius: 5, time: "12:00 in Europe/Paris" }, logs: ["[info] both answered"] },
    ]);
    // Both tools ran in the host, with the code tool call's options passed through.
    expect(seen.map(({ name }) => name).sort()).toEqual(["getTime", "getWeather"]);
    for (const { options } of seen) {
      expect(options.toolCallId).toBe("call-1");
      expect(JSON.stringify(options.messages)).toContain("Weather and time in Paris?");
      expect(options.abortSignal).toBeInstanceOf(AbortSignal);
    }
    // In parallel: each tool waited for the other to start (see weatherTools).
    expect(reports[0]!.calls.map((call) => call.name).sort()).toEqual(["getTime", "getWeather"]);
    // The model saw the tools as TypeScript in the code tool's description.
    expect(prompts).toHaveLength(2);
    const description = (code as { description: string }).description;
    expect(description).toContain("getWeather: { args: {\n    city: string;\n  }; result: TypedSuccess<{");
    expect(description).toContain("/** The time in a zone */");
  });

  it("a body with a type error comes back with its position (typecheck: true); the model fixes it in the next step", async () => {
    const { tools } = weatherTools();
    const { model, prompts } = scripted([
      () => ({ code: 'const w = await ears.call("getWeather", { city: 1 });\nreturn w;' }),
      (prompt) => ({
        code: prompt.includes("code.ts:1:43")
          ? 'const w = await ears.call("getWeather", { city: "Oslo" });\n' +
            'if (w.status === "failure") return w;\nreturn w.structured.celsius;'
          : "return 'no position';",
      }),
      () => ({ text: "done" }),
    ]);
    const code = createCodeTool({ tools, pool: false, typecheck: true });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(5), prompt: "Oslo?" });
    const [first, second] = results(result.steps);
    expect(first).toMatchObject({ status: "failure", code: "CompileError" });
    expect(first!.content).toContain("code.ts:1:43: Type 'number' is not assignable to type 'string'. (TS2322)");
    expect(second).toEqual({ status: "success", content: "", structured: 4 });
    expect(prompts).toHaveLength(3);
    expect(result.text).toBe("done");
  });

  it("a body that loops forever is RunTimeout and the agent goes on", async () => {
    const { tools } = weatherTools();
    const { model } = scripted([() => ({ code: "for (;;) {}" }), (prompt) => ({ text: prompt.includes("RunTimeout") ? "too slow" : "?" })]);
    const code = createCodeTool({ tools, pool: false, limits: { runTimeoutMs: 1000 } });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "loop" });
    expect(results(result.steps)).toEqual([expect.objectContaining({ status: "failure", code: "RunTimeout" })]);
    expect(result.text).toBe("too slow");
    expect((code as { description: string }).description).toContain("Each run has 1 s of run time, 1 GiB of memory, a result of at most");
  });

  it("a tool that throws is a failure value the body reads, not a crash", async () => {
    const { model } = scripted([
      () => ({ code: 'const r = await ears.call("broken", { n: 1 });\nreturn r.status === "failure" ? `${r.code}: ${r.content}` : "ok";' }),
      () => ({ text: "noted" }),
    ]);
    const broken = tool({
      inputSchema: z.object({ n: z.number() }),
      execute: async (): Promise<string> => {
        throw new Error("the service is down");
      },
    });
    const code = createCodeTool({ tools: { broken }, pool: false });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "try" });
    expect(results(result.steps)).toEqual([{ status: "success", content: "", structured: "CapabilityFailed: the service is down" }]);
  });

  it("checks a call's arguments with the tool's own schema before its execute runs", async () => {
    let ran = 0;
    const strict = tool({
      inputSchema: z.object({ n: z.number().int().positive() }),
      execute: async ({ n }) => {
        ran += 1;
        return n;
      },
    });
    const { model } = scripted([() => ({ code: 'return await ears.call("strict", { n: -1 });' }), () => ({ text: "ok" })]);
    const code = createCodeTool({ tools: { strict }, pool: false });
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "n" });
    const [output] = results(result.steps);
    expect(output).toMatchObject({ status: "failure", code: "InvalidArguments" });
    expect(output!.content).toMatch(/^arguments for "strict" do not match its schema: .*; the tool did not run$/s);
    expect(ran).toBe(0);
  });

  it("an abort from the caller stops the run, and nothing it started is left", async () => {
    const marker = uniqueMarker();
    const controller = new AbortController();
    const ready = tool({
      inputSchema: z.object({}),
      execute: async () => {
        setTimeout(() => controller.abort(new Error("the user left")), 200);
        return "go on";
      },
    });
    const { model } = scripted([
      () => ({
        code: [
          `process.getBuiltinModule("node:child_process").spawn("sleep", ["${marker}"], { stdio: "ignore" });`,
          'await ears.call("ready", {});',
          "for (;;) {}",
        ].join("\n"),
      }),
      () => ({ text: "unreachable" }),
    ]);
    const reports: RunReport[] = [];
    const code = createCodeTool({ tools: { ready }, pool: false, onReport: (report) => reports.push(report) });
    const outcome = await generateText({
      model,
      tools: { code },
      stopWhen: stepCountIs(3),
      prompt: "go",
      abortSignal: controller.signal,
    }).then(
      () => "resolved",
      (error: Error) => error.message,
    );
    expect(outcome).toBe("the user left");
    await expect.poll(() => reports.length).toBe(1);
    expect(reports[0]!.failure?.code).toBe("Aborted");
    expect(await goneWithin(marker, 5000)).toEqual([]);
  });

  it("leaves out tools that need approval or have no execute, and names them in the description", async () => {
    const { model } = scripted([
      () => ({ code: 'const r = await ears.call("deleteAll", {});\nreturn r.status === "failure" ? r.code : "ran";' }),
      () => ({ text: "ok" }),
    ]);
    let deleted = false;
    const tools = {
      deleteAll: tool({
        inputSchema: z.object({}),
        needsApproval: true,
        execute: async () => {
          deleted = true;
          return "deleted";
        },
      }),
      askUser: tool({ description: "Ask the user", inputSchema: z.object({ question: z.string() }) }),
      add: tool({ inputSchema: z.object({ a: z.number() }), needsApproval: false, execute: async ({ a }) => a + 1 }),
    };
    const code = createCodeTool({ tools, pool: false });
    const description = (code as { description: string }).description;
    expect(description).toContain(
      "Not callable from code (call them as tools of their own): deleteAll (it needs approval), " +
        "askUser (it has no execute: the client runs it).",
    );
    expect(description).toContain("  add: { args: {");
    expect(description).not.toMatch(/ {2}deleteAll: \{/);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    expect(results(result.steps)).toEqual([{ status: "success", content: "", structured: "CapabilityDenied" }]);
    expect(deleted).toBe(false);
  });

  it("runs on the caller's pool", async () => {
    const pool = createRunPool({ size: 1 });
    try {
      const { model } = scripted([() => ({ code: "return 6 * 7;" }), () => ({ text: "42" })]);
      const reports: RunReport[] = [];
      const code = createCodeTool({ tools: {}, pool, onReport: (report) => reports.push(report) });
      const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
      expect(results(result.steps)).toEqual([{ status: "success", content: "", structured: 42 }]);
      expect(reports[0]!.pooled).toBe(true);
    } finally {
      await pool.close();
    }
  });
});

/** A payment tool whose `needsApproval` holds amounts over 100, recording each execute and each time the policy was asked. */
function paymentTools() {
  const paid: number[] = [];
  const asked: { amount: number; toolCallId: string }[] = [];
  const tools = {
    pay: tool({
      description: "Pays an amount",
      inputSchema: z.object({ amount: z.number() }),
      needsApproval: async ({ amount }, { toolCallId }) => {
        asked.push({ amount, toolCallId });
        return amount > 100;
      },
      execute: async ({ amount }) => {
        paid.push(amount);
        return `paid ${amount}`;
      },
    }),
    deleteAll: tool({
      description: "Deletes everything",
      inputSchema: z.object({}),
      needsApproval: true,
      execute: async () => {
        paid.push(-1);
        return "deleted";
      },
    }),
  };
  return { tools, paid, asked };
}

/** A body that makes each call in turn and returns what each gave (a failure as `code: content`). */
function callsInTurn(calls: [string, unknown][]): string {
  return [
    `const calls = ${JSON.stringify(calls)} as const;`,
    "const seen: string[] = [];",
    "for (const [name, args] of calls) {",
    "  const r = await ears.call(name as never, args as never);",
    '  seen.push(r.status === "failure" ? `${r.code}: ${r.content}` : String((r as { structured?: unknown }).structured));',
    "}",
    "return seen;",
  ].join("\n");
}

describe("createCodeTool and needsApproval (runCode's approvals)", () => {
  it("approve: the tool's execute runs once; deny: it never runs and the body sees ApprovalDenied with the reason", async () => {
    const { tools, paid, asked } = paymentTools();
    const decided: { name: string; arguments: unknown }[] = [];
    const reports: RunReport[] = [];
    const code = createCodeTool({
      tools,
      pool: false,
      onReport: (report) => reports.push(report),
      approval: {
        decide: (call) => {
          decided.push({ name: call.name, arguments: call.arguments });
          return (call.arguments as { amount: number }).amount === 500
            ? { approved: true, by: "finance" }
            : { approved: false, reason: "over the limit", by: "finance" };
        },
      },
    });
    const { model } = scripted([
      () => ({
        code: callsInTurn([
          ["pay", { amount: 500 }],
          ["pay", { amount: 900 }],
          ["pay", { amount: 5 }],
        ]),
      }),
      (prompt) => ({ text: prompt.includes("ApprovalDenied") ? "paid 500 and 5, 900 was refused" : "?" }),
    ]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "pay" });

    expect(result.text).toBe("paid 500 and 5, 900 was refused");
    expect(results(result.steps)).toEqual([
      {
        status: "success",
        content: "",
        structured: ["paid 500", expect.stringMatching(/^ApprovalDenied: .*over the limit/), "paid 5"],
      },
    ]);
    // Each execute ran once, the denied one never; only the calls the policy held reached decide.
    expect(paid).toEqual([500, 5]);
    expect(decided).toEqual([
      { name: "pay", arguments: { amount: 500 } },
      { name: "pay", arguments: { amount: 900 } },
    ]);
    // The policy was asked with the body's arguments and the code tool call's options, as the SDK asks it.
    expect(asked).toEqual([
      { amount: 500, toolCallId: "call-1" },
      { amount: 900, toolCallId: "call-1" },
      { amount: 5, toolCallId: "call-1" },
    ]);
    expect(reports[0]!.approvals?.map(({ name, decision, by }) => ({ name, decision, by }))).toEqual([
      { name: "pay", decision: "approved", by: "finance" },
      { name: "pay", decision: "denied", by: "finance" },
      { name: "pay", decision: "approved", by: "needsApproval" },
    ]);
  });

  it("with approval, a needsApproval: true tool is callable and declared, saying a call may be denied", async () => {
    const { tools, paid } = paymentTools();
    const code = createCodeTool({ tools, pool: false, approval: { decide: () => ({ approved: true }) } });
    const description = (code as { description: string }).description;
    expect(description).not.toContain("Not callable from code");
    expect(description).toContain("/** Deletes everything May need a person's approval: a denied call is an ApprovalDenied failure. */");
    const { model } = scripted([() => ({ code: callsInTurn([["deleteAll", {}]]) }), () => ({ text: "done" })]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    expect(results(result.steps)).toEqual([{ status: "success", content: "", structured: ["deleted"] }]);
    expect(paid).toEqual([-1]);
  });

  it("without an approval option, a call the policy holds is denied, saying how to get it; one it lets through runs", async () => {
    const { tools, paid } = paymentTools();
    const code = createCodeTool({ tools, pool: false });
    expect((code as { description: string }).description).toContain(
      "Not callable from code (call them as tools of their own): deleteAll (it needs approval).",
    );
    const { model } = scripted([
      () => ({
        code: callsInTurn([
          ["pay", { amount: 500 }],
          ["pay", { amount: 5 }],
        ]),
      }),
      () => ({ text: "done" }),
    ]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    expect(results(result.steps)).toEqual([
      {
        status: "success",
        content: "",
        structured: [
          expect.stringMatching(
            /^ApprovalDenied: .*"pay" needs a person's approval for this call, and this code tool was made without a way to ask .*Call pay as a tool of its own/,
          ),
          "paid 5",
        ],
      },
    ]);
    expect(paid).toEqual([5]);
  });

  it("a policy that throws holds the call (fail closed); arguments the tool's schema refuses need no decision and do not run", async () => {
    let ran = 0;
    const decided: unknown[] = [];
    const tools = {
      risky: tool({
        inputSchema: z.object({ n: z.number() }),
        needsApproval: () => {
          throw new Error("policy broke");
        },
        execute: async ({ n }) => ((ran += 1), n),
      }),
    };
    const code = createCodeTool({
      tools,
      pool: false,
      approval: { decide: (call) => (decided.push(call.arguments), { approved: false, reason: "no" }) },
    });
    const { model } = scripted([
      () => ({
        code: callsInTurn([
          ["risky", { n: 1 }],
          ["risky", { n: "one" }],
        ]),
      }),
      () => ({ text: "done" }),
    ]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    const [output] = results(result.steps);
    expect(output!.structured).toEqual([
      expect.stringMatching(/^ApprovalDenied: .*no/),
      expect.stringMatching(/^InvalidArguments: arguments for "risky" do not match its schema/),
    ]);
    expect(decided).toEqual([{ n: 1 }]);
    expect(ran).toBe(0);
  });

  it("a decision that does not come within approval.timeoutMs is ApprovalTimedOut, the tool not run, the agent goes on", async () => {
    const { tools, paid } = paymentTools();
    let aborted: unknown;
    const code = createCodeTool({
      tools,
      pool: false,
      approval: {
        decide: (_call, { signal }) =>
          new Promise((resolve) => signal.addEventListener("abort", () => ((aborted = signal.reason), resolve({ approved: true })))),
        timeoutMs: 200,
      },
    });
    const { model } = scripted([() => ({ code: callsInTurn([["pay", { amount: 500 }]]) }), () => ({ text: "timed out" })]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    expect(result.text).toBe("timed out");
    expect(results(result.steps)[0]!.structured).toEqual([expect.stringMatching(/^ApprovalTimedOut: /)]);
    expect((aborted as Error).name).toBe("TimeoutError");
    expect(paid).toEqual([]);
  });

  it("refuses a bad approval option, naming the field", () => {
    const { tools } = paymentTools();
    expect(() => createCodeTool({ tools, approval: 1 as never })).toThrow(
      "createCodeTool: options.approval must be an object { decide?, timeoutMs?, tokenKey?, store?, ledger? }",
    );
    expect(() => createCodeTool({ tools, approval: {} as never })).toThrow(
      "createCodeTool: options.approval needs decide (a live decision) or tokenKey (to pause), or both",
    );
    expect(() => createCodeTool({ tools, approval: { decide: 3 } as never })).toThrow(
      "createCodeTool: options.approval.decide must be a function (call, { signal }) => decision",
    );
    expect(() => createCodeTool({ tools, approval: { decide: () => ({ approved: true }), required: ["pay"] } as never })).toThrow(
      "createCodeTool: options.approval takes decide, timeoutMs, tokenKey, store and ledger, not required",
    );
    expect(() => createCodeTool({ tools, approval: { decide: () => ({ approved: true }), timeoutMs: -1 } })).toThrow(
      "createCodeTool: options.approval.timeoutMs must be a positive number of milliseconds (or Infinity)",
    );
    expect(() => createCodeTool({ tools, approval: { tokenKey: "short" } })).toThrow(/tokenKey must be at least 32 bytes/);
    expect(() => createCodeTool({ tools, approval: { tokenKey: "k".repeat(32), store: {} as never } })).toThrow(
      /options.approval.store must have get, set and delete/,
    );
    expect(() => createCodeTool({ tools, approval: { tokenKey: "k".repeat(32), ledger: {} as never } })).toThrow(/options.approval.ledger/);
  });

  it("toolApproval: a bad option is refused, naming the tool; a static user-approval without a way to ask leaves the tool out", () => {
    const { tools } = paymentTools();
    expect(() => createCodeTool({ tools, toolApproval: "approved" as never })).toThrow(
      /^createCodeTool: options.toolApproval must be an object of approval statuses by tool name \(the AI SDK 7's per-tool/,
    );
    expect(() => createCodeTool({ tools, toolApproval: { nope: "approved" } })).toThrow(
      "createCodeTool: options.toolApproval.nope names no tool of options.tools",
    );
    for (const status of ["maybe", { type: "yes" }, 3, null]) {
      expect(() => createCodeTool({ tools, toolApproval: { pay: status as never } })).toThrow(
        'createCodeTool: options.toolApproval.pay must be "not-applicable", "approved", "denied", "user-approval", ' +
          "{ type, reason? } or a function",
      );
    }
    const description = (toolApproval: Parameters<typeof createCodeTool>[0]["toolApproval"]) =>
      (createCodeTool({ tools, pool: false, toolApproval }) as { description: string }).description;
    expect(description({ pay: "user-approval" })).toContain(
      "Not callable from code (call them as tools of their own): pay (it needs approval)",
    );
    expect(description({ pay: { type: "user-approval", reason: "money" } })).toContain("pay (it needs approval)");
    // Decided per call or not needing a person: declared, and said when a call may be denied.
    expect(description({ pay: () => "user-approval" })).toContain("May need a person's approval");
    expect(description({ pay: "not-applicable" })).not.toContain("May need a person's approval");
    expect(description({ pay: "approved" })).not.toContain("May need a person's approval");
    expect(description({ pay: { type: "denied", reason: "closed" } })).toContain("May need a person's approval");
  });

  it("toolApproval: a function that throws or answers what it should not hands the call to decide (fail closed)", async () => {
    const { tools, paid } = paymentTools();
    const asked: string[] = [];
    const code = createCodeTool({
      tools,
      pool: false,
      toolApproval: {
        pay: (input: { amount: number }) => {
          if (input.amount > 100) throw new Error("policy down");
          return "sometimes" as never;
        },
      },
      approval: { decide: (call) => (asked.push(call.name), { approved: false, reason: "no", by: "ada" }) },
    });
    const { model } = scripted([
      () => ({ code: callsInTurn([["pay", { amount: 500 }]]) }),
      () => ({ code: callsInTurn([["pay", { amount: 5 }]]) }),
      () => ({ text: "done" }),
    ]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(4), prompt: "x" });
    expect(results(result.steps).map((output) => output.structured)).toEqual([
      [expect.stringMatching(/^ApprovalDenied: .*not approved: no; it did not run$/)],
      [expect.stringMatching(/^ApprovalDenied: .*not approved: no; it did not run$/)],
    ]);
    expect(asked).toEqual(["pay", "pay"]);
    expect(paid).toEqual([]);
  });

  it("a description function (the AI SDK 7's per-context descriptions) is declared with what it gives without a context", () => {
    const described = (description: unknown) =>
      (
        createCodeTool({
          tools: { t: { description, inputSchema: z.object({}), execute: async () => 1 } as never },
          pool: false,
        }) as { description: string }
      ).description;
    expect(described(() => "Counts the things")).toContain("/** Counts the things */\n  t: {");
    expect(described((options: { context: { name: string } }) => `Greets ${options.context.name}`)).not.toContain("Greets");
    expect(described(() => 42)).toMatch(/\n {2}t: \{/);
  });

  it("a pause decision without a tokenKey denies the call, saying the run cannot pause", async () => {
    const { tools, paid } = paymentTools();
    const code = createCodeTool({ tools, pool: false, approval: { decide: () => ({ pause: true }) } });
    const { model } = scripted([() => ({ code: callsInTurn([["pay", { amount: 500 }]]) }), () => ({ text: "done" })]);
    const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
    expect(results(result.steps)[0]!.structured).toEqual([expect.stringMatching(/^ApprovalDenied: .*cannot pause/)]);
    expect(paid).toEqual([]);
  });
});

describe("createCodeTool with streamText: preliminary results", () => {
  it("streams the body's log lines while it runs; the final result comes last and is what the model sees", async () => {
    const { model, prompts } = scripted([
      () => ({
        code: [
          'console.log("step 1");',
          "await new Promise((resolve) => setTimeout(resolve, 300));",
          'console.log("step 2");',
          "await new Promise((resolve) => setTimeout(resolve, 300));",
          "return 3;",
        ].join("\n"),
      }),
      () => ({ text: "three" }),
    ]);
    const code = createCodeTool({ tools: {}, pool: false });
    const stream = streamText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "count" });
    const outputs: { preliminary: boolean; output: CodeToolOutput }[] = [];
    for await (const part of stream.fullStream) {
      if (part.type === "tool-result") outputs.push({ preliminary: part.preliminary === true, output: part.output as CodeToolOutput });
    }
    expect(await stream.text).toBe("three");
    const final = { status: "success", content: "", structured: 3, logs: ["[info] step 1", "[info] step 2"] };
    // The SDK passes on every value execute yields as preliminary (the last one too), then the last as the result.
    expect(outputs.at(-1)).toEqual({ preliminary: false, output: final });
    expect(outputs.at(-2)).toEqual({ preliminary: true, output: final });
    const running = outputs.slice(0, -2);
    expect(running.every((part) => part.preliminary && part.output.status === "running")).toBe(true);
    expect(running.map((part) => part.output.logs)).toContainEqual(["[info] step 1"]);
    // The model's next step saw the final result only.
    expect(prompts[1]).toContain('"structured":3');
    expect(prompts[1]).not.toContain('"running"');
  });
});

/** @modelcontextprotocol/server-everything, a reference MCP server this project did not write, over stdio. */
const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

describe("createCodeTool with MCP servers' tools", () => {
  it("takes connectMcpServers' connection as mcp: its tools are callable as <server>.<tool>, beside the ToolSet's", async () => {
    const servers = await connectMcpServers({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } });
    try {
      const { tools } = weatherTools();
      const code = createCodeTool({ tools, mcp: servers, pool: false, typecheck: true });
      expect((code as { description: string }).description).toContain('  "everything.echo": { args: {');
      const { model } = scripted([
        () => ({
          code: [
            "const [echo, w] = await Promise.all([",
            '  ears.call("everything.echo", { message: "hi" }),',
            '  ears.call("getWeather", { city: "Rome" }),',
            "]);",
            'if (echo.status === "failure" || w.status === "failure") return "failed";',
            "return [echo.content, w.structured.celsius];",
          ].join("\n"),
        }),
        () => ({ text: "ok" }),
      ]);
      const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
      expect(results(result.steps)).toEqual([{ status: "success", content: "", structured: ["Echo: hi", 4] }]);
    } finally {
      await servers.close();
    }
  });

  it("takes the AI SDK's own MCP client's tools as a ToolSet", async () => {
    const client = await createMCPClient({
      transport: new Experimental_StdioMCPTransport({ command: process.execPath, args: [EVERYTHING, "stdio"], stderr: "ignore" }),
    });
    try {
      const code = createCodeTool({ tools: await client.tools(), pool: false, typecheck: true });
      expect((code as { description: string }).description).toContain("  echo: { args: {\n    /** Message to echo */");
      const { model } = scripted([
        () => ({ code: 'const echo = await ears.call("echo", { message: "hi" });\nreturn echo.structured;' }),
        () => ({ text: "ok" }),
      ]);
      const result = await generateText({ model, tools: { code }, stopWhen: stepCountIs(3), prompt: "x" });
      expect(results(result.steps)).toEqual([
        { status: "success", content: "", structured: { content: [{ type: "text", text: "Echo: hi" }], isError: false } },
      ]);
    } finally {
      await client.close();
    }
  });

  it("refuses a tool name an MCP connection also has", async () => {
    const servers = await connectMcpServers({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } });
    try {
      const clash = { "everything.echo": tool({ inputSchema: z.object({}), execute: async () => "mine" }) };
      expect(() => createCodeTool({ tools: clash, mcp: servers, pool: false })).toThrow(
        'createCodeTool: "everything.echo" is declared by part 1 and part 2; a capability name must be declared once ' +
          "(a tool and an MCP server's tool?)",
      );
    } finally {
      await servers.close();
    }
  });
});

describe("createCodeTool's options", () => {
  it("refuses what is not a ToolSet, a tool name an MCP server also has, and a bad pool, with what to pass", () => {
    expect(() => createCodeTool(null as never)).toThrow("createCodeTool: options must be an object with tools");
    expect(() => createCodeTool({ tools: [] as never })).toThrow("createCodeTool: options.tools must be an AI SDK ToolSet");
    expect(() => createCodeTool({ tools: {}, pool: 2 as never })).toThrow("options.pool must be a run pool (createRunPool) or false");
    expect(() => createCodeTool({ tools: {}, mcp: {} as never })).toThrow("options.mcp must be what connectMcpServers resolves with");
  });
});
