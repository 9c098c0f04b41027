/**
 * @posoco/ears/openai-agents (issue 30): the code tool in a real OpenAI Agents SDK loop (`run(agent, …)`),
 * driven by a scripted `Model` written against the SDK's public `Model` interface: each turn sees the
 * request the runner built, so a turn that reacts to the previous tool output proves the model saw it.
 */
import { Agent, run, RunContext, tool, Usage, webSearchTool, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { codeTool, type CodeToolOutput } from "../../src/frameworks/openai-agents.js";
import type { RunReport } from "../../src/host/index.js";
import { goneWithin, uniqueMarker } from "../helpers/processes.js";

// The SDK exports traces to OpenAI's API by default; a test sends nothing off this machine.
process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";

type Turn = { code: string } | { text: string };
/** What a function tool's execute gets besides its input and run context. */
type ToolCallDetails = Parameters<ReturnType<typeof tool>["invoke"]>[2];

/** A Model answering each turn with the next of `turns` (a function sees the request's input so far). */
function scripted(turns: ((input: string) => Turn)[]): { model: Model; inputs: string[]; outputs: () => CodeToolOutput[] } {
  const inputs: string[] = [];
  let index = 0;
  const model: Model = {
    async getResponse(request: ModelRequest): Promise<ModelResponse> {
      const input = JSON.stringify(request.input);
      inputs.push(input);
      const turn = turns[index++];
      if (turn === undefined) throw new Error(`the script has no turn ${index}`);
      const step = turn(input);
      const output: ModelResponse["output"] =
        "code" in step
          ? [
              {
                type: "function_call",
                callId: `call-${index}`,
                name: "run_code",
                arguments: JSON.stringify({ code: step.code }),
                status: "completed",
              },
            ]
          : [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: step.text }] }];
      return { usage: new Usage(), output };
    },
    getStreamedResponse() {
      throw new Error("the scripted model does not stream");
    },
  };
  // The code tool's outputs as the runner sent them back to the model, read from the last request.
  const outputs = () =>
    (JSON.parse(inputs.at(-1)!) as { type: string; output?: { type: string; text: string } }[])
      .filter((item) => item.type === "function_call_result")
      .map((item) => JSON.parse(item.output!.text) as CodeToolOutput);
  return { model, inputs, outputs };
}

/** The user's tools, recording what each execute got. With `parallel`, each waits (up to 5 s) until both have started. */
function weatherTools({ parallel = false } = {}) {
  const seen: { name: string; context: unknown; details: ToolCallDetails | undefined }[] = [];
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
  const getWeather = tool({
    name: "get_weather",
    description: "The weather in a city",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }, runContext, details) => {
      seen.push({ name: "get_weather", context: runContext?.context, details });
      await together();
      return { city, celsius: city.length };
    },
  });
  const getTime = tool({
    name: "get_time",
    description: "The time in a zone",
    parameters: z.object({ zone: z.string() }),
    execute: async ({ zone }, runContext, details) => {
      seen.push({ name: "get_time", context: runContext?.context, details });
      await together();
      return `12:00 in ${zone}`;
    },
  });
  return { tools: [getWeather, getTime], seen };
}

