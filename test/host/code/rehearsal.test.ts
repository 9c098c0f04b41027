/**
 * The code runner's warm frame and rehearsal (wire/PROTOCOL.md section 12, src/guest/code-rehearsal.ts):
 * a runner told it has time rehearses a made-up session in its own process before its body, and nothing
 * of that reaches the host (no frame, no call) or the body (no global, no handler on `process`). The
 * runner is spoken to by hand here, as a real child process, and through a real run pool.
 */
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRunPool, runCode, type RunPool } from "../../../src/host/index.js";
import { codeRunner } from "../../../src/host/code/code-launch.js";
import { encodeBodyFrame, WARM_FRAME } from "../../../src/protocol/code-body.js";
import { StreamWire } from "../../../src/wires/stream-wire.js";
import { sendFrame } from "../../../src/wires/wire.js";
import { REHEARSAL_BODY } from "../../../src/guest/code-rehearsal.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { within } from "../../helpers/spawned-guest.js";

failOnUnhandledRejections();

const pools: RunPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

const invoke = (allowed: string[], input: unknown = null) => JSON.stringify({ type: "invoke", protocol: 1, allowed, input });

/** What the body sees of its process: every global's name, and the listeners on `process` that matter. */
const LOOK_AROUND = `return {
  globals: Object.getOwnPropertyNames(globalThis).sort(),
  listeners: ["uncaughtException", "unhandledRejection", "exit", "beforeExit", "warning"].map((name) => process.listenerCount(name)),
  stdinListeners: process.stdin.listenerCount("data"),
};`;

/**
 * Starts the runner unconfined, writes `lines` (each then a newline) once its hello is out, answers each
 * request with `reply`, and resolves with everything it wrote and its exit code.
 */
async function converse(lines: string[], reply?: (request: { id: number; name: string }) => unknown) {
  const child = spawn(process.execPath, [codeRunner()], { cwd: tmpdir(), stdio: ["pipe", "pipe", "pipe"], env: {} });
  const out: string[] = [];
  let err = "";
  let held = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => {
    held += chunk.toString();
    for (let end = held.indexOf("\n"); end >= 0; end = held.indexOf("\n")) {
      const line = held.slice(0, end);
      held = held.slice(end + 1);
      out.push(line);
      const frame = JSON.parse(line) as { type: string; id: number; name: string };
      if (frame.type === "hello") for (const text of lines) child.stdin.write(`${text}\n`);
      if (frame.type === "request" && reply !== undefined) {
        child.stdin.write(`${JSON.stringify({ type: "reply", id: frame.id, outcome: reply(frame) })}\n`);
      }
      if (frame.type === "result") child.stdin.end();
    }
  });
  const code = await within(new Promise<number | null>((resolve) => child.once("exit", resolve)), "the runner");
  return { out: out.map((line) => JSON.parse(line) as Record<string, unknown>), err, code };
}

describe("the code runner's warm frame", () => {
  it("rehearses, then serves the real body: the host sees only the body's frames, its first call numbered 1", async () => {
    const body = 'const r = await ears.call("add", { a: 1, b: 2 }); await ears.log("mine"); return r.structured.sum;';
    const { out, err, code } = await converse([WARM_FRAME, encodeBodyFrame(body), invoke(["add"])], () => ({
      status: "success",
      content: "",
      structured: { sum: 3 },
    }));
    expect(code).toBe(0);
    expect(err).toBe("");
    expect(out.map((frame) => frame.type)).toEqual(["hello", "request", "log", "result"]);
    expect(out[1]).toMatchObject({ id: 1, name: "add", arguments: { a: 1, b: 2 } });
    expect(out[2]).toMatchObject({ content: "mine" });
    expect(out[3]).toMatchObject({ outcome: { status: "success", structured: 3 } });
    expect(JSON.stringify(out)).not.toContain("rehearsal");
  });

  it("leaves the body the same process a runner that did not rehearse gives it: globals and process listeners", async () => {
    const asked = [encodeBodyFrame(LOOK_AROUND), invoke([])];
    const [cold, warmed] = await Promise.all([converse(asked), converse([WARM_FRAME, ...asked])]);
    expect(cold.code).toBe(0);
    expect(warmed.code).toBe(0);
    const seen = (run: typeof cold) => (run.out.at(-1) as { outcome: { structured: unknown } }).outcome.structured;
    expect(seen(warmed)).toEqual(seen(cold));
  });

  it("a body that fails after a rehearsal is reported at its own line, as without one", async () => {
    const body = 'const x = 1;\nthrow new Error("boom");';
    const { out, code } = await converse([WARM_FRAME, encodeBodyFrame(body), invoke([])]);
    expect(code).toBe(0);
    expect(out.at(-1)).toMatchObject({ outcome: { status: "failure", code: "GuestFailed", content: "boom (at code.ts:2:7)" } });
  });

  it("takes one warm frame, first, exactly as written: a second one, a spaced one, or one after the body breaks the session", async () => {
    const body = encodeBodyFrame("return 1;");
    for (const lines of [
      [WARM_FRAME, WARM_FRAME, body, invoke([])],
      ['{ "type": "warm" }', body, invoke([])],
      [`${WARM_FRAME} `, body, invoke([])],
    ]) {
      const { out, err, code } = await converse(lines);
      expect(code, lines[0]).toBe(1);
      expect(err).toContain("not a body frame");
      expect(out.map((frame) => frame.type)).toEqual(["hello"]);
    }
    const late = await converse([body, WARM_FRAME, invoke([])]);
    expect(late.code).toBe(1);
    expect(late.err).toMatch(/instead of invoke|where invoke was expected/);
    expect(late.out.map((frame) => frame.type)).toEqual(["hello"]);
  });

  it("a host that closes after the warm frame gets the usual end, and no code runs", async () => {
    const child = spawn(process.execPath, [codeRunner()], { cwd: tmpdir(), stdio: ["pipe", "pipe", "pipe"], env: {} });
    let err = "";
    let out = "";
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stdin.end(`${WARM_FRAME}\n`);
    const code = await within(new Promise((resolve) => child.once("exit", resolve)), "the runner");
    expect(code).toBe(1);
    expect(err).toContain("closed the connection before sending invoke");
    expect(out.trim().split("\n")).toHaveLength(1);
  });

  it("the rehearsal's body is a body runCode accepts (it is compiled as one)", async () => {
    const report = await runCode({
      code: REHEARSAL_BODY,
      sandbox: false,
      input: { n: 1 },
      capabilities: { rehearsal: () => ({ n: 2 }) },
    });
    expect(report).toMatchObject({ ok: true, outcome: { structured: { n: 3 } } });
  });
});

