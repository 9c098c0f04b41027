import { describe, expect, it } from "vitest";
import type { RequestFrame } from "../../src/protocol/frames.js";
import type { Json } from "../../src/protocol/json.js";
import { Outcome } from "../../src/protocol/outcome.js";
import { endDivergence, helloDivergence, requestDivergence, unansweredDivergence } from "../../src/transcripts/divergence.js";
import type { Recording } from "../../src/transcripts/recording.js";

const request = (id: number, name: string, args: Json): RequestFrame => ({ type: "request", id, name, arguments: args });

/** A recording of two reads and a success result. */
const recording: Recording = {
  hello: { type: "hello", protocol: 1 },
  invoke: { type: "invoke", protocol: 1, allowed: ["read", "list"], input: null },
  exchanges: [
    { request: request(1, "read", { path: "a", options: { depth: 1, tags: ["x"] } }), reply: Outcome.success("A") },
    { request: request(2, "read", { path: "b" }), reply: Outcome.success("B") },
  ],
  result: Outcome.success("done", { read: 2 }),
};

describe("the divergence of a request", () => {
  it("is undefined when the request matches, whatever its id and key order", () => {
    const reordered = request(8, "read", { options: { tags: ["x"], depth: 1 }, path: "a" });
    expect(requestDivergence(recording, 0, reordered)).toBeUndefined();
  });

  it("names both capabilities when the guest asks for another one", () => {
    const message = requestDivergence(recording, 1, request(2, "list", {}));
    expect(message).toBe('request #2: expected read {"path":"b"} but the guest sent list {}');
  });

  it("shows both argument values when they differ at a nested path", () => {
    const sent = request(1, "read", { path: "a", options: { depth: 1, tags: ["y"] } });
    expect(requestDivergence(recording, 0, sent)).toBe(
      'request #1: expected read {"path":"a","options":{"depth":1,"tags":["x"]}} ' +
        'but the guest sent read {"path":"a","options":{"depth":1,"tags":["y"]}}',
    );
  });

  it("points at the nested path of the first difference when the arguments are too long to show whole", () => {
    const pad = "x".repeat(300);
    const long: Recording = { ...recording, exchanges: [{ request: request(1, "read", { pad, list: [1, { deep: "same" }] }) }] };
    const shown = (length: number) => `read {"pad":"${"x".repeat(192)}… (${length} characters)`;
    expect(requestDivergence(long, 0, request(1, "read", { pad, list: [1, { deep: "changed" }] }))).toBe(
      `request #1: expected ${shown(337)} but the guest sent ${shown(340)}; ` +
        'first difference at arguments.list[1].deep: recorded "same", now "changed"',
    );
    expect(requestDivergence(long, 0, request(1, "read", { pad, list: [1, {}] }))).toBe(
      `request #1: expected ${shown(337)} but the guest sent ${shown(324)}; ` +
        'first difference at arguments.list[1].deep: recorded "same", now absent',
    );
  });

  it("adds no 'first difference' to short values that merely contain the cut marker's text", () => {
    const marked: Recording = { ...recording, exchanges: [{ request: request(1, "read", { path: "a… (3 characters)" }) }] };
    expect(requestDivergence(marked, 0, request(1, "read", { path: "b… (3 characters)" }))).toBe(
      'request #1: expected read {"path":"a… (3 characters)"} but the guest sent read {"path":"b… (3 characters)"}',
    );
  });

  it("says how many requests the recording has when the guest makes one more", () => {
    expect(requestDivergence(recording, 2, request(3, "list", { all: true }))).toBe(
      'request #3: the recording has no more requests (it has 2), but the guest sent list {"all":true}',
    );
  });

  it("says the replay stops at a request the recorded session never answered", () => {
    expect(unansweredDivergence(2, request(2, "read", { path: "b" }))).toBe(
      'request #2 read {"path":"b"} has no reply in the recording ' +
        "(the recorded session ended before it was answered); the replay stops here",
    );
  });
});

describe("the divergence of a hello", () => {
  it("names both protocols, and is undefined for the same protocol or no recorded hello", () => {
    expect(helloDivergence(recording.hello, { type: "hello", protocol: 2 })).toBe(
      "hello: the recorded guest spoke protocol 1, but this guest speaks protocol 2",
    );
    expect(helloDivergence(recording.hello, { type: "hello", protocol: 1, sdk: "other@9" })).toBeUndefined();
    expect(helloDivergence(undefined, { type: "hello", protocol: 2 })).toBeUndefined();
  });
});

describe("the divergence found at the end of a run", () => {
  const failure = { code: "RunTimeout", message: "the guest ran for 30 s" } as const;

  it("is undefined when every request was made and the result is the recorded one", () => {
    expect(endDivergence(recording, 2, { outcome: Outcome.success("done", { read: 2 }) })).toBeUndefined();
  });

  it("names the first recorded request the guest never made, and what it did instead", () => {
    expect(endDivergence(recording, 1, { outcome: Outcome.success("early") })).toBe(
      'request #2: expected read {"path":"b"} but the guest made only 1 of the 2 recorded requests ' +
        'and then returned success {"content":"early"}',
    );
    expect(endDivergence(recording, 0, { failure })).toBe(
      'request #1: expected read {"path":"a","options":{"depth":1,"tags":["x"]}} but the guest made only 0 of the 2 recorded requests' +
        " (the run ended: RunTimeout: the guest ran for 30 s)",
    );
  });

  it("shows both results when they differ", () => {
    expect(endDivergence(recording, 2, { outcome: Outcome.failure("NotFound", "no such file", { path: "b" }) })).toBe(
      'result: expected success {"content":"done","structured":{"read":2}} ' +
        'but the guest returned failure NotFound {"content":"no such file","structured":{"path":"b"}}',
    );
  });

  it("points at the first difference in a result too long to show whole", () => {
    const text = "y".repeat(250);
    const long: Recording = { ...recording, result: Outcome.success(text, { read: 2 }) };
    const shown = `success {"content":"${"y".repeat(188)}… (288 characters)`;
    expect(endDivergence(long, 2, { outcome: Outcome.success(text, { read: 3 }) })).toBe(
      `result: expected ${shown} but the guest returned ${shown}; first difference at structured.read: recorded 2, now 3`,
    );
  });

  it("says when the guest sent no result, or one the recorded session never had", () => {
    expect(endDivergence(recording, 2, { failure })).toBe(
      'result: expected success {"content":"done","structured":{"read":2}} ' +
        "but the guest sent no result (the run ended: RunTimeout: the guest ran for 30 s)",
    );
    expect(endDivergence({ ...recording, result: undefined }, 2, { outcome: Outcome.success() })).toBe(
      'result: the recorded session ended without a result, but the guest returned success {"content":""}',
    );
  });
});
