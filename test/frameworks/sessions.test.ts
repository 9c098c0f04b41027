/**
 * Sessions in the framework adapters: one code tool, a session per conversation (found from the call's
 * context), three turns over one workspace: a file written in turn 1, transformed in turn 2, an image
 * named in turn 3 that reaches the model as the framework's image part, and the host taking the file out
 * after turn 3. Here the Agents SDK with a scripted model; the AI SDK 6 and 7, each with its own mock model,
 * run the same turns in test/frameworks/ai-sdks.test.ts.
 */
import { Agent, run, Usage, user, type AgentInputItem, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { afterAll, describe, expect, it } from "vitest";
import { createCodeTool } from "../../src/frameworks/ai.js";
import { codeTool } from "../../src/frameworks/openai-agents.js";
import { createSession, type Session } from "../../src/host/index.js";
import { bwrapPath } from "../helpers/has-bwrap.js";

const canRun = process.platform === "linux" && process.getuid?.() === 0 && bwrapPath !== undefined;

/** A 1x1 PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
const TURNS = [
  `${FS}fs.writeFileSync("notes.txt", "hello from turn one");\nreturn "written";`,
  `${FS}fs.writeFileSync("upper.txt", fs.readFileSync("notes.txt", "utf8").toUpperCase());\n` + 'return fs.readdirSync(".").sort();',
  `${FS}fs.writeFileSync("chart.png", Buffer.from("${PNG}", "base64"));\n` +
    'return { chart: "chart.png", size: fs.statSync("upper.txt").size };',
];

describe.runIf(canRun)("sessions in the code tools", () => {
  const sessions = new Map<string, Session>();
  const sessionFor = async (conversation: string) => {
    let session = sessions.get(conversation);
    if (session === undefined) {
      session = await createSession();
      sessions.set(conversation, session);
    }
    return session;
  };
  afterAll(async () => {
    for (const session of sessions.values()) await session.close();
  });

  it("Agents SDK: three turns in one session (from the run context); the image comes back as an image item", async () => {
    const inputs: string[] = [];
    let index = 0;
    const model: Model = {
      async getResponse(request: ModelRequest): Promise<ModelResponse> {
        inputs.push(JSON.stringify(request.input));
        const turn = Math.floor(index / 2);
        const code = index % 2 === 0 ? TURNS[turn] : undefined;
        index++;
        const output: ModelResponse["output"] =
          code !== undefined
            ? [
                {
                  type: "function_call",
                  callId: `call-${index}`,
                  name: "run_code",
                  arguments: JSON.stringify({ code }),
                  status: "completed",
                },
              ]
            : [
                {
                  type: "message",
                  role: "assistant",
                  status: "completed",
                  content: [{ type: "output_text", text: `turn ${turn + 1} done` }],
                },
              ];
        return { usage: new Usage(), output };
      },
      getStreamedResponse() {
        throw new Error("the scripted model does not stream");
      },
    };
    const agent = new Agent<{ conversation: string }>({
      name: "Assistant",
      model,
      tools: [
        codeTool({
          tools: [],
          pool: false,
          session: (runContext) => sessionFor((runContext.context as { conversation: string }).conversation),
        }),
      ],
    });
    let history: AgentInputItem[] = [];
    for (const text of ["write it", "transform it", "chart it"]) {
      const result = await run(agent, [...history, user(text)], { context: { conversation: "agents-1" } });
      history = result.history;
    }
    const results = (JSON.parse(inputs.at(-1)!) as { type: string; output?: unknown }[]).filter(
      (item) => item.type === "function_call_result",
    );
    expect(results).toHaveLength(3);
    expect(JSON.stringify(results[0]!.output)).toContain('\\"structured\\":\\"written\\"');
    expect(JSON.stringify(results[1]!.output)).toContain('\\"structured\\":[\\"notes.txt\\",\\"upper.txt\\"]');
    // Turn 3's output: a text item with the result, and the image as an image item.
    const third = JSON.stringify(results[2]!.output);
    expect(third).toContain('\\"structured\\":{\\"chart\\":\\"chart.png\\",\\"size\\":19}');
    expect(third).toContain(PNG);
    expect(third).toMatch(/"type":"input_image"|"type":"image"/);
    expect((await sessions.get("agents-1")!.readFile("upper.txt")).toString()).toBe("HELLO FROM TURN ONE");
  });

  it("a session option that is no session is refused; one that cannot be had is a failure the model reads", async () => {
    expect(() => createCodeTool({ tools: {}, session: {} as never })).toThrow(/options.session must be a session/);
    expect(() => codeTool({ tools: [], session: 3 as never })).toThrow(/options.session must be a session/);
    const code = createCodeTool({
      tools: {},
      pool: false,
      session: () => {
        throw new Error("no such conversation");
      },
    });
    let last: unknown;
    for await (const value of code.execute!({ code: "return 1" }, { toolCallId: "c", messages: [] }) as AsyncIterable<unknown>)
      last = value;
    expect(last).toEqual({ status: "failure", code: "SessionUnavailable", content: "the code tool's session: no such conversation" });
  });
});
