// The Ears handle over an in-memory pair: local failures never touch the wire, tool failures are values,
// and only a broken connection raises TransportError.
import { PassThrough } from "node:stream";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { Ears } from "../../src/guest/ears.js";
import { TimeoutError, TransportError } from "../../src/protocol/errors.js";
import { encodeFrame } from "../../src/protocol/frames.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { serve } from "../../src/guest/serve.js";
import type { Wire } from "../../src/wires/wire.js";
import { createLinkedPair } from "../../src/wires/memory.js";
import { streamWire } from "../../src/wires/stdio.js";
import type { Json } from "../../src/protocol/json.js";
import { resultOf, runScriptedGuest, startGuest } from "../helpers/memory-guest.js";

const ok = (content = "ok") => Outcome.success(content);

/** The error log the guest writes when the host broke the session. */
const brokenLog = (reason: string) => ({ type: "log", level: "error", content: `ears: the session with the host is broken: ${reason}` });
/** The message of the TransportError that a pending call to "read" rejects with when the session breaks. */
const brokenRead = (reason: string) =>
  `the session with the host broke while "read" waited for its reply (${reason}); the request may already have executed`;

describe("Ears.call refused locally", () => {
  it("a name outside the allowlist returns CapabilityDenied and writes nothing", async () => {
    const { frames } = await runScriptedGuest(async (ears) => ears.call("write", { path: "x" }), { allowed: ["read"] });
    const outcome = resultOf(frames);
    expect(outcome).toMatchObject({ status: "failure", code: FailureCode.CapabilityDenied });
    expect(outcome.content).toMatch(/"write" is not allowed by the host \(allowed: "read"\); nothing was sent/);
    expect(frames.map((f) => f.type)).toEqual(["result"]);
  });

  it("after close(), call returns ScopeClosed without touching the wire and log is ignored", async () => {
    const { frames } = await runScriptedGuest(
      async (ears) => {
        ears.close();
        await ears.log("dropped");
        return ears.call("read");
      },
      { allowed: ["read"], answer: () => ok() },
    );
    expect(resultOf(frames)).toMatchObject({ status: "failure", code: FailureCode.ScopeClosed });
    expect(frames.map((f) => f.type)).toEqual(["result"]);
  });

  it("after the run ended, a kept handle returns ScopeClosed and its logs are ignored", async () => {
    let kept: Ears | undefined;
    const { frames, report } = await runScriptedGuest(
      (ears) => {
        kept = ears;
      },
      { allowed: ["read"] },
    );
    expect(report.status).toBe("completed");
    expect(await kept!.call("read")).toMatchObject({ status: "failure", code: FailureCode.ScopeClosed });
    await expect(kept!.log("late")).resolves.toBeUndefined();
    expect(frames.map((f) => f.type)).toEqual(["result"]);
  });

  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  it.each<[string, unknown, RegExp]>([
    ["a BigInt", { n: 1n }, /\$\.n is a BigInt/],
    ["a cycle", cycle, /\$\.self refers back/],
    ["NaN", { x: Number.NaN }, /\$\.x is NaN/],
    ["a function", [() => 1], /\$\[0\] is a function/],
    ["undefined in an array", [1, undefined], /\$\[1\] is undefined/],
  ])("arguments holding %s return InvalidArguments without touching the wire", async (_name, args, reason) => {
    const { frames } = await runScriptedGuest(async (ears) => ears.call("read", args), { allowed: ["read"], answer: () => ok() });
    const outcome = resultOf(frames);
    expect(outcome).toMatchObject({ status: "failure", code: FailureCode.InvalidArguments });
    expect(outcome.content).toMatch(reason);
    expect(outcome.content).toMatch(/nothing was sent/);
    expect(frames.map((f) => f.type)).toEqual(["result"]);
  });

  it.each([0, -1, Number.NaN, "5"])("timeoutMs %s is a RangeError and nothing is sent", async (timeoutMs) => {
    const { frames } = await runScriptedGuest(
      async (ears) => {
        await expect(ears.call("read", null, { timeoutMs: timeoutMs as number })).rejects.toThrow(RangeError);
      },
      { allowed: ["read"] },
    );
    expect(frames).toEqual([{ type: "result", outcome: Outcome.success() }]);
  });
});

