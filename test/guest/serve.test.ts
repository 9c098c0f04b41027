// serve: hello, one invoke, one run, exactly one result; every way the host or the program can go wrong.
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { decodeFrame, encodeFrame } from "../../src/protocol/frames.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { serve } from "../../src/guest/serve.js";
import { SDK } from "../../src/protocol/version.js";
import type { Wire } from "../../src/wires/wire.js";
import { resultOf, runScriptedGuest, startGuest } from "../helpers/memory-guest.js";

describe("serve: the session", () => {
  it("writes hello first, passes the invoke's input and allowlist, and ends with one result", async () => {
    const guest = startGuest((ears, input) => ({ input, allowed: [...ears.allowed] }));
    expect(await guest.next()).toEqual({ type: "hello", protocol: 1, sdk: SDK });
    await guest.send({ type: "invoke", protocol: 1, allowed: ["read"], input: { n: [1, "two"] } });
    expect(await guest.rest()).toEqual([{ type: "result", outcome: Outcome.success("", { input: { n: [1, "two"] }, allowed: ["read"] }) }]);
    expect(await guest.report).toEqual({
      status: "completed",
      outcome: Outcome.success("", { input: { n: [1, "two"] }, allowed: ["read"] }),
    });
  });

  it("applies the invoke's defaults: a missing input is null", async () => {
    const guest = startGuest((_ears, input) => ({ input }));
    await guest.expect("hello");
    await guest.sendLine('{"type":"invoke","protocol":1,"allowed":[],"future":"ignored"}');
    expect(resultOf(await guest.rest())).toEqual(Outcome.success("", { input: null }));
  });
});

