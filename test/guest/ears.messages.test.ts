// What the guest tells its program and the host, by wording: a host's several-MiB bad line is quoted in
// at most 200 characters (in the waiting call's TransportError and in the error log to the host), and
// a call under an empty allowlist is denied locally with "allowed: none".
import { describe, expect, it } from "vitest";
import type { TransportError } from "../../src/protocol/errors.js";
import { FailureCode, Outcome } from "../../src/protocol/outcome.js";
import { runScriptedGuest, startGuest } from "../helpers/memory-guest.js";

const MIB = 1024 * 1024;

describe("a host's several-MiB malformed line, as the guest reports it", () => {
  const cases: [what: string, line: string, reason: string][] = [
    ["not JSON", `{${"x".repeat(5 * MIB)}`, "not JSON ("],
    [
      "a reply whose outcome is not an object",
      `{"type":"reply","id":1,"outcome":"${"o".repeat(5 * MIB)}"}`,
      "reply.outcome: an outcome must be an object: ",
    ],
    [
      "an unknown type of several MiB",
      `{"type":"${"t".repeat(5 * MIB)}"}`,
      `unknown frame type "${"t".repeat(64)}"… (${5 * MIB} characters): `,
    ],
  ];

  it.each(cases)("%s: the call's error and the error log quote 200 characters of it", async (_what, line, reason) => {
    const guest = startGuest(async (ears) => ears.call("read").catch((e: TransportError) => `${e.kind}: ${e.message}`));
    await guest.invoke(["read"]);
    await guest.expect("request");
    await guest.sendLine(line);
    const [log, result] = await guest.rest();
    // The excerpt, then the bracket that closes "malformed frame (".
    const quoted = `${line.slice(0, 200)}… (${line.length} characters))`;
    expect(log).toMatchObject({ type: "log", level: "error" });
    const logged = log?.type === "log" ? log.content : "";
    expect(logged.startsWith(`ears: the session with the host is broken: the host sent a malformed frame (${reason}`)).toBe(true);
    expect(logged.endsWith(quoted)).toBe(true);
    expect(logged.length).toBeLessThan(1024);
    const message = result?.type === "result" ? String(result.outcome.structured) : "";
    expect(
      message.startsWith(
        `malformed: the session with the host broke while "read" waited for its reply (the host sent a malformed frame (${reason}`,
      ),
    ).toBe(true);
    expect(message.endsWith(`${quoted}); the request may already have executed`)).toBe(true);
    expect(message.length).toBeLessThan(1024);
  });
});

describe("Ears.call under an empty allowlist", () => {
  it('is denied locally with "allowed: none"; nothing is sent', async () => {
    const { frames, requests } = await runScriptedGuest(async (ears) => ears.call("read", { path: "a" }), { allowed: [] });
    expect(requests).toEqual([]);
    expect(frames).toEqual([
      {
        type: "result",
        outcome: Outcome.failure(
          FailureCode.CapabilityDenied,
          'capability "read" is not allowed by the host (allowed: none); nothing was sent',
        ),
      },
    ]);
  });

  it("lists the allowed names, quoted, when there are some", async () => {
    const { frames } = await runScriptedGuest(async (ears) => ears.call("write"), { allowed: ["read", "list"] });
    expect(frames).toEqual([
      {
        type: "result",
        outcome: Outcome.failure(
          FailureCode.CapabilityDenied,
          'capability "write" is not allowed by the host (allowed: "read", "list"); nothing was sent',
        ),
      },
    ]);
  });
});
