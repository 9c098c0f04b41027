// The PTC client against real loopback HTTP hosts: exact requests, the handoff, result envelopes,
// transport failures (never retried), the deadline, approval waits and caller cancellation.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { call, TransportError } from "../../src/openseek/index.js";
import { callWithSettings, defaultSettings } from "../../src/openseek/ptc.js";
import * as arb from "../../src/testing/arbitraries.js";
import { hostReplies, startPtcHost, type RecordedHttpRequest } from "../../src/testing/openseek-doubles.js";
import { gate, rejection, until, useOpenSeekLifecycle } from "../helpers/openseek-lifecycle.js";

const track = useOpenSeekLifecycle();

/** A host whose every tool answers "mock reply" with the request it received as data, like the upstream test. */
function echoHost(options: { token?: string; approvalTools?: string[] } = {}) {
  return track(
    startPtcHost(options).then((host) => {
      host.respondWith((request) => hostReplies.result("mock reply", { data: request.body }));
      return host;
    }),
  );
}

/** Calls with a short client deadline (the public `call` always uses 125 s). */
function callWithDeadline(name: string, args: unknown, deadlineMs: number, signal?: AbortSignal) {
  return callWithSettings(name, args, signal === undefined ? {} : { signal }, { ...defaultSettings(), deadlineMs });
}

function expectHeaders(request: RecordedHttpRequest, token: string, body: string) {
  expect(request.method).toBe("POST");
  expect(request.path).toBe("/call");
  expect(request.headers.authorization).toBe(`Bearer ${token}`);
  expect(request.headers["content-type"]).toBe("application/json");
  expect(request.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
  expect(request.headers.connection).toBe("close");
  expect(request.headers.origin).toBeUndefined();
  expect(request.headers["transfer-encoding"]).toBeUndefined();
  // The host refuses duplicate header names.
  const names = request.rawHeaders.filter((_, index) => index % 2 === 0).map((name) => name.toLowerCase());
  expect(new Set(names).size).toBe(names.length);
}

async function transportError(promise: Promise<unknown>): Promise<TransportError> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(TransportError);
  return error as TransportError;
}

