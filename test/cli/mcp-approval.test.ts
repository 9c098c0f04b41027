/**
 * `ears mcp --approve NAME,...` (issue 31), driven by the MCP SDK's own Client over stdio: a client that
 * declares elicitation is asked (approve, decline, cancel); one that does not gets the pause and resumes
 * it with resume_code. The handlers count their runs in a file, so "ran once" and "never ran" are the
 * test's own observations.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { EARS } from "../helpers/spawn-ears.js";

/** The one text of a result, without the note every --no-sandbox result ends with (these tests run unconfined). */
function textOf(result: unknown): string {
  const { content } = result as { content: { type: string; text: string }[] };
  expect(content).toHaveLength(1);
  const note = "\n\nNote: ears mcp runs bodies without a sandbox (--no-sandbox)";
  const text = content[0]!.text;
  return text.includes(note) ? text.slice(0, text.indexOf(note)) : text;
}

// A call that does not need approval, then one that does; the body returns what each answered.
const BODY =
  'const p = await ears.call("peek", { n: 1 });\n' +
  'const s = await ears.call("send", { to: input });\n' +
  "const show = (r) => (r.status === 'success' ? r.content : r.code + ': ' + r.content);\n" +
  "return show(p) + ' / ' + show(s);";

describe.runIf(process.platform === "linux")("ears mcp --approve", () => {
  let dir: string;
  let ran: string;
  const clients: Client[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-mcp-approve-"));
    ran = join(dir, "ran.ndjson");
    writeFileSync(
      join(dir, "caps.mjs"),
      `import { appendFileSync } from "node:fs";\n` +
        `const log = (name, args) => appendFileSync(${JSON.stringify(ran)}, JSON.stringify([name, args]) + "\\n");\n` +
        `export function send(args) { log("send", args); return "sent to " + args.to; }\n` +
        `export function peek(args) { log("peek", args); return "peeked"; }\n`,
    );
  });
  afterAll(async () => {
    for (const client of clients) await client.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => rmSync(ran, { force: true }));
  const runs = () =>
    existsSync(ran)
      ? readFileSync(ran, "utf8")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line) as [string, unknown])
      : [];

  async function connect(
    options: {
      elicit?: (message: string) => ElicitResult | Promise<ElicitResult>;
      approve?: boolean;
      pool?: string;
      extra?: string[];
    } = {},
  ) {
    const args = [
      EARS,
      "mcp",
      "--pool",
      options.pool ?? "0",
      ...(options.extra ?? []),
      "--capabilities",
      "caps.mjs",
      "--allow",
      "send,peek",
    ];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: options.approve === false ? args : [...args, "--approve", "send"],
      cwd: dir,
      stderr: "pipe",
    });
    transport.stderr?.on("data", () => {});
    const client = new Client({ name: "test", version: "1" }, { capabilities: options.elicit === undefined ? {} : { elicitation: {} } });
    const asked: string[] = [];
    if (options.elicit !== undefined) {
      const answer = options.elicit;
      client.setRequestHandler(ElicitRequestSchema, async (request) => {
        const { message } = request.params as { message: string };
        asked.push(message);
        return answer(message);
      });
    }
    await client.connect(transport);
    clients.push(client);
    return { client, asked };
  }
  const runCode = (client: Client, to: string) => client.callTool({ name: "run_code", arguments: { code: BODY, input: to } });

  describe("a client with elicitation is asked", () => {
    it("accept with approve true: the handler runs once; the question names the call and its arguments", async () => {
      const { client, asked } = await connect({ elicit: () => ({ action: "accept", content: { approve: true } }) });
      const result = await runCode(client, "ada");
      expect(textOf(result)).toBe('"peeked / sent to ada"');
      expect(asked).toEqual(['A code body run by ears calls send {"to":"ada"}\nApprove this call?']);
      expect(runs()).toEqual([
        ["peek", { n: 1 }],
        ["send", { to: "ada" }],
      ]);
    });

    it("decline, cancel, or accept without approve true: denied with a reason, and the handler never runs", async () => {
      const answers: ElicitResult[] = [{ action: "decline" }, { action: "cancel" }, { action: "accept", content: { approve: false } }];
      const { client } = await connect({ elicit: () => answers.shift()! });
      const texts = [];
      for (let i = 0; i < 3; i++) texts.push(textOf(await runCode(client, "bob")));
      expect(texts).toEqual([
        expect.stringMatching(/^"peeked \/ ApprovalDenied: .*the MCP client's user declined it/),
        expect.stringMatching(/^"peeked \/ ApprovalDenied: .*the MCP client's user cancelled the question/),
        expect.stringMatching(/^"peeked \/ ApprovalDenied: .*the MCP client's user did not approve it/),
      ]);
      expect(runs().filter(([name]) => name === "send")).toEqual([]);
    });
  });

  it("a body that opens 500 questions at once: one is open at a time, 32 wait at most, the rest are denied unasked", async () => {
    let open = 0;
    let mostOpen = 0;
    // The barrier: the first question is answered only once the body's "peek" ran, i.e. after the host read (and
    // admitted, in order) all 500 calls before it; so exactly the first 32 can be waiting then.
    const peeked = async () => {
      while (!runs().some(([name]) => name === "peek")) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const { client, asked } = await connect({
      elicit: async () => {
        open++;
        mostOpen = Math.max(mostOpen, open);
        await peeked();
        open--;
        return { action: "accept", content: { approve: true } };
      },
    });
    const body =
      'const sends = Array.from({ length: 500 }, (_, i) => ears.call("send", { to: "r" + i }));\n' +
      'await ears.call("peek", { n: 500 });\n' +
      "const results = await Promise.all(sends);\n" +
      'const denied = results.filter((r) => r.status === "failure");\n' +
      "return { sent: results.length - denied.length, denied: denied.length, codes: [...new Set(denied.map((r) => r.code))], " +
      "reason: denied[0] && denied[0].content };";
    const result = await client.callTool({ name: "run_code", arguments: { code: body } });
    const answer = JSON.parse(textOf(result)) as { sent: number; denied: number; codes: string[]; reason: string };
    expect(mostOpen).toBe(1);
    expect(asked).toHaveLength(32);
    expect(answer).toMatchObject({ sent: 32, denied: 468, codes: ["ApprovalDenied"] });
    expect(answer.reason).toMatch(/32 calls already wait for approval in this session .* did not run/);
    expect(runs().filter(([name]) => name === "send")).toHaveLength(32);
  });

  it("without elicitation, a run pauses with at most 32 pending calls; the rest are denied unasked", async () => {
    const { client } = await connect({});
    const body =
      'const sends = await Promise.all(Array.from({ length: 100 }, (_, i) => ears.call("send", { to: "r" + i })));\n' +
      "return sends.length;";
    const text = textOf(await client.callTool({ name: "run_code", arguments: { code: body } }));
    // The run pauses at the first call held; the calls not yet admitted then are dropped (made again on resume).
    const pending = Number(/^The run paused: (\d+) calls? waits? for approval/.exec(text)?.[1]);
    expect(pending).toBeGreaterThanOrEqual(1);
    expect(pending).toBeLessThanOrEqual(32);
    expect(runs()).toEqual([]);
  });

  it("a run_code call cancelled while its question is open: the question is withdrawn, the handler never runs", async () => {
    let withdrawn: () => void = () => {};
    const gone = new Promise<void>((resolve) => (withdrawn = resolve));
    let asked: () => void = () => {};
    const open = new Promise<void>((resolve) => (asked = resolve));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [EARS, "mcp", "--pool", "0", "--no-sandbox", "--capabilities", "caps.mjs", "--allow", "send,peek", "--approve", "send"],
      cwd: dir,
      stderr: "pipe",
    });
    transport.stderr?.on("data", () => {});
    const client = new Client({ name: "test", version: "1" }, { capabilities: { elicitation: {} } });
    let questions = 0;
    client.setRequestHandler(ElicitRequestSchema, (_request, extra) => {
      // The first question is answered: its request id is 0, and the SDK's Protocol ignores a cancellation
      // of request 0 (`if (!requestId) return`), so only a later question can show the withdrawal.
      if (questions++ === 0) return Promise.resolve<ElicitResult>({ action: "accept", content: { approve: true } });
      asked();
      // Never answered: only ears' cancellation ends it.
      return new Promise<ElicitResult>((resolve) =>
        extra.signal.addEventListener("abort", () => {
          withdrawn();
          resolve({ action: "cancel" });
        }),
      );
    });
    await client.connect(transport);
    clients.push(client);
    expect(textOf(await client.callTool({ name: "run_code", arguments: { code: BODY, input: "hal" } }))).toBe('"peeked / sent to hal"');
    const stop = new AbortController();
    const call = client.callTool({ name: "run_code", arguments: { code: BODY, input: "gus" } }, undefined, { signal: stop.signal });
    await open;
    stop.abort(new Error("the user gave up"));
    await expect(call).rejects.toThrow(/gave up/);
    await gone;
    expect(runs().filter(([name]) => name === "send")).toEqual([["send", { to: "hal" }]]);
    const next = await client.callTool({ name: "run_code", arguments: { code: "return 'still here';" } });
    expect(textOf(next)).toBe('"still here"');
  });

  describe("a client without elicitation gets the pause, and resume_code goes on", () => {
    let client: Client;
    beforeAll(async () => {
      ({ client } = await connect({ pool: "1" }));
    });
    /** run_code's paused answer: the pending ids and the token, as a model would read them. */
    async function paused(to: string) {
      const text = textOf(await runCode(client, to));
      expect(text).toMatch(
        /^The run paused: 1 call waits for approval, and the body stopped there\.\nPending:\n {2}id 2: send \{"to":"\w+"\}\n/,
      );
      const token = text.slice(text.indexOf("Token:\n") + "Token:\n".length);
      return { text, token: JSON.parse(token) as Record<string, unknown>, id: /id (\d+):/.exec(text)![1]! };
    }

    it("with --no-sandbox the note comes before the pause, so the token still runs to the end of the text", async () => {
      const { client: unconfined } = await connect({ extra: ["--no-sandbox"] });
      const text = textOf(await runCode(unconfined, "dee"));
      expect(text).toMatch(/^Note: ears mcp runs bodies without a sandbox \(--no-sandbox\)[^\n]*\n\nThe run paused: 1 call waits/);
      const token = JSON.parse(text.slice(text.indexOf("Token:\n") + "Token:\n".length)) as { v?: unknown };
      expect(typeof token).toBe("object");
      expect(runs()).toEqual([["peek", { n: 1 }]]);
    });

    it("lists resume_code beside run_code", async () => {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["run_code", "resume_code"]);
    });

    it("approve on resume: the earlier call is not run again, the approved one runs once", async () => {
      const { token, id } = await paused("cy");
      expect(runs()).toEqual([["peek", { n: 1 }]]);
      const result = await client.callTool({ name: "resume_code", arguments: { token, decisions: { [id]: { approved: true } } } });
      expect(textOf(result)).toBe('"peeked / sent to cy"');
      expect(runs()).toEqual([
        ["peek", { n: 1 }],
        ["send", { to: "cy" }],
      ]);
      // The same token a second time: refused before anything runs, so the message is not sent twice.
      const again = await client.callTool({ name: "resume_code", arguments: { token, decisions: { [id]: { approved: true } } } });
      expect(again.isError).toBe(true);
      expect(textOf(again)).toMatch(/^resume_code: resumeCode: this token was already resumed .*nothing was run$/);
      expect(runs()).toEqual([
        ["peek", { n: 1 }],
        ["send", { to: "cy" }],
      ]);
    });

    it("deny on resume (the token as text): ApprovalDenied with the reason given, and the handler never runs", async () => {
      const { token, id } = await paused("di");
      const result = await client.callTool({
        name: "resume_code",
        arguments: { token: JSON.stringify(token), decisions: { [id]: { approved: false, reason: "not today" } } },
      });
      expect(textOf(result)).toMatch(/^"peeked \/ ApprovalDenied: .*not today/);
      expect(runs()).toEqual([["peek", { n: 1 }]]);
    });

    it("a changed token, one from another ears mcp process, or bad decisions are refused, and nothing runs", async () => {
      const { token, id } = await paused("ed");
      const tampered = { ...token, payload: String(token.payload).replace('"ed"', '"eve"') };
      const refused = await client.callTool({
        name: "resume_code",
        arguments: { token: tampered, decisions: { [id]: { approved: true } } },
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/^resume_code: .*signature/i);

      const { client: other } = await connect({ elicit: () => ({ action: "accept", content: { approve: true } }) });
      const foreign = await other.callTool({ name: "resume_code", arguments: { token, decisions: { [id]: { approved: true } } } });
      expect(foreign.isError).toBe(true);
      expect(textOf(foreign)).toMatch(/^resume_code: .*signature/i);

      const unknownId = await client.callTool({ name: "resume_code", arguments: { token, decisions: { "99": { approved: true } } } });
      expect(textOf(unknownId)).toMatch(/^resume_code: .*"99", not pending in the token/);
      const badShape = await client.callTool({ name: "resume_code", arguments: { token, decisions: { [id]: "yes" } } });
      expect(textOf(badShape)).toBe(
        `resume_code: decisions["${id}"] must be {"approved": true} or {"approved": false, "reason": "..."}; nothing was run`,
      );
      expect(runs()).toEqual([["peek", { n: 1 }]]);
    });
  });

  it("without --approve (and no handler that asks) there is no resume_code tool", async () => {
    const { client } = await connect({ approve: false });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["run_code"]);
  });
});