describe("pooled runners rehearse", () => {
  it("a pooled run's transcript, calls and body's view are those of a cold run", async () => {
    const pool = createRunPool({ size: 1, sandbox: false });
    pools.push(pool);
    const code = `await ears.call("add", { a: 1, b: 2 });\n${LOOK_AROUND}`;
    const run = async (withPool: boolean) => {
      const frames: string[] = [];
      const report = await runCode({
        code,
        sandbox: false,
        capabilities: { add: (args) => ({ sum: (args as { a: number; b: number }).a + (args as { a: number; b: number }).b }) },
        onFrame: (_direction, line) => frames.push(line),
        ...(withPool && { pool }),
      });
      return { report, frames };
    };
    const cold = await run(false);
    const pooled = await run(true);
    expect(pooled.report).toMatchObject({ ok: true, pooled: true });
    expect(cold.report).toMatchObject({ ok: true });
    expect(pooled.report.calls.map((call) => [call.id, call.name])).toEqual([[1, "add"]]);
    expect(cold.report.calls.map((call) => [call.id, call.name])).toEqual([[1, "add"]]);
    expect(pooled.report.outcome).toEqual(cold.report.outcome);
    const types = (frames: string[]) => frames.map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types(pooled.frames)).toEqual(types(cold.frames));
    expect(pooled.frames.join("\n")).not.toContain("rehearsal");
    expect(pooled.frames.find((line) => line.includes('"type":"request"'))).toContain('"id":1');
  });
});

describe("a pooled runner a run is already waiting for", () => {
  it("goes to that run without rehearsing; a runner that waits for a run rehearses first", async () => {
    // The frames the pool writes to each runner, in order, per wire: the rehearsal's warm frame, the body frame, ...
    const written = new Map<object, string[]>();
    const note = (wire: object, line: string) => written.set(wire, [...(written.get(wire) ?? []), line]);
    const realSend = StreamWire.prototype.send;
    const realSendFrame = StreamWire.prototype[sendFrame];
    const spySend = vi.spyOn(StreamWire.prototype, "send").mockImplementation(function (this: StreamWire, line: string) {
      note(this, line);
      return realSend.call(this, line);
    });
    const spySendFrame = vi.spyOn(StreamWire.prototype, sendFrame).mockImplementation(function (
      this: StreamWire,
      line: string,
      done: (error?: Error) => void,
    ) {
      note(this, line);
      realSendFrame.call(this, line, done);
    });
    try {
      const pool = createRunPool({ size: 1, sandbox: false });
      pools.push(pool);
      // The pool's first runner says hello with no run waiting; once it is taken, the second run waits for the next.
      while (pool.ready === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const [first, second] = await Promise.all([
        runCode({ code: 'return "first";', sandbox: false, pool }),
        runCode({ code: 'return "second";', sandbox: false, pool }),
      ]);
      expect(first).toMatchObject({ ok: true, pooled: true, outcome: { structured: "first" } });
      expect(second).toMatchObject({ ok: true, pooled: true, outcome: { structured: "second" } });
      // Which body takes the idle runner is whichever compiles first (bodies may be stripped side by side): that
      // run's runner rehearsed before its body. The other run waits for the next runner, which then gets the body
      // without a rehearsal; on a loaded CPU that runner may say hello before the run waits, and rehearse first.
      const served = [...written.values()].filter((lines) => lines.some((line) => line.includes('"type":"body"')));
      expect(served).toHaveLength(2);
      expect(served.filter((lines) => lines[0] === WARM_FRAME).length).toBeGreaterThanOrEqual(1);
      for (const lines of served) {
        const body = lines.findIndex((line) => line.includes('"type":"body"'));
        // A rehearsal comes before the body or not at all: never between a waiting run and its body.
        // (A frame may be noted twice: send() goes through the spied sendFrame.)
        expect([...new Set(lines.slice(0, body))]).toEqual(body === 0 ? [] : [WARM_FRAME]);
        expect(lines.slice(body)).not.toContain(WARM_FRAME);
      }
    } finally {
      spySend.mockRestore();
      spySendFrame.mockRestore();
    }
  });
});