describe("serve: what the program returns", () => {
  it("undefined becomes a success with no structured at all", async () => {
    const { frames, guest } = await runScriptedGuest(() => undefined);
    expect(resultOf(frames)).toEqual(Outcome.success());
    expect(guest.lines.at(-1)).toBe('{"type":"result","outcome":{"status":"success","content":""}}');
  });

  it("null is kept as structured: null, distinct from absent", async () => {
    const { frames, guest } = await runScriptedGuest(() => null);
    expect(resultOf(frames)).toEqual(Outcome.success("", null));
    expect(guest.lines.at(-1)).toBe('{"type":"result","outcome":{"status":"success","content":"","structured":null}}');
  });

  it("an Outcome made by the helpers is sent as it is, failure included", async () => {
    const made = Outcome.failure("NotFound", "missing", { path: "a" });
    const { frames, report } = await runScriptedGuest(() => made);
    expect(resultOf(frames)).toEqual(made);
    expect(report).toEqual({ status: "completed", outcome: made });
    const { frames: nullStructured } = await runScriptedGuest(async () => Outcome.success("x", null));
    expect(resultOf(nullStructured)).toEqual({ status: "success", content: "x", structured: null });
  });

  it("the outcome of an ears.call can be returned as the result", async () => {
    const hostOutcome = Outcome.failure("Busy", "try later");
    const { frames } = await runScriptedGuest((ears) => ears.call("read"), { allowed: ["read"], answer: () => hostOutcome });
    expect(resultOf(frames)).toEqual(hostOutcome);
  });

  it("a plain object shaped like an outcome is data, not an outcome", async () => {
    const lookalike = { status: "failure", code: "X", content: "" };
    const { frames } = await runScriptedGuest(() => lookalike);
    expect(resultOf(frames)).toEqual(Outcome.success("", lookalike));
  });

  it.each<[string, () => unknown, RegExp]>([
    [
      "an Error",
      () => {
        throw new Error("disk on fire");
      },
      /^disk on fire$/,
    ],
    [
      "a rejected promise",
      async () => {
        throw new TypeError("bad type");
      },
      /^bad type$/,
    ],
    [
      "a string",
      () => {
        throw "plain string";
      },
      /^plain string$/,
    ],
    [
      "an object",
      () => {
        throw { code: 7 };
      },
      /^\{"code":7\}$/,
    ],
    [
      "an Error without a message",
      () => {
        throw new RangeError();
      },
      /^RangeError$/,
    ],
  ])("a program that throws %s becomes GuestFailed with the message, not a crash", async (_name, run, message) => {
    const { frames, report } = await runScriptedGuest(run);
    const outcome = resultOf(frames);
    expect(outcome).toMatchObject({ status: "failure", code: FailureCode.GuestFailed });
    expect(outcome.content).toMatch(message);
    expect(report.status).toBe("completed");
  });

  it("a thrown Error's stack is logged at level error before the result", async () => {
    const { frames } = await runScriptedGuest(() => {
      throw new Error("boom");
    });
    expect(frames.map((f) => f.type)).toEqual(["log", "result"]);
    expect(frames[0]).toMatchObject({ type: "log", level: "error" });
    expect((frames[0] as { content: string }).content).toMatch(/^Error: boom\n\s+at /);
  });

  const circular: Record<string, unknown> = { name: "loop" };
  circular.self = circular;
  class Money {
    constructor(readonly cents: number) {}
  }
  it.each<[string, unknown, RegExp]>([
    ["a BigInt", { total: 12n }, /\$\.total is a BigInt/],
    ["a circular value", circular, /\$\.self refers back to one of its ancestors \(a cycle\)/],
    ["NaN", { ratio: Number.NaN }, /\$\.ratio is NaN/],
    ["Infinity", [Infinity], /\$\[0\] is Infinity/],
    ["a function", () => 1, /\$ is a function/],
    ["a Map", new Map([["a", 1]]), /\$ is a Map/],
    ["a Date", { at: new Date(0) }, /\$\.at is a Date/],
    ["a class instance", new Money(5), /\$ is a Money/],
  ])("returning %s becomes GuestFailed with a clear reason, never an altered value", async (_name, value, reason) => {
    const { frames } = await runScriptedGuest(() => value);
    const outcome = resultOf(frames);
    expect(outcome).toMatchObject({ status: "failure", code: FailureCode.GuestFailed });
    expect(outcome.content).toMatch(/^the program's return value cannot be sent as JSON unchanged: /);
    expect(outcome.content).toMatch(reason);
    expect(outcome.structured).toBeUndefined();
  });

  it("an Outcome whose structured JSON would alter becomes GuestFailed", async () => {
    const { frames } = await runScriptedGuest(() => Outcome.success("x", { n: 1n } as never));
    const outcome = resultOf(frames);
    expect(outcome).toMatchObject({ code: FailureCode.GuestFailed });
    expect(outcome.content).toMatch(/result outcome cannot be sent as JSON unchanged: structured\.n is a BigInt/);
  });
});

describe("serve: what the host sends first", () => {
  it("refuses an invoke for protocol 2: the program never runs and no result is written", async () => {
    let ran = false;
    const guest = startGuest(() => {
      ran = true;
    });
    await guest.invoke(["read"], null, 2);
    expect(await guest.rest()).toEqual([]);
    const report = await guest.report;
    expect(report.status).toBe("refused");
    expect((report as { error: TransportError }).error).toBeInstanceOf(TransportError);
    expect((report as { error: Error }).error.message).toBe(
      "the host's invoke asks for protocol 2, but this guest speaks protocol 1; the program did not run",
    );
    expect(ran).toBe(false);
  });

  it.each<[string, string, RegExp, string]>([
    ["not JSON", "Debugger listening on ws://127.0.0.1:9229", /malformed frame instead of invoke \(not JSON/, "malformed"],
    ["a JSON array", "[1,2]", /a frame must be a JSON object/, "malformed"],
    ["an invoke without allowed", '{"type":"invoke","protocol":1}', /invoke\.allowed must be an array of strings/, "malformed"],
    ["an unknown frame type", '{"type":"cancel"}', /unknown frame type "cancel"/, "malformed"],
    ["a reply", '{"type":"reply","id":1,"outcome":{"status":"success"}}', /sent a "reply" frame where invoke was expected/, "protocol"],
  ])("a first frame that is %s breaks the session before the program runs", async (_name, line, message, kind) => {
    let ran = false;
    const guest = startGuest(() => {
      ran = true;
    });
    await guest.expect("hello");
    await guest.sendLine(line);
    expect(await guest.rest()).toEqual([]);
    const report = await guest.report;
    expect(report).toMatchObject({ status: "broken", error: { kind } });
    expect((report as { error: Error }).error.message).toMatch(message);
    expect((report as { error: Error }).error.message).toMatch(/the program did not run$/);
    expect(ran).toBe(false);
  });

  it("end of stream before the invoke breaks the session with a clear error", async () => {
    const guest = startGuest(() => "never");
    await guest.expect("hello");
    guest.host.end();
    expect(await guest.rest()).toEqual([]);
    const report = await guest.report;
    expect(report).toMatchObject({ status: "broken", error: { kind: "closed" } });
    expect((report as { error: Error }).error.message).toBe(
      "the host closed the connection before sending invoke; the program did not run",
    );
  });
});

describe("serve with a user-written Wire", () => {
  /** A plain-object Wire with no close method that answers every request itself, as a host would. */
  function answeringWire(invoke: string) {
    const sent: string[] = [];
    const inbox = [invoke];
    let wake: (() => void) | undefined;
    const wire: Wire = {
      async send(line) {
        sent.push(line);
        const frame = decodeFrame(line);
        if (frame.type === "request") {
          inbox.push(encodeFrame({ type: "reply", id: frame.id, outcome: Outcome.success(`read ${String(frame.arguments)}`) }));
          wake?.();
        }
      },
      async receive() {
        while (inbox.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        return inbox.shift();
      },
    };
    return { wire, sent };
  }

  it("works with serve end to end", async () => {
    const { wire, sent } = answeringWire(encodeFrame({ type: "invoke", protocol: 1, allowed: ["read"], input: "in" }));
    const report = await serve({
      wire,
      run: async (ears, input) => {
        const outcome = await ears.call("read", "a.txt");
        await ears.log("read ok", "debug");
        return { input, content: outcome.content };
      },
    });
    expect(report).toEqual({ status: "completed", outcome: Outcome.success("", { input: "in", content: "read a.txt" }) });
    expect(sent.map((s) => decodeFrame(s).type)).toEqual(["hello", "request", "log", "result"]);
  });

  it("a wire whose send rejects at hello ends the session as broken, without rejecting serve", async () => {
    const wire: Wire = { send: () => Promise.reject(new Error("no pipe")), receive: async () => undefined };
    const report = await serve({ wire, run: () => "never" });
    expect(report).toMatchObject({ status: "broken", error: { kind: "write-failed" } });
    expect((report as { error: Error }).error.message).toBe("could not write hello: no pipe");
  });

  it("a wire whose receive rejects before the invoke ends the session as broken", async () => {
    const wire: Wire = { send: async () => {}, receive: () => Promise.reject(new Error("stdin exploded")) };
    const report = await serve({ wire, run: () => "never" });
    expect((report as { error: Error }).error.message).toBe("could not read the invoke frame: stdin exploded");
  });

  it("close() is called once with the failure of a broken session, and its own throw is ignored", async () => {
    const closes: (Error | undefined)[] = [];
    const wire: Wire = {
      send: async () => {},
      receive: async () => undefined,
      close(failure) {
        closes.push(failure);
        throw new Error("close failed");
      },
    };
    const report = await serve({ wire, run: () => "never" });
    expect(report.status).toBe("broken");
    expect(closes).toHaveLength(1);
    expect(closes[0]).toBe((report as { error: Error }).error);
  });

  it("rejects options that are not a wire and a program with a TypeError", async () => {
    await expect(serve({ wire: {} as Wire, run: () => 1 })).rejects.toThrow(/options\.wire must be a Wire/);
    await expect(serve({ wire: { send: async () => {}, receive: async () => undefined }, run: 1 as never })).rejects.toThrow(
      /options\.run must be a function/,
    );
  });
});