describe("Ears.call on the wire", () => {
  it("sends a request with sequential ids, undefined arguments as null, and resolves with the host's outcome as a value", async () => {
    const failure = Outcome.failure("NotFound", "no such file", { path: "x" });
    const { frames, requests } = await runScriptedGuest(
      async (ears) => {
        expect(await ears.call("read")).toEqual(failure);
        expect(await ears.call("read", { path: "y" })).toEqual(ok("y"));
        return "done";
      },
      { allowed: ["read"], answer: (r) => (r.id === 1 ? failure : ok("y")) },
    );
    expect(requests).toEqual([
      { type: "request", id: 1, name: "read", arguments: null },
      { type: "request", id: 2, name: "read", arguments: { path: "y" } },
    ]);
    expect(resultOf(frames)).toEqual(Outcome.success("", "done"));
  });

  it("correlates out-of-order replies to the right calls", async () => {
    const guest = startGuest(async (ears) =>
      Promise.all([1, 2, 3].map((n) => ears.call("read", n))).then((all) => all.map((o) => o.content)),
    );
    await guest.invoke(["read"]);
    const requests = [await guest.expect("request"), await guest.expect("request"), await guest.expect("request")];
    for (const r of [requests[2]!, requests[0]!, requests[1]!]) await guest.reply(r.id, ok(`answer ${String(r.arguments)}`));
    expect(resultOf(await guest.rest())).toEqual(Outcome.success("", ["answer 1", "answer 2", "answer 3"]));
  });

  it("aborting the signal rejects with the signal's reason; the late reply is dropped quietly", async () => {
    const reason = new Error("user gave up");
    const controller = new AbortController();
    const guest = startGuest(async (ears) => {
      const first = ears.call("read", 1, { signal: controller.signal });
      await ears.log("sent");
      await expect(first).rejects.toBe(reason);
      return (await ears.call("read", 2)).content;
    });
    await guest.invoke(["read"]);
    const first = await guest.expect("request");
    await guest.expect("log");
    controller.abort(reason);
    const second = await guest.expect("request");
    await guest.reply(first.id, ok("late"));
    await guest.reply(second.id, ok("second"));
    expect(resultOf(await guest.rest())).toEqual(Outcome.success("", "second"));
    expect((await guest.report).status).toBe("completed");
  });

  it("one signal shared by many concurrent calls aborts them all, without a listener-leak warning", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const controller = new AbortController();
      const guest = startGuest(async (ears) => {
        const calls = [...Array(50).keys()].map((i) => ears.call("read", i, { signal: controller.signal }));
        const settled = await Promise.allSettled(calls);
        return settled.map((s) => (s.status === "rejected" ? String(s.reason) : "fulfilled"));
      });
      await guest.invoke(["read"]);
      for (let i = 0; i < 50; i++) await guest.expect("request");
      await guest.reply(7, ok());
      controller.abort("stop all");
      const reasons = resultOf(await guest.rest()).structured as string[];
      expect(reasons.filter((r) => r === "stop all")).toHaveLength(49);
      expect(reasons[6]).toBe("fulfilled");
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("an already aborted signal rejects with its reason and sends nothing", async () => {
    const { frames } = await runScriptedGuest(
      async (ears) => {
        await expect(ears.call("read", null, { signal: AbortSignal.abort("stop") })).rejects.toBe("stop");
      },
      { allowed: ["read"] },
    );
    expect(frames).toEqual([{ type: "result", outcome: Outcome.success() }]);
  });

  it("timeoutMs rejects with a TimeoutError; the late reply is dropped quietly and the session goes on", async () => {
    const guest = startGuest(async (ears) => {
      const error = await ears.call("read", 1, { timeoutMs: 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as Error).message).toMatch(/"read" got no reply within 1 ms; the request may still execute/);
      await ears.log("timed out");
      return (await ears.call("read", 2)).content;
    });
    await guest.invoke(["read"]);
    const first = await guest.expect("request");
    await guest.expect("log"); // the timeout has fired
    await guest.reply(first.id, ok("late"));
    const second = await guest.expect("request");
    await guest.reply(second.id, ok("second"));
    expect(resultOf(await guest.rest())).toEqual(Outcome.success("", "second"));
  });

  it.each([2 ** 31, 2 ** 40, Infinity])("a timeoutMs of %s does not fire before a reply that comes later", async (timeoutMs) => {
    const guest = startGuest(async (ears) => (await ears.call("read", null, { timeoutMs })).content);
    await guest.invoke(["read"]);
    const request = await guest.expect("request");
    // A timer the runtime mis-set to 1 ms would fire before this one.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await guest.reply(request.id, ok("in time"));
    expect(resultOf(await guest.rest())).toEqual(Outcome.success("", "in time"));
  });

  it("a reply to an unknown id breaks the session with a TransportError saying the request may already have executed", async () => {
    const guest = startGuest(async (ears) => {
      const error = await ears.call("read").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TransportError);
      expect(error).toMatchObject({ kind: "unknown-reply", mayHaveExecuted: true });
      expect((error as Error).message).toBe(brokenRead("the host replied to request id 99, which is unknown or already answered"));
      // Later calls reject without being sent.
      const later = await ears.call("read").catch((e: unknown) => e);
      expect(later).toMatchObject({ kind: "unknown-reply", mayHaveExecuted: false });
      expect((later as Error).message).toMatch(/was not sent/);
      return "handled";
    });
    await guest.invoke(["read"]);
    await guest.expect("request");
    await guest.reply(99, ok());
    const rest = await guest.rest();
    // The violation is reported to the host before anything else the guest writes.
    expect(rest).toEqual([
      brokenLog("the host replied to request id 99, which is unknown or already answered"),
      { type: "result", outcome: Outcome.success("", "handled") },
    ]);
  });

  it("a reply that arrived before its request was written (right behind the previous reply) is an unknown-reply violation", async () => {
    const guest = startGuest(async (ears) => {
      expect((await ears.call("read", 1)).content).toBe("one");
      const error = await ears.call("read", 2).catch((e: unknown) => e);
      expect(error).toMatchObject({ kind: "unknown-reply", mayHaveExecuted: true });
      return "handled";
    });
    await guest.invoke(["read"]);
    const first = await guest.expect("request");
    // The host "answers" id 2 before the guest wrote request 2: both replies reach the guest together.
    void guest.reply(first.id, ok("one"));
    void guest.reply(first.id + 1, ok("guessed"));
    const rest = await guest.rest();
    expect(rest[0]).toMatchObject({ type: "request", id: 2 });
    expect(rest[1]).toEqual(
      brokenLog("the host replied to request id 2 before that request was written (a reply must follow its request)"),
    );
    expect(resultOf(rest)).toEqual(Outcome.success("", "handled"));
  });

  it("over a stream: a reply in the same chunk as the previous one, ahead of its request, is refused", async () => {
    const toGuest = new PassThrough();
    const fromGuest = new PassThrough();
    const served = serve({
      wire: streamWire({ input: toGuest, output: fromGuest }),
      run: async (ears) => {
        await ears.call("read", 1);
        return (await ears.call("read", 2).catch((e: unknown) => e)) as Json;
      },
    });
    const lines = createInterface({ input: fromGuest })[Symbol.asyncIterator]();
    const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
    expect(await next()).toMatchObject({ type: "hello" });
    toGuest.write(`${encodeFrame({ type: "invoke", protocol: 1, allowed: ["read"], input: null })}\n`);
    expect(await next()).toMatchObject({ type: "request", id: 1 });
    toGuest.write(
      `${encodeFrame({ type: "reply", id: 1, outcome: ok() })}\n${encodeFrame({ type: "reply", id: 2, outcome: ok("guessed") })}\n`,
    );
    expect(await next()).toMatchObject({ type: "request", id: 2 });
    expect(await next()).toMatchObject({
      type: "log",
      level: "error",
      content: expect.stringContaining("replied to request id 2 before that request was written"),
    });
    toGuest.end();
    await served;
  });

  it("a reply that arrives after its request was written is taken, however quickly the host answers", async () => {
    // The same race without the guess: each reply follows its request, even in the same turn.
    const guest = startGuest(async (ears) => {
      const answers = [];
      for (let i = 1; i <= 20; i++) answers.push((await ears.call("read", i)).content);
      return answers;
    });
    await guest.invoke(["read"]);
    for (let i = 1; i <= 20; i++) {
      const request = await guest.expect("request");
      void guest.reply(request.id, ok(`answer ${i}`));
    }
    const rest = await guest.rest();
    expect(resultOf(rest)).toEqual(
      Outcome.success(
        "",
        Array.from({ length: 20 }, (_, i) => `answer ${i + 1}`),
      ),
    );
  });

  it("a second reply to an answered id rejects the waiting call as unknown-reply", async () => {
    const guest = startGuest(async (ears) => {
      await ears.call("read", 1);
      await ears.call("read", 2);
    });
    await guest.invoke(["read"]);
    const first = await guest.expect("request");
    await guest.reply(first.id, ok());
    await guest.expect("request");
    await guest.reply(first.id, ok());
    const rest = await guest.rest();
    expect(rest.map((f) => (f.type === "log" ? f.level : f.type))).toEqual(["error", "error", "result"]);
    expect(rest[0]).toEqual(brokenLog("the host replied to request id 1, which is unknown or already answered"));
    expect(rest[1]).toMatchObject({ content: expect.stringMatching(/^TransportError: the session with the host broke while/) });
    expect(resultOf(rest)).toEqual(
      Outcome.failure(FailureCode.GuestFailed, brokenRead("the host replied to request id 1, which is unknown or already answered")),
    );
  });

  it("a frame other than a reply during the run is a protocol violation for the waiting call", async () => {
    const guest = startGuest(async (ears) => ears.call("read"));
    await guest.invoke(["read"]);
    await guest.expect("request");
    await guest.send({ type: "invoke", protocol: 1, allowed: [], input: null });
    const rest = await guest.rest();
    expect(rest[0]).toEqual(brokenLog('the host sent a "invoke" frame during the run; only replies are expected'));
    expect(resultOf(rest)).toEqual(
      Outcome.failure(FailureCode.GuestFailed, brokenRead('the host sent a "invoke" frame during the run; only replies are expected')),
    );
  });

  it("a malformed frame during the run rejects the waiting call as malformed", async () => {
    const guest = startGuest(async (ears) => ears.call("read").catch((e: TransportError) => `${e.kind}: ${e.message}`));
    await guest.invoke(["read"]);
    await guest.expect("request");
    await guest.sendLine('{"type":"reply","id":1}');
    const reason = 'the host sent a malformed frame (reply.outcome: an outcome must be an object: {"type":"reply","id":1})';
    const rest = await guest.rest();
    expect(rest).toEqual([
      brokenLog(reason),
      {
        type: "result",
        outcome: Outcome.success("", `malformed: ${brokenRead(reason)}`),
      },
    ]);
  });

  it("a host violation while no call waits is reported as an error log; the run completes normally", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const guest = startGuest(async (ears) => {
      await gate;
      const later = await ears.call("read").catch((e: TransportError) => `${e.kind}: ${e.message}`);
      await ears.log("still running");
      return later;
    });
    await guest.invoke(["read"]);
    await guest.sendLine("not json");
    // The guest reports the break on its own, while the program is still waiting on its gate.
    // (The JSON parser's own wording in the middle varies with the Node version.)
    const reason = /the host sent a malformed frame \(not JSON \(.+\): not json\)/.source;
    expect(await guest.next()).toEqual({
      type: "log",
      level: "error",
      content: expect.stringMatching(new RegExp(`^ears: the session with the host is broken: ${reason}$`)),
    });
    release();
    const rest = await guest.rest();
    expect(rest).toEqual([
      { type: "log", level: "info", content: "still running" },
      {
        type: "result",
        outcome: Outcome.success("", expect.stringMatching(new RegExp(`^malformed: ${reason}; "read" was not sent$`))),
      },
    ]);
    expect(await guest.report).toMatchObject({ status: "completed" });
  });
});

