/**
 * What runHost tells users, by wording: a guest's several-MiB bad line is quoted in at most 200
 * characters in every ProtocolViolation message, and a denial under an empty allowlist says so.
 */
import { describe, expect, it } from "vitest";
import { createLinkedPair } from "../../src/index.js";
import { HostFailureCode, runHost, type HostOptions } from "../../src/host/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

const MIB = 1024 * 1024;
const hello = JSON.stringify({ type: "hello", protocol: 1, sdk: "test" });
const result = JSON.stringify({ type: "result", outcome: { status: "success" } });

/** Runs the host against a guest that writes exactly `lines`, then ends; returns the report and what the host sent. */
async function scripted(lines: string[], options: HostOptions = {}) {
  const [guestEnd, hostEnd] = createLinkedPair();
  for (const line of lines) void guestEnd.send(line).catch(() => {});
  guestEnd.end();
  const sent: unknown[] = [];
  const drained = (async () => {
    for (let line = await guestEnd.receive(); line !== undefined; line = await guestEnd.receive()) sent.push(JSON.parse(line));
  })();
  const report = await runHost(hostEnd, options);
  await drained;
  return { report, sent };
}

describe("runHost: a several-MiB bad line is quoted in at most 200 characters", () => {
  const cases: [what: string, lines: string[], start: string][] = [
    ["a line that is not JSON", [hello, `{${"x".repeat(5 * MIB)}`], "the guest wrote a line that is not a protocol 1 frame (not JSON ("],
    [
      "JSON that is not a frame",
      [hello, `{"type":"log","content":7,"pad":"${"y".repeat(5 * MIB)}"}`],
      'the guest wrote a line that is not a protocol 1 frame (log.content must be a string): "{\\"type\\":\\"log\\",',
    ],
    [
      "an unknown type of several MiB",
      [hello, `{"type":"${"t".repeat(5 * MIB)}"}`],
      `the guest wrote a line that is not a protocol 1 frame (unknown frame type "${"t".repeat(64)}"… (${5 * MIB} characters)): "`,
    ],
    [
      "a first frame that is not hello",
      [`{"type":"log","content":"${"z".repeat(5 * MIB)}"}`],
      'the guest\'s first frame must be hello, but it sent a "log" frame: "',
    ],
    ["a second hello", [hello, `{"type":"hello","protocol":1,"sdk":"${"s".repeat(5 * MIB)}"}`], "the guest said hello a second time: "],
    [
      "a host frame",
      [hello, `{"type":"reply","id":1,"outcome":{"status":"success","content":"${"r".repeat(5 * MIB)}"}}`],
      'the guest sent a "reply" frame, which only a host sends (a guest sends hello, request, log and result): "',
    ],
    ["a line after the result", [hello, result, `{"type":"log","content":"${"l".repeat(5 * MIB)}"}`], "the guest wrote after its result: "],
  ];

  it.each(cases)("%s", async (_what, lines, start) => {
    const { report } = await scripted(lines);
    const bad = lines.at(-1)!;
    expect(report.failure?.code).toBe(HostFailureCode.ProtocolViolation);
    const message = report.failure?.message ?? "";
    expect(message.startsWith(start)).toBe(true);
    // The line is quoted as JSON text: its first 200 characters, then how long it was.
    expect(message.endsWith(`${JSON.stringify(bad.slice(0, 200))}… (${bad.length} characters)`)).toBe(true);
    expect(message.length).toBeLessThan(1024);
  });

  it("a line of 200 characters is quoted whole", async () => {
    const line = `{"type":"log","content":"${"w".repeat(200 - 27)}"}`;
    expect(line).toHaveLength(200);
    const { report } = await scripted([line]);
    expect(report.failure?.message).toBe(`the guest's first frame must be hello, but it sent a "log" frame: ${JSON.stringify(line)}`);
  });
});

describe("runHost: a denial under an empty allowlist", () => {
  it('says "allowed: none" and that the capability did not run', async () => {
    let ran = false;
    const request = JSON.stringify({ type: "request", id: 1, name: "read", arguments: null });
    const { report, sent } = await scripted([hello, request, result], {
      allowed: [],
      capabilities: {
        read: () => {
          ran = true;
          return "";
        },
      },
    });
    expect(ran).toBe(false);
    expect(sent).toContainEqual({
      type: "reply",
      id: 1,
      outcome: {
        status: "failure",
        code: "CapabilityDenied",
        content: 'capability "read" is not allowed by the host (allowed: none); it did not run',
      },
    });
    expect(report.ok).toBe(true);
    expect(report.calls).toMatchObject([{ id: 1, name: "read", denied: true }]);
  });

  it("lists the allowed names, quoted, when there are some", async () => {
    const request = JSON.stringify({ type: "request", id: 1, name: "write", arguments: null });
    const { sent } = await scripted([hello, request, result], {
      allowed: ["read", "list"],
      capabilities: { read: () => "", list: () => "" },
    });
    expect(sent).toContainEqual({
      type: "reply",
      id: 1,
      outcome: {
        status: "failure",
        code: "CapabilityDenied",
        content: 'capability "write" is not allowed by the host (allowed: "read", "list"); it did not run',
      },
    });
  });
});

describe("runHost: a capability name of several MiB", () => {
  it("is quoted in at most 64 characters in the denial and the missing-handler replies, and kept cut in the call record", async () => {
    const name = "n".repeat(5 * MIB);
    const denied = JSON.stringify({ type: "request", id: 1, name, arguments: null });
    const { report, sent } = await scripted([hello, denied, result], { allowed: ["read"], capabilities: { read: () => "" } });
    const reply = sent.find((frame) => (frame as { type?: string }).type === "reply") as { outcome: { code: string; content: string } };
    expect(reply.outcome.code).toBe("CapabilityDenied");
    expect(reply.outcome.content).toBe(
      `capability ${JSON.stringify("n".repeat(64))}… (${5 * MIB} characters) is not allowed by the host (allowed: "read"); it did not run`,
    );
    expect(report.calls[0]!.name.length).toBeLessThanOrEqual(1100);
    expect(report.calls[0]!.name).toMatch(/^n{1024}… \(5242880 characters\)$/);

    const missing = JSON.stringify({ type: "request", id: 1, name, arguments: null });
    const second = await scripted([hello, missing, result], { allowed: [name] });
    const missingReply = second.sent.find((frame) => (frame as { type?: string }).type === "reply") as {
      outcome: { code: string; content: string };
    };
    expect(missingReply.outcome.code).toBe("CapabilityMissing");
    expect(missingReply.outcome.content.length).toBeLessThan(300);
  });
});
