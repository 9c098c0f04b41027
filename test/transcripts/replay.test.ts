import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { Capabilities } from "../../src/host/index.js";
import type { Json } from "../../src/protocol/json.js";
import { Outcome } from "../../src/protocol/outcome.js";
import type { GuestProgram } from "../../src/guest/serve.js";
import { jsonValue, outcome as anyOutcome } from "../../src/testing/arbitraries.js";
import { REPLAY_DIVERGED } from "../../src/transcripts/replay.js";
import { replay } from "../../src/testing/replay.js";
import { testGuest } from "../../src/testing/test-guest.js";
import { recordTo, type TranscriptEntry } from "../../src/transcripts/transcript.js";

const dir = mkdtempSync(join(tmpdir(), "ears-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files: Capabilities = {
  read: (args) => `text of ${(args as { path: string }).path}`,
  list: () => Outcome.success("a\nb", ["a", "b"]),
};

/** A guest that reads the given paths in order, then lists, and returns what it read. */
const reader =
  (paths: string[], extra: Json = null): GuestProgram =>
  async (ears) => {
    const texts = [];
    for (const path of paths) texts.push((await ears.call("read", { path })).content);
    await ears.call("list", {});
    return extra === null ? texts : { texts, extra };
  };

async function record(program: GuestProgram, options: { input?: Json } = {}): Promise<TranscriptEntry[]> {
  const report = await testGuest(program, { ...options, capabilities: files });
  expect(report.outcome).toBeDefined();
  return report.transcript;
}

describe("replay", () => {
  it("passes a guest that makes the recorded requests and returns the recorded result", async () => {
    const transcript = await record(reader(["a", "b"]), { input: { any: "input" } });
    let seenInput: Json | undefined;
    const replayed = await replay(transcript, {
      run: async (ears, input) => {
        seenInput = input;
        expect(ears.allowed).toEqual(["read", "list"]);
        return reader(["a", "b"])(ears, input);
      },
    });
    expect(replayed).toMatchObject({ ok: true, stopped: false, matchedRequests: 3, recordedRequests: 3 });
    expect(replayed.divergence).toBeUndefined();
    expect(seenInput).toEqual({ any: "input" });
    expect(replayed.report.outcome).toEqual({ status: "success", content: "", structured: ["text of a", "text of b"] });
  });

  it("stops at the first request that differs and says which, with both versions", async () => {
    const transcript = await record(reader(["x", "y", "a"]));
    let reply: Outcome | undefined;
    const replayed = await replay(transcript, {
      run: async (ears) => {
        await ears.call("read", { path: "x" });
        await ears.call("read", { path: "y" });
        reply = await ears.call("read", { path: "b" });
        return "never compared";
      },
    });
    expect(replayed.ok).toBe(false);
    expect(replayed.stopped).toBe(true);
    expect(replayed.divergence).toBe('request #3: expected read {"path":"a"} but the guest sent read {"path":"b"}');
    expect(replayed.matchedRequests).toBe(2);
    // The diverging request is answered with a failure that says why, not left hanging.
    expect(reply).toMatchObject({ status: "failure", code: REPLAY_DIVERGED, content: `the replay stopped: ${replayed.divergence}` });
  });

  it("ends the run at a divergence even when the guest would go on waiting", async () => {
    const transcript = await record(reader(["a"]));
    const replayed = await replay(transcript, {
      run: async (ears) => {
        await ears.call("list", {});
        await new Promise(() => {});
      },
    });
    expect(replayed.divergence).toBe('request #1: expected read {"path":"a"} but the guest sent list {}');
    expect(replayed.stopped).toBe(true);
    expect(replayed.report.failure?.code).toBe("Aborted");
  });

  it("compares arguments as JSON values, not as text", async () => {
    const transcript = await record(async (ears) => ears.call("read", { path: "a", options: { x: 1, y: [2] } }));
    const replayed = await replay(transcript, { run: async (ears) => ears.call("read", { options: { y: [2], x: 1 }, path: "a" }) });
    expect(replayed.ok).toBe(true);
  });

  it("points at the first difference when the values are too long to show whole", async () => {
    const long = "x".repeat(300);
    const transcript = await record(async (ears) => ears.call("read", { path: "a", pad: long, list: [1, { deep: "same" }] }));
    const replayed = await replay(transcript, {
      run: async (ears) => ears.call("read", { path: "a", pad: long, list: [1, { deep: "changed" }] }),
    });
    expect(replayed.divergence).toMatch(
      /^request #1: expected read \{.*… \(\d+ characters\) but the guest sent read \{.*… \(\d+ characters\); first difference at arguments\.list\[1\]\.deep: recorded "same", now "changed"$/,
    );
  });

  it("reports a different capability name", async () => {
    const transcript = await record(reader([]));
    const replayed = await replay(transcript, { run: async (ears) => ears.call("read", {}) });
    expect(replayed.divergence).toBe("request #1: expected list {} but the guest sent read {}");
  });

  it("reports a request past the end of the recording", async () => {
    const transcript = await record(reader(["a"]));
    const replayed = await replay(transcript, {
      run: async (ears) => {
        await reader(["a"])(ears, null);
        return ears.call("read", { path: "b" });
      },
    });
    expect(replayed.divergence).toBe('request #3: the recording has no more requests (it has 2), but the guest sent read {"path":"b"}');
  });

  it("reports recorded requests the guest never made", async () => {
    const transcript = await record(reader(["a", "b"]));
    const replayed = await replay(transcript, { run: async (ears) => (await ears.call("read", { path: "a" })).content });
    expect(replayed.ok).toBe(false);
    expect(replayed.stopped).toBe(false);
    expect(replayed.divergence).toBe(
      'request #2: expected read {"path":"b"} but the guest made only 1 of the 3 recorded requests ' +
        'and then returned success {"content":"","structured":"text of a"}',
    );
  });

  it("compares the final result", async () => {
    const transcript = await record(reader(["a"]));
    const replayed = await replay(transcript, { run: reader(["a"], "new") });
    expect(replayed.divergence).toBe(
      'result: expected success {"content":"","structured":["text of a"]} ' +
        'but the guest returned success {"content":"","structured":{"texts":["text of a"],"extra":"new"}}',
    );
    const failing = await replay(transcript, {
      run: async (ears) => {
        await reader(["a"])(ears, null);
        throw new Error("late bug");
      },
    });
    expect(failing.divergence).toBe(
      'result: expected success {"content":"","structured":["text of a"]} ' +
        'but the guest returned failure GuestFailed {"content":"late bug"}',
    );
  });

  it("stops when the recording has no reply for a request (the recorded session ended first)", async () => {
    const full = await record(reader(["a", "b"]));
    // hello, invoke, request 1, reply 1, request 2
    const cut = full.slice(0, full.findIndex((e) => "frame" in e && (e.frame as { type: string }).type === "reply") + 2);
    const replayed = await replay(cut, { run: reader(["a", "b"]) });
    expect(replayed.ok).toBe(false);
    expect(replayed.stopped).toBe(true);
    expect(replayed.divergence).toBe(
      'request #2 read {"path":"b"} has no reply in the recording ' +
        "(the recorded session ended before it was answered); the replay stops here",
    );
  });

  it("reports a guest that speaks another protocol (the engine refuses it as usual)", async () => {
    const transcript = await record(reader(["a"]));
    const replayed = await replay(transcript, { command: process.execPath, args: ["fixtures/guests/protocol-2.mjs"] });
    expect(replayed.divergence).toBe("hello: the recorded guest spoke protocol 1, but this guest speaks protocol 2");
    expect(replayed.stopped).toBe(false);
    expect(replayed.report.failure?.code).toBe("ProtocolMismatch");
  });

  it("reports a result the recording does not have (the recorded session ended without one)", async () => {
    const full = await record(reader(["a"]));
    const noResult = full.filter((e) => !("frame" in e && (e.frame as { type: string }).type === "result"));
    const replayed = await replay(noResult, { run: reader(["a"]) });
    expect(replayed.divergence).toBe(
      'result: the recorded session ended without a result, but the guest returned success {"content":"","structured":["text of a"]}',
    );
  });

  it("replays a transcript file written by recordTo, against a child process too", async () => {
    const path = join(dir, "echo.ndjson");
    const recorder = recordTo(path);
    const readme: Capabilities = { read: () => "0123456789" };
    const program: GuestProgram = async (ears, input) => {
      const outcome = await ears.call("read", { path: "README.md" });
      return { echo: input, length: outcome.content.length };
    };
    await testGuest(program, { input: { n: 1 }, capabilities: readme, onFrame: recorder.onFrame });
    await recorder.close();
    expect((await replay(path, { run: program })).ok).toBe(true);
    // fixtures/guests/echo.mjs does the same call and returns the same shape, plus logs (not compared).
    const child = await replay(path, { command: process.execPath, args: ["fixtures/guests/echo.mjs"] });
    expect(child.divergence).toBeUndefined();
    expect(child.ok).toBe(true);
    expect(child.report.exit).toEqual({ code: 0, signal: null });
  });

  it("passes any recorded session of scripted calls, and pinpoints any changed argument", async () => {
    const step = fc.record({ name: fc.constantFrom("read", "list", "search"), args: jsonValue({ maxDepth: 2 }), reply: anyOutcome() });
    const scenario = fc
      .array(step, { minLength: 1, maxLength: 6 })
      .chain((steps) => fc.record({ steps: fc.constant(steps), changed: fc.nat(steps.length - 1) }));
    await fc.assert(
      fc.asyncProperty(scenario, async ({ steps, changed }) => {
        const program =
          (calls: typeof steps): GuestProgram =>
          async (ears) => {
            const replies = [];
            for (const c of calls) replies.push(Outcome.toJson(await ears.call(c.name, c.args)));
            return replies;
          };
        let next = 0;
        const scripted: Capabilities = {};
        for (const name of ["read", "list", "search"]) scripted[name] = () => steps[next++]!.reply;
        const recorded = await testGuest(program(steps), { capabilities: scripted });
        const same = await replay(recorded.transcript, { run: program(steps) });
        expect(same.ok).toBe(true);
        expect(same.report.outcome).toEqual(recorded.outcome);

        const altered = steps.map((s, i) => (i === changed ? { ...s, args: { changed: s.args } } : s));
        const diverged = await replay(recorded.transcript, { run: program(altered) });
        expect(diverged.ok).toBe(false);
        expect(diverged.divergence).toMatch(new RegExp(`^request #${changed + 1}: expected ${steps[changed]!.name} `));
        expect(diverged.matchedRequests).toBe(changed);
      }),
      { numRuns: 40 },
    );
  });
});