describe("end of stream and write failures", () => {
  it("EOF alone does not abort the run: a host may write the invoke and close its end", async () => {
    const guest = startGuest(async (ears, input) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await ears.log("still running");
      return { echo: input };
    });
    await guest.invoke([], "hi");
    guest.host.end();
    const frames = await guest.rest();
    expect(frames).toEqual([
      { type: "log", level: "info", content: "still running" },
      { type: "result", outcome: Outcome.success("", { echo: "hi" }) },
    ]);
  });

  it("EOF while a call waits rejects it with a TransportError; a call after EOF rejects without writing", async () => {
    const guest = startGuest(async (ears) => {
      const waiting = await ears.call("read", 1).catch((e: unknown) => e);
      expect(waiting).toBeInstanceOf(TransportError);
      expect(waiting).toMatchObject({ kind: "closed", mayHaveExecuted: true });
      expect((waiting as Error).message).toBe(
        'the host closed the connection before replying to "read"; the request may already have executed',
      );
      const after = await ears.call("read", 2).catch((e: unknown) => e);
      expect(after).toMatchObject({ kind: "closed", mayHaveExecuted: false });
      expect((after as Error).message).toMatch(/"read" was not sent/);
      return "survived";
    });
    await guest.invoke(["read"]);
    await guest.expect("request");
    guest.host.end();
    const rest = await guest.rest();
    expect(rest.map((f) => f.type)).toEqual(["result"]);
    expect(resultOf(rest)).toEqual(Outcome.success("", "survived"));
  });

  it("a write failure (EPIPE) rejects the call, silences logs, and the session ends broken", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    let writable = true;
    const failedWrites: string[] = [];
    // A user-written wire whose writes start failing the way a closed pipe does.
    const wire: Wire = {
      send: (frame) => {
        if (writable) return guestEnd.send(frame);
        failedWrites.push(JSON.parse(frame).type);
        return Promise.reject(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
      receive: () => guestEnd.receive(),
    };
    let seen: unknown;
    let logged: unknown = "pending";
    const report = serve({
      wire,
      run: async (ears) => {
        seen = await ears.call("read").catch((e: unknown) => e);
        logged = await ears.log("ignored");
      },
    });
    await hostEnd.receive(); // hello
    writable = false;
    await hostEnd.send(encodeFrame({ type: "invoke", protocol: 1, allowed: ["read"], input: null }));
    expect(await report).toMatchObject({ status: "broken", error: { kind: "write-failed" }, outcome: { status: "success" } });
    expect(seen).toBeInstanceOf(TransportError);
    expect(seen).toMatchObject({ kind: "write-failed", mayHaveExecuted: true });
    expect((seen as Error).message).toBe(brokenRead("writing to the host failed: write EPIPE"));
    expect(logged).toBeUndefined();
    // Only the request and the result were attempted: a write failure is not reported as an error log
    // (the host is not reading), and the program's log was skipped.
    expect(failedWrites).toEqual(["request", "result"]);
  });

  it("calls the program never awaited resolve to ScopeClosed, with a warning logged before the result", async () => {
    let forgotten: Promise<Outcome> | undefined;
    const { frames } = await runScriptedGuest(
      (ears) => {
        forgotten = ears.call("read");
        return "returned early";
      },
      { allowed: ["read"] },
    );
    expect(frames.map((f) => f.type)).toEqual(["request", "log", "result"]);
    expect(frames[1]).toEqual({
      type: "log",
      level: "warn",
      content: "1 call was still waiting for a reply when the program returned; await every call",
    });
    expect(await forgotten).toMatchObject({ status: "failure", code: FailureCode.ScopeClosed });
  });
});

describe("Ears.log and allowed", () => {
  it("log defaults to info, keeps any level, and goes out in call order with requests", async () => {
    const { frames } = await runScriptedGuest(
      async (ears) => {
        void ears.log("a");
        const call = ears.call("read");
        void ears.log("b", "debug");
        void ears.log("c", "custom-level");
        await call;
      },
      { allowed: ["read"], answer: () => ok() },
    );
    expect(frames.slice(0, 4)).toEqual([
      { type: "log", level: "info", content: "a" },
      { type: "request", id: 1, name: "read", arguments: null },
      { type: "log", level: "debug", content: "b" },
      { type: "log", level: "custom-level", content: "c" },
    ]);
  });

  it("allowed is the host's list, in its order, read-only", async () => {
    const { frames } = await runScriptedGuest(
      (ears) => {
        expect(ears.allowed).toEqual(["write", "read"]);
        expect(Object.isFrozen(ears.allowed)).toBe(true);
      },
      { allowed: ["write", "read"] },
    );
    expect(resultOf(frames)).toEqual(Outcome.success());
  });
});
