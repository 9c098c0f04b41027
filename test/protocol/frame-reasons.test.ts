// Why a frame is refused is part of what users see (hosts put it in ProtocolViolation messages, guests
// in TransportErrors): each reason of validateFrame is asserted by its wording, and a malformed line of
// several MiB is quoted in at most 200 characters, never whole.
import { describe, expect, it } from "vitest";
import { decodeFrame, FrameError, validateFrame } from "../../src/protocol/frames.js";

describe("validateFrame: the reason a value is not a frame", () => {
  it.each<[string, unknown, string]>([
    ["a number", 5, "a frame must be a JSON object"],
    ["a string", "x", "a frame must be a JSON object"],
    ["true", true, "a frame must be a JSON object"],
    ["null", null, "a frame must be a JSON object"],
    ["an array", [{ type: "log", content: "x" }], "a frame must be a JSON object"],
    ["no type", { content: "x" }, "a frame needs a type"],
    ["an unknown type", { type: "ping" }, 'unknown frame type "ping"'],
    ["a non-string type", { type: 7 }, "unknown frame type 7"],
    ["a null type", { type: null }, "unknown frame type null"],
    ["an array type", { type: ["log"] }, "unknown frame type (an array)"],
    ["an object type", { type: { name: "log" } }, "unknown frame type (an object)"],
    ["a type of 64 characters", { type: "t".repeat(64) }, `unknown frame type "${"t".repeat(64)}"`],
    ["a type of 65 characters", { type: "t".repeat(65) }, `unknown frame type "${"t".repeat(64)}"… (65 characters)`],
    ["reply id 0", { type: "reply", id: 0, outcome: { status: "success" } }, "reply.id must be a positive integer"],
    ["reply id 1.5", { type: "reply", id: 1.5, outcome: { status: "success" } }, "reply.id must be a positive integer"],
    ["reply id 2^53", { type: "reply", id: 2 ** 53, outcome: { status: "success" } }, "reply.id must be a positive integer"],
    ["reply id as a string", { type: "reply", id: "1", outcome: { status: "success" } }, "reply.id must be a positive integer"],
    ["reply outcome not an object", { type: "reply", id: 1, outcome: "ok" }, "reply.outcome: an outcome must be an object"],
    ["reply outcome without status", { type: "reply", id: 1, outcome: {} }, 'reply.outcome: status must be "success" or "failure"'],
    [
      "reply failure without code",
      { type: "reply", id: 1, outcome: { status: "failure" } },
      "reply.outcome: a failure needs a string code",
    ],
    [
      "reply content not a string",
      { type: "reply", id: 1, outcome: { status: "success", content: 1 } },
      "reply.outcome: content must be a string",
    ],
    ["request id -1", { type: "request", id: -1, name: "read" }, "request.id must be a positive integer"],
    ["request without name", { type: "request", id: 1 }, "request.name must be a string"],
    ["log level not a string", { type: "log", level: 3, content: "x" }, "log.level must be a string"],
    ["log without content", { type: "log", level: "info" }, "log.content must be a string"],
    ["result outcome missing", { type: "result" }, "result.outcome: an outcome must be an object"],
    ["result outcome an array", { type: "result", outcome: [] }, "result.outcome: an outcome must be an object"],
    ["invoke protocol a string", { type: "invoke", protocol: "1", allowed: [] }, "invoke.protocol must be an integer"],
    ["invoke allowed missing", { type: "invoke", protocol: 1 }, "invoke.allowed must be an array of strings"],
    ["invoke allowed with a number", { type: "invoke", protocol: 1, allowed: ["read", 1] }, "invoke.allowed must be an array of strings"],
    [
      "invoke traceparent not a string",
      { type: "invoke", protocol: 1, allowed: [], traceparent: 1 },
      "invoke.traceparent must be a string",
    ],
    ["hello protocol 1.5", { type: "hello", protocol: 1.5 }, "hello.protocol must be an integer"],
    ["hello sdk not a string", { type: "hello", protocol: 1, sdk: 1 }, "hello.sdk must be a string"],
  ])("%s: %j", (_what, value, reason) => {
    expect(validateFrame(value)).toBe(reason);
    // decodeFrame refuses the same line with the same reason, and quotes the (short) line after it.
    const line = JSON.stringify(value);
    const error = (() => {
      try {
        decodeFrame(line);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(FrameError);
    expect(error).toMatchObject({ name: "FrameError", reason, excerpt: line, message: `${reason}: ${line}` });
  });

  it("the edges that are accepted: id 1 and 2^53-1, no level, an empty allowlist, no sdk", () => {
    expect(validateFrame({ type: "reply", id: 1, outcome: { status: "success" } })).toMatchObject({ type: "reply", id: 1 });
    expect(validateFrame({ type: "request", id: 2 ** 53 - 1, name: "" })).toMatchObject({ type: "request", id: 2 ** 53 - 1 });
    expect(validateFrame({ type: "log", content: "" })).toEqual({ type: "log", level: "info", content: "" });
    expect(validateFrame({ type: "invoke", protocol: 0, allowed: [] })).toEqual({ type: "invoke", protocol: 0, allowed: [], input: null });
    expect(validateFrame({ type: "hello", protocol: -1 })).toEqual({ type: "hello", protocol: -1 });
  });

  it("a line that is not JSON is refused as not JSON, with the parser's words in brackets", () => {
    expect(() => decodeFrame("{nope")).toThrow(
      expect.objectContaining({ reason: expect.stringMatching(/^not JSON \(.+\)$/), excerpt: "{nope" }),
    );
  });
});

describe("FrameError: a malformed line is quoted in at most 200 characters", () => {
  const MIB = 1024 * 1024;
  const huge: [string, string][] = [
    ["not JSON", `{${"x".repeat(6 * MIB)}`],
    ["JSON but not an object", `[${"1,".repeat(3 * MIB)}1]`],
    ["an object that is not a frame", `{"type":"log","content":7,"pad":"${"y".repeat(6 * MIB)}"}`],
    ["a frame whose unknown type is several MiB", `{"type":"${"z".repeat(6 * MIB)}"}`],
    ["a frame whose unknown type is a large array", `{"type":[${"1,".repeat(3 * MIB)}1]}`],
  ];

  it.each(huge)("%s, several MiB long", (_what, line) => {
    let error: unknown;
    try {
      decodeFrame(line);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FrameError);
    const { excerpt, message, reason } = error as FrameError;
    expect(excerpt).toBe(`${line.slice(0, 200)}… (${line.length} characters)`);
    expect(message).toBe(`${reason}: ${excerpt}`);
    // The reason itself may quote the value (an unknown type, the parser's own words), but never the whole line.
    expect(message.length).toBeLessThan(1024);
  });

  it("a line of exactly 200 characters is quoted whole; 201 characters are cut", () => {
    const line200 = `{"type":"ping","pad":"${"p".repeat(200 - 24)}"}`;
    expect(line200).toHaveLength(200);
    expect(() => decodeFrame(line200)).toThrow(expect.objectContaining({ excerpt: line200 }));
    const line201 = `{"type":"ping","pad":"${"p".repeat(201 - 24)}"}`;
    expect(() => decodeFrame(line201)).toThrow(expect.objectContaining({ excerpt: `${line201.slice(0, 200)}… (201 characters)` }));
  });
});