describe("PTC call: requests", () => {
  it("forwards built-in and extension tool calls unchanged, with exact bodies and headers", async () => {
    const host = await echoHost({ token: "public-api-test" });
    host.install();
    const cases: [string, unknown][] = [
      ["edit", { path: "note.txt", start_line: 1, old_string: "before", new_string: "after", revert_on_parse_errors: false }],
      ["multi_edit", { edits: [{ file: "a.mbt", old_string: "x", new_string: "y", start_line: 3 }] }],
      ["multi_edit", { edits_file: "edits.json" }],
      ["web_search", { query: "MoonBit async" }],
      ["my_extension", { nested: { values: [1, true, "value"] } }],
      ["ptc", "hold"],
      ["anything", null],
      ["anything", [1, "two", { three: 3 }]],
    ];
    for (const [index, [name, args]] of cases.entries()) {
      const result = await call(name, args as never);
      const expected = { version: 1, name, arguments: args };
      const request = host.requests[index]!;
      expect(request.rawBody).toBe(JSON.stringify(expected));
      expect(request.body).toEqual(expected);
      expectHeaders(request, "public-api-test", request.rawBody);
      expect(result).toEqual({ content: "mock reply", isError: false, data: expected });
    }
    expect(host.requests).toHaveLength(cases.length);
  });

  it("sends each request on a connection of its own", async () => {
    const host = await echoHost();
    host.install();
    await Promise.all([call("a", 1), call("b", 2), call("c", 3)]);
    await call("d", 4);
    const connections = host.requests.map((request) => request.connection);
    expect(new Set(connections).size).toBe(4);
  });

  it("forwards any faithful JSON value unchanged", async () => {
    const host = await echoHost();
    host.install();
    await fc.assert(
      fc.asyncProperty(fc.string(), arb.jsonValue(), async (name, args) => {
        const before = host.requests.length;
        const result = await call(name, args);
        const expected = { version: 1, name, arguments: args };
        expect(host.requests[before]!.rawBody).toBe(JSON.stringify(expected));
        expect(result.data).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });

  it("reads OPENSEEK_PTC at call time, so the capability may change between calls", async () => {
    const first = await echoHost();
    const second = await echoHost();
    await expect(call("edit", {})).rejects.toThrow(/No PTC host/);
    first.install();
    await call("edit", {});
    second.install();
    await call("edit", {});
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
  });
});

/** Makes a capability from the double's valid one. */
type CapabilityMaker = (capability: (overrides?: Record<string, unknown>) => string) => string;
const verbatim =
  (text: string): CapabilityMaker =>
  () =>
    text;
const overriding =
  (overrides: Record<string, unknown>): CapabilityMaker =>
  (capability) =>
    capability(overrides);

describe("PTC call: the handoff fails before any I/O", () => {
  it("refuses a missing capability with a TransportError that says how to get one", async () => {
    const host = await echoHost();
    const error = await transportError(call("edit", {}));
    expect(error.kind).toBe("handoff");
    expect(error.message).toMatch(/^No PTC host\. /);
    expect(error.mayHaveExecuted).toBe(false);
    expect(host.requests).toHaveLength(0);
  });

  it.each([
    ["not JSON", verbatim("not JSON")],
    ["an empty object", verbatim("{}")],
    ["a JSON array", verbatim("[]")],
    ["JSON null", verbatim("null")],
    ["an empty string", verbatim("")],
    ["version 2", overriding({ version: 2 })],
    ['version "1"', overriding({ version: "1" })],
    ["no url", overriding({ url: undefined })],
    ["a numeric url", overriding({ url: 8080 })],
    ["a url that is not http:", overriding({ url: "https://127.0.0.1:1/call" })],
    ["a url that does not parse", overriding({ url: "127.0.0.1/call" })],
    ["no token", overriding({ token: undefined })],
    ["a numeric token", overriding({ token: 7 })],
    ["an empty token", overriding({ token: "" })],
    ["a token with a line break", overriding({ token: "a\r\nOrigin: x" })],
    ["approval_tools that is a string", overriding({ approval_tools: "write" })],
    ["approval_tools with a number", overriding({ approval_tools: ["write", 1] })],
  ] as [string, CapabilityMaker][])("refuses %s as an invalid handoff", async (_, make) => {
    const host = await echoHost();
    process.env["OPENSEEK_PTC"] = make((overrides) => host.capability(overrides));
    const error = await transportError(call("edit", { path: "a" }));
    expect(error.kind).toBe("handoff");
    expect(error.message).toMatch(/^Invalid PTC host handoff: OPENSEEK_PTC .*; nothing was sent\.$/);
    expect(host.requests).toHaveLength(0);
  });

  it("ignores extra keys and accepts approval_tools as an array of strings", async () => {
    const host = await echoHost();
    process.env["OPENSEEK_PTC"] = host.capability({ extra: { anything: true }, approval_tools: ["write", "remove"] });
    await expect(call("edit", {})).resolves.toMatchObject({ content: "mock reply" });
  });

  it("refuses arguments JSON would alter with a TypeError, sending nothing", async () => {
    const host = await echoHost();
    host.install();
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    const refused: [unknown, RegExp][] = [
      [{ count: Number.NaN }, /\$\.count is NaN/],
      [{ when: new Date(0) }, /\$\.when is a Date/],
      [{ big: 1n }, /BigInt/],
      [cyclic, /cycle/],
      [undefined, /\$ is undefined/],
      // eslint-disable-next-line no-sparse-arrays -- the hole is the input under test
      [[1, , 3], /sparse/],
    ];
    for (const [args, reason] of refused) {
      const error = await rejection(call("edit", args as never));
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(reason);
      expect((error as Error).message).toMatch(/nothing was sent$/);
    }
    await expect(call(42 as never, {})).rejects.toThrow(TypeError);
    expect(host.requests).toHaveLength(0);
  });

  it("refuses unknown call options instead of ignoring them, sending nothing", async () => {
    const host = await echoHost();
    host.install();
    await expect(call("edit", {}, { timeoutMs: 5 } as never)).rejects.toThrow(
      'Unknown call option "timeoutMs": the only option is signal (for a deadline, pass signal: AbortSignal.timeout(ms)); nothing was sent',
    );
    await expect(call("edit", {}, { signal: "stop" } as never)).rejects.toThrow(
      "The call option signal must be an AbortSignal; nothing was sent",
    );
    await expect(call("edit", {}, null as never)).rejects.toThrow(TypeError);
    expect(host.requests).toHaveLength(0);
    await expect(call("edit", {}, { signal: undefined })).resolves.toMatchObject({ content: "mock reply" });
  });
});

describe("PTC call: results", () => {
  it("keeps tool errors as values and absent data absent", async () => {
    const host = await track(startPtcHost());
    host.install();
    host.enqueue(hostReplies.json({ version: 1, content: "invalid edit", is_error: true }));
    const failed = await call("edit", {});
    expect(failed).toEqual({ content: "invalid edit", isError: true });
    expect("data" in failed).toBe(false);

    const sources = { sources: [{ url: "https://example.com" }], truncated: false };
    host.enqueue(hostReplies.json({ version: 1, content: "found", is_error: false, data: sources, brief: "ignored" }));
    expect(await call("web_search", { query: "x" })).toEqual({ content: "found", isError: false, data: sources });

    host.enqueue(hostReplies.result("nothing", { data: null }));
    const withNull = await call("edit", {});
    expect("data" in withNull).toBe(true);
    expect(withNull.data).toBeNull();
  });

  it("returns the host's own refusals (unknown tool, bad envelope) as error results", async () => {
    const host = await track(startPtcHost({ tools: {} }));
    host.install();
    await expect(call("finish", {})).resolves.toEqual({ content: "PTC tool unavailable: finish", isError: true });
  });

  it.each([
    ["version 2", hostReplies.json({ version: 2, content: "x", is_error: false }), /^Invalid PTC response \(version 2, expected 1\)/],
    ["a string is_error", hostReplies.json({ version: 1, content: "x", is_error: "false" }), /^Invalid PTC error flag/],
    ["a missing is_error", hostReplies.json({ version: 1, content: "x" }), /^Invalid PTC error flag/],
    ["missing content", hostReplies.json({ version: 1, is_error: false }), /^Invalid PTC response \("content" is missing\)/],
    ["numeric content", hostReplies.json({ version: 1, content: 5, is_error: false }), /^Invalid PTC response/],
    ["an array", hostReplies.json([1, 2]), /^Invalid PTC response \(not a JSON object\)/],
    ["invalid JSON", hostReplies.raw("{"), /^PTC host returned invalid JSON/],
    ["an empty body", hostReplies.raw(""), /^PTC host returned invalid JSON/],
    ["bytes that are not UTF-8", hostReplies.raw(new Uint8Array([0x22, 0xff, 0x22])), /not UTF-8/],
  ])("refuses a reply with %s as a TransportError", async (_, reply, message) => {
    const host = await track(startPtcHost());
    host.install();
    host.enqueue(reply);
    const error = await transportError(call("edit", {}));
    expect(error.kind).toBe("http");
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/execution outcome may be unknown$/);
    expect(error.mayHaveExecuted).toBe(true);
    expect(host.requests).toHaveLength(1);
  });
});

describe("PTC call: transport failures are never retried", () => {
  it("hits a 503 host exactly once", async () => {
    const host = await track(startPtcHost());
    host.install();
    host.respondWith(() => hostReplies.status(503, "busy"));
    const error = await transportError(call("edit", {}));
    expect(error.message).toBe("PTC transport failed (HTTP 503); execution outcome may be unknown");
    expect(error.mayHaveExecuted).toBe(true);
    expect(host.requests).toHaveLength(1);
  });

  it("refuses a wrong token: the host answers 403", async () => {
    const host = await echoHost();
    process.env["OPENSEEK_PTC"] = host.capability({ token: "not-the-token" });
    const error = await transportError(call("edit", {}));
    expect(error.message).toBe(
      "PTC transport failed (HTTP 403: the host refused the bearer token; OPENSEEK_PTC must be the value this host run set " +
        "(a token from another run is refused)); execution outcome may be unknown",
    );
    expect(host.requests).toHaveLength(1);
  });

  it("reports a refused connection without claiming the request arrived", async () => {
    const host = await startPtcHost();
    host.install();
    await host.close();
    const error = await transportError(call("edit", {}));
    expect(error.kind).toBe("http");
    expect(error.message).toMatch(/^PTC connection failed \(.*ECONNREFUSED.*\); execution outcome may be unknown$/);
    expect(error.mayHaveExecuted).toBe(false);
  });

  it.each([
    ["drops the connection before answering", hostReplies.drop()],
    ["drops the connection in the middle of the body", hostReplies.partial('{"version":1,"content":"half', "drop")],
  ])("fails when the host %s", async (_, reply) => {
    const host = await track(startPtcHost());
    host.install();
    host.enqueue(reply);
    const error = await transportError(call("edit", {}));
    expect(error.message).toMatch(/^PTC connection (failed|closed)/);
    expect(error.message).toMatch(/execution outcome may be unknown$/);
    expect(error.mayHaveExecuted).toBe(true);
    expect(host.requests).toHaveLength(1);
  });

  it.each([
    ["never answers", hostReplies.hang()],
    ["never finishes the body", hostReplies.partial('{"version":1,', "hang")],
  ])("times out when the host %s", async (_, reply) => {
    const host = await track(startPtcHost());
    host.install();
    host.enqueue(reply);
    const error = await transportError(callWithDeadline("edit", {}, 50));
    expect(error.message).toBe("PTC request timed out after 50 ms; execution outcome may be unknown");
    expect(error.mayHaveExecuted).toBe(true);
    expect(host.requests).toHaveLength(1);
  });

  it("uses the 125 s deadline by default", () => {
    expect(defaultSettings().deadlineMs).toBe(125_000);
  });
});

describe("PTC call: approvals and cancellation", () => {
  it("lets approval tools wait past the deadline while other tools time out", async () => {
    const host = await track(startPtcHost({ approvalTools: ["write", "remove"] }));
    host.install();
    const approval = gate();
    host.respondWith(async (request) => {
      const name = (request.body as { name: string }).name;
      if (name !== "write") return hostReplies.hang();
      await approval.opened;
      return hostReplies.result("approved");
    });
    const write = callWithDeadline("write", { path: "a" }, 20);
    // The ordinary call times out at 20 ms; only then is the approval granted, so `write` waited past it.
    await expect(callWithDeadline("edit", {}, 20)).rejects.toThrow(/timed out after 20 ms/);
    approval.open();
    await expect(write).resolves.toEqual({ content: "approved", isError: false });
  });

  it("rejects with the caller's own abort reason, not a TransportError", async () => {
    const host = await track(startPtcHost({ approvalTools: ["write"] }));
    host.install();
    host.respondWith(() => hostReplies.hang());
    for (const name of ["edit", "write"]) {
      const controller = new AbortController();
      const reason = { why: `caller gave up on ${name}` };
      const before = host.requests.length;
      const pending = call(name, {}, { signal: controller.signal });
      await until(() => host.requests.length > before);
      controller.abort(reason);
      expect(await rejection(pending)).toBe(reason);
    }
  });

  it("propagates AbortSignal.timeout as its TimeoutError", async () => {
    const host = await track(startPtcHost());
    host.install();
    host.respondWith(() => hostReplies.hang());
    const error = await rejection(call("edit", {}, { signal: AbortSignal.timeout(30) }));
    expect(error).not.toBeInstanceOf(TransportError);
    expect((error as Error).name).toBe("TimeoutError");
  });

  it("sends nothing when the signal is already aborted", async () => {
    const host = await echoHost();
    host.install();
    const reason = new Error("stop");
    expect(await rejection(call("edit", {}, { signal: AbortSignal.abort(reason) }))).toBe(reason);
    expect(host.requests).toHaveLength(0);
  });
});
