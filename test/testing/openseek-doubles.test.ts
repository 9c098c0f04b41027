// The host doubles exported from @posoco/ears/testing behave like the hosts they stand in for: they
// refuse what a real host refuses, record requests faithfully, restore the environment, and close
// cleanly even with a request hanging.
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { TransportError } from "../../src/openseek/index.js";
import { MCP_SERVICE, PTC_SERVICE, readHandoff } from "../../src/openseek/handoff.js";
import { postJson } from "../../src/openseek/http.js";
import * as testing from "../../src/testing/index.js";
import { hostReplies, startMcpHost, startOpenSeekHost, startPtcHost } from "../../src/testing/openseek-doubles.js";
import { until, useOpenSeekLifecycle } from "../helpers/openseek-lifecycle.js";

const track = useOpenSeekLifecycle();

/** A raw POST with chosen headers, to see what the double does with requests the SDK never sends. */
function rawPost(url: string, headers: Record<string, string>, body = "{}"): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const outgoing = request(
      { method: "POST", hostname: target.hostname, port: target.port, path: target.pathname, headers, agent: false },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

describe("OpenSeek host doubles", () => {
  it("are exported from @posoco/ears/testing", () => {
    expect(testing.startPtcHost).toBe(startPtcHost);
    expect(testing.startMcpHost).toBe(startMcpHost);
    expect(testing.hostReplies).toBe(hostReplies);
  });

  it("refuse like the host: 403 without the bearer token or with an Origin, 404 off the path", async () => {
    const host = await track(startPtcHost({ tools: { ping: () => ({ content: "pong" }) } }));
    const auth = { Authorization: `Bearer ${host.token}`, "Content-Type": "application/json" };
    expect(await rawPost(host.url, auth, '{"version":1,"name":"ping","arguments":{}}')).toBe(200);
    expect(await rawPost(host.url, { "Content-Type": "application/json" })).toBe(403);
    expect(await rawPost(host.url, { ...auth, Authorization: "Bearer wrong" })).toBe(403);
    expect(await rawPost(host.url, { ...auth, Origin: "https://example.com" })).toBe(403);
    expect(await rawPost(host.url.replace("/call", "/other"), auth)).toBe(404);
    expect(host.requests).toHaveLength(5);
    expect(host.requests[3]!.headers.origin).toBe("https://example.com");
  });

  it("make capabilities like a host's and restore the environment they install into", async () => {
    const host = await track(startPtcHost({ approvalTools: ["write"], token: "t0k" }));
    expect(JSON.parse(host.capability())).toEqual({ version: 1, url: host.url, token: "t0k", approval_tools: ["write"] });
    expect(host.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/call$/);
    expect(readHandoff(PTC_SERVICE, { OPENSEEK_PTC: host.capability() }).approvalTools).toEqual(["write"]);
    const env: NodeJS.ProcessEnv = {};
    const restore = host.install(env);
    expect(env["OPENSEEK_PTC"]).toBe(host.capability());
    restore();
    expect("OPENSEEK_PTC" in env).toBe(false);
    const withPrevious: NodeJS.ProcessEnv = { OPENSEEK_MCP: "previous" };
    const mcpHost = await track(startMcpHost());
    const restoreMcp = mcpHost.install(withPrevious);
    expect(readHandoff(MCP_SERVICE, withPrevious).url.href).toBe(mcpHost.url);
    restoreMcp();
    expect(withPrevious["OPENSEEK_MCP"]).toBe("previous");
  });

  it("close even while a request hangs, and the client sees the connection end", async () => {
    const host = await startOpenSeekHost({ respond: () => hostReplies.hang() });
    const pending = postJson(PTC_SERVICE, readHandoff(PTC_SERVICE, { OPENSEEK_PTC: host.capability() }), "{}");
    await until(() => host.requests.length === 1);
    await host.close();
    await expect(pending).rejects.toBeInstanceOf(TransportError);
  });

  it("answer 500 when nothing was scripted, and queue replies ahead of the responder", async () => {
    const host = await track(startOpenSeekHost());
    const handoff = readHandoff(PTC_SERVICE, { OPENSEEK_PTC: host.capability() });
    await expect(postJson(PTC_SERVICE, handoff, "{}")).rejects.toThrow(/HTTP 500/);
    host.respondWith(() => hostReplies.json("default"));
    host.enqueue(hostReplies.json("first"), () => hostReplies.json("second"));
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await postJson(PTC_SERVICE, handoff, "{}"));
    expect(answers).toEqual(["first", "second", "default"]);
  });

  it("send delayed replies, and cancel them on close", async () => {
    const host = await startOpenSeekHost({ respond: () => hostReplies.delayed(20, hostReplies.json("late")) });
    const handoff = readHandoff(PTC_SERVICE, { OPENSEEK_PTC: host.capability() });
    await expect(postJson(PTC_SERVICE, handoff, "{}")).resolves.toBe("late");
    host.respondWith(() => hostReplies.delayed(60_000, hostReplies.json("never")));
    const pending = postJson(PTC_SERVICE, handoff, "{}");
    await until(() => host.requests.length === 2);
    await host.close();
    await expect(pending).rejects.toBeInstanceOf(TransportError);
  });
});

describe("postJson", () => {
  it("refuses a reply larger than its cap instead of buffering it", async () => {
    const host = await track(startOpenSeekHost({ respond: () => hostReplies.json("x".repeat(5_000)) }));
    const handoff = readHandoff(PTC_SERVICE, { OPENSEEK_PTC: host.capability() });
    await expect(postJson(PTC_SERVICE, handoff, "{}", { maxReplyBytes: 1_000 })).rejects.toThrow(
      "PTC host sent a reply over 1000 bytes; execution outcome may be unknown",
    );
    await expect(postJson(PTC_SERVICE, handoff, "{}", { maxReplyBytes: 10_000 })).resolves.toBe("x".repeat(5_000));
  });
});