describe("codeTool in an OpenAI Agents SDK run (a scripted Model)", () => {
  const loop =
    "runs a body calling two tools (in parallel), each tool's invoke with the run's context and the call's details; " +
    "the next turn sees the result";
  it(loop, async () => {
    const { tools, seen } = weatherTools({ parallel: true });
    const { model, inputs, outputs } = scripted([
      () => ({
        code: [
          "const [w, t] = await Promise.all([",
          '  ears.call("get_weather", { city: "Paris" }),',
          '  ears.call("get_time", { zone: "Europe/Paris" }),',
          "]);",
          'if (w.status === "failure" || t.status === "failure") return "a call failed";',
          'console.log("both answered");',
          "return { celsius: (w.structured as { celsius: number }).celsius, time: t.structured };",
        ].join("\n"),
      }),
      (input) => ({ text: input.includes('\\"celsius\\":5') && input.includes("12:00 in Europe/Paris") ? "5 degrees at noon" : "?" }),
    ]);
    const code = codeTool({ tools, pool: false, typecheck: true });
    const agent = new Agent({ name: "Assistant", model, tools: [code] });
    const result = await run(agent, "Weather and time in Paris?", { context: { user: "ann" } });

    expect(result.finalOutput).toBe("5 degrees at noon");
    expect(outputs()).toEqual([
      { status: "success", content: "", structured: { celsius: 5, time: "12:00 in Europe/Paris" }, logs: ["[info] both answered"] },
    ]);
    expect(seen.map(({ name }) => name).sort()).toEqual(["get_time", "get_weather"]);
    for (const { context, details } of seen) {
      expect(context).toEqual({ user: "ann" });
      expect(details?.toolCall?.callId).toBe("call-1");
      expect(details?.signal).toBeInstanceOf(AbortSignal);
    }
    expect(inputs).toHaveLength(2);
    expect(code.name).toBe("run_code");
    expect(code.description).toContain("get_weather: { args: {\n    city: string;\n  }; result: UntypedResult };");
    expect(code.description).toContain("/** The time in a zone */");
  });

  it("a body with a type error comes back with its position (typecheck: true); the model fixes it in the next turn", async () => {
    const { tools } = weatherTools();
    const { model, outputs } = scripted([
      () => ({ code: 'const w = await ears.call("get_weather", { city: 1 });\nreturn w;' }),
      (input) => ({
        code: input.includes("code.ts:1:44")
          ? 'const w = await ears.call("get_weather", { city: "Oslo" });\nif (w.status === "failure") return w;\nreturn w.structured;'
          : "return 'no position';",
      }),
      () => ({ text: "done" }),
    ]);
    const agent = new Agent({ name: "Assistant", model, tools: [codeTool({ tools, pool: false, typecheck: true })] });
    const result = await run(agent, "Oslo?");
    const [first, second] = outputs();
    expect(first).toMatchObject({ status: "failure", code: "CompileError" });
    expect(first!.content).toContain("code.ts:1:44: Type 'number' is not assignable to type 'string'. (TS2322)");
    expect(second).toEqual({ status: "success", content: "", structured: { city: "Oslo", celsius: 4 } });
    expect(result.finalOutput).toBe("done");
  });

  it("a body that loops forever is RunTimeout and the agent goes on", async () => {
    const { tools } = weatherTools();
    const { model, outputs } = scripted([
      () => ({ code: "for (;;) {}" }),
      (input) => ({ text: input.includes("RunTimeout") ? "too slow" : "?" }),
    ]);
    const agent = new Agent({ name: "Assistant", model, tools: [codeTool({ tools, pool: false, limits: { runTimeoutMs: 1000 } })] });
    const result = await run(agent, "loop");
    expect(outputs()).toEqual([expect.objectContaining({ status: "failure", code: "RunTimeout" })]);
    expect(result.finalOutput).toBe("too slow");
  });

  const throws =
    "a tool that throws is a CapabilityFailed failure to the body: with errorFunction: null its message, " +
    "with the SDK's default errorFunction the SDK's words";
  it(throws, async () => {
    const throwing = (name: string, errorFunction?: null) =>
      tool({
        name,
        description: "Fails",
        parameters: z.object({}),
        ...(errorFunction === null ? { errorFunction } : {}),
        execute: async (): Promise<string> => {
          throw new Error("the service is down");
        },
      });
    const { model, outputs } = scripted([
      () => ({
        code:
          'const [a, b] = await Promise.all([ears.call("raw", {}), ears.call("worded", {})]);\n' +
          'return [a.status === "failure" ? `${a.code}: ${a.content}` : "ok", b];',
      }),
      () => ({ text: "noted" }),
    ]);
    const agent = new Agent({
      name: "Assistant",
      model,
      tools: [codeTool({ tools: [throwing("raw", null), throwing("worded")], pool: false })],
    });
    await run(agent, "try");
    expect(outputs()).toEqual([
      {
        status: "success",
        content: "",
        structured: [
          "CapabilityFailed: the service is down",
          {
            status: "failure",
            code: "CapabilityFailed",
            content: "worded failed: An error occurred while running the tool. Please try again.",
          },
        ],
      },
    ]);
  });

  it("without an approval option, a call needsApproval holds is denied (ApprovalDenied, saying how); the tool does not run", async () => {
    let ran = 0;
    const dangerous = tool({
      name: "delete_all",
      description: "Deletes everything",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => {
        ran += 1;
        return "deleted";
      },
    });
    const { model, outputs } = scripted([
      () => ({ code: 'const r = await ears.call("delete_all", {});\nreturn r.status === "failure" ? `${r.code}: ${r.content}` : "ran";' }),
      () => ({ text: "ok" }),
    ]);
    const code = codeTool({ tools: [dangerous, webSearchTool()], pool: false });
    expect(code.description).toContain(
      "Not callable from code (call them as tools of their own): web_search (a hosted_tool tool runs outside the host).",
    );
    await run(new Agent({ name: "Assistant", model, tools: [code] }), "x");
    expect(outputs()).toEqual([
      {
        status: "success",
        content: "",
        structured: expect.stringMatching(
          /^ApprovalDenied: .*"delete_all" needs a person's approval for this call, and this code tool was made without a way to ask/,
        ),
      },
    ]);
    expect(ran).toBe(0);
  });

  it("with approval: the SDK's policy is asked first; approve runs the tool once, deny never runs it (ApprovalDenied)", async () => {
    const paid: number[] = [];
    const policy: { amount: number; callId: string | undefined; context: unknown }[] = [];
    const pay = tool({
      name: "pay",
      description: "Pays an amount",
      parameters: z.object({ amount: z.number() }),
      needsApproval: async (runContext, { amount }, callId) => {
        policy.push({ amount, callId, context: runContext.context });
        return amount > 100;
      },
      execute: async ({ amount }) => {
        paid.push(amount);
        return `paid ${amount}`;
      },
    });
    const decided: unknown[] = [];
    const reports: RunReport[] = [];
    const code = codeTool({
      tools: [pay],
      pool: false,
      onReport: (report) => reports.push(report),
      approval: {
        decide: async (call) => {
          decided.push(call.arguments);
          return (call.arguments as { amount: number }).amount === 500
            ? { approved: true, by: "finance" }
            : { approved: false, reason: "over the limit", by: "finance" };
        },
      },
    });
    const body = [
      "const seen: string[] = [];",
      "for (const amount of [500, 900, 5]) {",
      '  const r = await ears.call("pay", { amount });',
      '  seen.push(r.status === "failure" ? `${r.code}: ${r.content}` : String(r.structured));',
      "}",
      "return seen;",
    ].join("\n");
    const { model, outputs, inputs } = scripted([() => ({ code: body }), () => ({ text: "done" })]);
    const result = await run(new Agent({ name: "Assistant", model, tools: [code] }), "pay", { context: { user: "ada" } });
    expect(result.finalOutput).toBe("done");
    expect(outputs()).toEqual([
      { status: "success", content: "", structured: ["paid 500", expect.stringMatching(/^ApprovalDenied: .*over the limit/), "paid 5"] },
    ]);
    expect(inputs.at(-1)).toContain("ApprovalDenied");
    expect(paid).toEqual([500, 5]);
    expect(decided).toEqual([{ amount: 500 }, { amount: 900 }]);
    // Asked as the SDK asks it: the run's context, the body's arguments, the code tool call's id.
    expect(policy).toEqual([
      { amount: 500, callId: "call-1", context: { user: "ada" } },
      { amount: 900, callId: "call-1", context: { user: "ada" } },
      { amount: 5, callId: "call-1", context: { user: "ada" } },
    ]);
    expect(reports[0]!.approvals?.map(({ decision, by }) => `${decision} by ${by}`)).toEqual([
      "approved by finance",
      "denied by finance",
      "approved by needsApproval",
    ]);
  });

  it("a tool without a needsApproval function is called unasked (no approval in its report); needsApproval: true is held", async () => {
    const { tools } = weatherTools();
    let ran = 0;
    const held = tool({
      name: "held",
      description: "Needs a person",
      parameters: z.object({}),
      needsApproval: true,
      execute: async () => {
        ran += 1;
        return "ran";
      },
    });
    const reports: RunReport[] = [];
    const code = codeTool({ tools: [...tools, held], pool: false, onReport: (report) => reports.push(report) });
    // The static policy's answer is learned a few microtasks after codeTool (an Agent's run calls much later).
    await new Promise((resolve) => setImmediate(resolve));
    const body = [
      'const w = await ears.call("get_weather", { city: "Paris" });',
      'const h = await ears.call("held", {});',
      'return [w.status, h.status === "failure" ? h.code : h.status];',
    ].join("\n");
    const output = await code.invoke(new RunContext(), JSON.stringify({ code: body }));
    expect(output).toEqual({ status: "success", content: "", structured: ["success", "ApprovalDenied"] });
    expect(ran).toBe(0);
    expect(reports[0]!.approvals?.map(({ name, decision }) => `${name} ${decision}`)).toEqual(["held denied"]);
  });

  it("an abort from the caller stops the run, and nothing it started is left", async () => {
    const marker = uniqueMarker();
    const controller = new AbortController();
    const ready = tool({
      name: "ready",
      description: "Ready",
      parameters: z.object({}),
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
      () => ({ text: "after the abort" }),
    ]);
    const reports: RunReport[] = [];
    const code = codeTool({ tools: [ready], pool: false, onReport: (report) => reports.push(report) });
    const ended = await run(new Agent({ name: "Assistant", model, tools: [code] }), "go", { signal: controller.signal }).then(
      (result) => `resolved: ${String(result.finalOutput)}`,
      (error: Error) => `rejected: ${error.message}`,
    );
    expect(ended).toBe("rejected: the user left");
    await expect.poll(() => reports.length, { timeout: 10_000 }).toBe(1);
    expect(reports[0]!.failure?.code).toBe("Aborted");
    expect(await goneWithin(marker, 5000)).toEqual([]);
  });

  it("a tool that reads its signal gets one that aborts with the code tool call's signal", async () => {
    const controller = new AbortController();
    let aborted: boolean | undefined;
    const waits = tool({
      name: "waits",
      description: "Waits for its signal",
      parameters: z.object({}),
      execute: async (_input, _context, details) => {
        const signal = details!.signal!;
        const stopped = new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        controller.abort(new Error("the user left"));
        await stopped;
        aborted = signal.aborted;
        return "stopped";
      },
    });
    const code = codeTool({ tools: [waits], pool: false });
    const output = await code.invoke(new RunContext(), JSON.stringify({ code: 'await ears.call("waits", {});\nreturn 1;' }), {
      toolCall: { type: "function_call", callId: "call-1", name: "run_code", arguments: "" },
      signal: controller.signal,
    });
    expect(aborted).toBe(true);
    expect(output).toMatchObject({ status: "failure", code: "Aborted" });
  });

  it("runs when invoked without a run context, and refuses bad options", async () => {
    const code = codeTool({ tools: [], pool: false, name: "code" });
    const output = await code.invoke(new RunContext(), JSON.stringify({ code: "return 6 * 7;" }));
    expect(output).toEqual({ status: "success", content: "", structured: 42 });
    expect(() => codeTool({ tools: {} as never })).toThrow("codeTool: options.tools must be an array of function tools");
    expect(() => codeTool({ tools: [], name: "" })).toThrow("codeTool: options.name must be a non-empty string");
    const { tools } = weatherTools();
    expect(() => codeTool({ tools: [tools[0]!, tools[0]!] })).toThrow('codeTool: two tools are named "get_weather"');
  });
});
