// serve's own argument checks and the seams a wire may offer (stdout routing, escaped errors), driven
// through small user-written wires in process. Each test here was prompted by a mutant Stryker found
// surviving in src/guest/serve.ts (CONTRIBUTING.md, "Mutation testing") and was seen to fail on that mutant.
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/protocol/errors.js";
import { decodeFrame, encodeFrame, type GuestFrame } from "../../src/protocol/frames.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { serve, type ServeReport } from "../../src/guest/serve.js";
import { routeOutput, watchEscapes, type EscapeOrigin, type Wire } from "../../src/wires/wire.js";
import { failOnUnhandledRejections } from "../helpers/host.js";
import { runScriptedGuest } from "../helpers/memory-guest.js";

failOnUnhandledRejections();

const invoke = (allowed: string[] = []) => encodeFrame({ type: "invoke", protocol: 1, allowed, input: null });

/** A wire that delivers `inbox` then ends, and records what the guest sent, decoded. */
function scriptedWire(inbox: string[], send?: (line: string) => Promise<void>) {
  const sent: GuestFrame[] = [];
  const wire: Wire = {
    async send(line) {
      await send?.(line);
      sent.push(decodeFrame(line) as GuestFrame);
    },
    async receive() {
      return inbox.shift();
    },
  };
  return { wire, sent };
}

const brokenError = (report: ServeReport) => (report as Extract<ServeReport, { status: "broken" }>).error;

describe("serve's argument checks", () => {
  const wireMessage = "serve: options.wire must be a Wire (an object with send and receive), e.g. stdio()";
  it.each<[string, unknown]>([
    ["no wire at all", undefined],
    ["a wire without receive", { send: async () => {} }],
    ["a wire without send", { receive: async () => undefined }],
  ])("%s is a TypeError naming what a Wire is", async (_what, wire) => {
    await expect(serve({ wire: wire as Wire, run: () => 1 })).rejects.toThrow(new TypeError(wireMessage));
  });

  it("an input schema that is null is a TypeError naming Standard Schema, not a property read on null", async () => {
    const { wire } = scriptedWire([invoke()]);
    await expect(serve({ wire, run: () => 1, input: null as never })).rejects.toThrow(
      new TypeError("serve: options.input must be a Standard Schema (an object with ~standard.validate), e.g. a zod 4 schema"),
    );
  });
});

describe("serve's broken and refused sessions name what failed", () => {
  it("a receive that rejects with a plain Error: broken, kind closed (reading failed), the cause kept", async () => {
    const cause = new Error("stdin exploded");
    const wire: Wire = { send: async () => {}, receive: () => Promise.reject(cause) };
    const report = await serve({ wire, run: () => "never" });
    expect(report.status).toBe("broken");
    expect(brokenError(report)).toMatchObject({ kind: "closed", message: "could not read the invoke frame: stdin exploded", cause });
  });

  it("a receive that rejects with a TransportError keeps its kind and adds what serve was doing", async () => {
    const cause = new TransportError("frame over 16 bytes", { kind: "oversized" });
    const wire: Wire = { send: async () => {}, receive: () => Promise.reject(cause) };
    const report = await serve({ wire, run: () => "never" });
    expect(brokenError(report)).toBeInstanceOf(TransportError);
    expect(brokenError(report)).toMatchObject({
      kind: "oversized",
      message: "could not read the invoke frame: frame over 16 bytes",
      cause,
    });
  });

  it("an invoke for another protocol is refused with kind protocol", async () => {
    const { wire } = scriptedWire([encodeFrame({ type: "invoke", protocol: 2, allowed: [], input: null })]);
    const report = await serve({ wire, run: () => "never" });
    expect(report.status).toBe("refused");
    expect((report as { error: TransportError }).error.kind).toBe("protocol");
  });

  it("a result that cannot be written: broken, with the outcome and 'could not write the result'", async () => {
    const { wire } = scriptedWire([invoke()], async (line) => {
      if (line.startsWith('{"type":"result"')) throw new Error("EPIPE");
    });
    const report = await serve({ wire, run: () => "done" });
    expect(report).toMatchObject({ status: "broken", outcome: Outcome.success("", "done") });
    expect(brokenError(report)).toMatchObject({ kind: "write-failed", message: "could not write the result: EPIPE" });
  });
});

describe("what serve logs before the result", () => {
  it.each<[string, unknown]>([
    ["null", null],
    ["a string", "plain text"],
    ["an object with a stack property", { stack: "not a real stack" }],
  ])("a thrown %s logs nothing (only an Error's stack is logged) and becomes GuestFailed", async (_what, thrown) => {
    const { frames, report } = await runScriptedGuest(() => {
      throw thrown;
    });
    expect(frames.map((frame) => frame.type)).toEqual(["result"]);
    expect(frames[0]).toMatchObject({ outcome: { status: "failure", code: FailureCode.GuestFailed } });
    expect(report.status).toBe("completed");
  });

  it("counts the calls left waiting in the warning: '2 calls were'", async () => {
    const { frames } = await runScriptedGuest(
      (ears) => {
        void ears.call("read");
        void ears.call("read");
        return "returned early";
      },
      { allowed: ["read"] },
    );
    expect(frames.filter((frame) => frame.type === "log")).toEqual([
      { type: "log", level: "warn", content: "2 calls were still waiting for a reply when the program returned; await every call" },
    ]);
  });
});

describe("the wire seams serve uses", () => {
  it("routeOutput: what the wire captured becomes log frames after hello, and routing stops before the result", async () => {
    let sink: ((level: string, content: string) => void) | undefined;
    let stopped = false;
    const { wire, sent } = scriptedWire([invoke()]);
    const capturing = Object.assign(wire, {
      [routeOutput](route: (level: string, content: string) => void) {
        sink = route;
        return () => {
          stopped = true;
        };
      },
    });
    const report = await serve({
      wire: capturing,
      run: async () => {
        sink?.("info", "printed by the program");
        sink?.("warn", "printed to stderr");
        await new Promise((resolve) => setImmediate(resolve));
        return "ok";
      },
    });
    expect(report.status).toBe("completed");
    expect(stopped).toBe(true);
    expect(sent).toEqual([
      expect.objectContaining({ type: "hello" }),
      { type: "log", level: "info", content: "printed by the program" },
      { type: "log", level: "warn", content: "printed to stderr" },
      { type: "result", outcome: { status: "success", content: "", structured: "ok" } },
    ]);
  });

  it("watchEscapes: an error that escapes the program ends it as GuestFailed while its run still hangs", async () => {
    let escape: ((error: Error) => void) | undefined;
    const { wire, sent } = scriptedWire([invoke()]);
    const watching = Object.assign(wire, {
      [watchEscapes](describe: (error: unknown, origin: EscapeOrigin) => Error): Promise<never> {
        return new Promise<never>((_resolve, reject) => {
          escape = (error) => reject(describe(error, "uncaughtException"));
        });
      },
    });
    const report = await serve({
      wire: watching,
      run: () => {
        setImmediate(() => escape?.(new Error("thrown in a timer")));
        return new Promise(() => {}); // never settles: only the escape can end the run
      },
    });
    expect(report).toMatchObject({ status: "completed", outcome: { status: "failure", code: FailureCode.GuestFailed } });
    expect((report as { outcome: Outcome }).outcome.content).toBe("an uncaught exception escaped the program: thrown in a timer");
    expect(sent.at(-1)).toMatchObject({ type: "result" });
  });
});
