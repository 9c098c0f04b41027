// mcp.call against real loopback MCP host doubles: exact envelopes, saved images, tool errors as values,
// the handoff, invalid replies, no retries, no approval waits, and caller cancellation.
import { describe, expect, it } from "vitest";
import { mcp, TransportError } from "../../src/openseek/index.js";
import { mcpCallWithSettings } from "../../src/openseek/mcp-call.js";
import { defaultSettings } from "../../src/openseek/ptc.js";
import { hostReplies, startMcpHost, startOpenSeekHost } from "../../src/testing/openseek-doubles.js";
import { rejection, until, useOpenSeekLifecycle } from "../helpers/openseek-lifecycle.js";

const track = useOpenSeekLifecycle();

const github = {
  name: "github",
  tools: [
    {
      name: "list_issues",
      description: "List issues of a repository",
      inputSchema: { type: "object", properties: { repo: { type: "string" } }, required: ["repo"] },
      handler: (args: unknown) => ({ content: `issues of ${(args as { repo: string }).repo}`, data: { count: 2 } }),
    },
    {
      name: "screenshot",
      handler: () => ({ content: "Image saved to /tmp/mcp/shot-1.png", images: ["/tmp/mcp/shot-1.png"] }),
    },
    { name: "broken", handler: () => ({ content: "repository not found", isError: true }) },
  ],
};

describe("mcp.call", () => {
  it("sends the exact call envelope with the host's headers and returns the result", async () => {
    const host = await track(startMcpHost({ servers: [github], token: "mcp-token" }));
    host.install();
    const result = await mcp.call("github", "list_issues", { repo: "moonbitlang/openseek" });
    expect(result).toEqual({ content: "issues of moonbitlang/openseek", isError: false, data: { count: 2 }, images: [] });
    const [request] = host.requests;
    expect(request!.rawBody).toBe(
      '{"version":1,"call":{"server":"github","tool":"list_issues","arguments":{"repo":"moonbitlang/openseek"}}}',
    );
    expect(request!.method).toBe("POST");
    expect(request!.path).toBe("/call");
    expect(request!.headers.authorization).toBe("Bearer mcp-token");
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["content-length"]).toBe(String(Buffer.byteLength(request!.rawBody)));
    expect(request!.headers.connection).toBe("close");
    expect(request!.headers.origin).toBeUndefined();
  });

  it("forwards non-object arguments unchanged", async () => {
    const host = await track(startMcpHost({ servers: [github] }));
    host.install();
    await mcp.call("github", "broken", ["a", 1, null]);
    expect(host.requests[0]!.body).toEqual({ version: 1, call: { server: "github", tool: "broken", arguments: ["a", 1, null] } });
  });

  it("returns the paths of saved images", async () => {
    const host = await track(startMcpHost({ servers: [github] }));
    host.install();
    const result = await mcp.call("github", "screenshot", {});
    expect(result.images).toEqual(["/tmp/mcp/shot-1.png"]);
    expect(result.content).toContain("/tmp/mcp/shot-1.png");
    expect("data" in result).toBe(false);
  });

  it("keeps tool errors as values, with absent data absent and null data null", async () => {
    const host = await track(startMcpHost({ servers: [github] }));
    host.install();
    const failed = await mcp.call("github", "broken", {});
    expect(failed).toEqual({ content: "repository not found", isError: true, images: [] });
    expect("data" in failed).toBe(false);
    host.enqueue(hostReplies.result("ok", { data: null }));
    const withNull = await mcp.call("github", "list_issues", { repo: "r" });
    expect("data" in withNull && withNull.data === null).toBe(true);
  });

  it("fails before any I/O without an MCP host, with a malformed capability, or with bad arguments", async () => {
    const host = await track(startMcpHost({ servers: [github] }));
    const missing = await rejection(mcp.call("github", "list_issues", {}));
    expect(missing).toBeInstanceOf(TransportError);
    expect((missing as TransportError).kind).toBe("handoff");
    expect((missing as Error).message).toMatch(/^No MCP host\. OPENSEEK_MCP is not set/);

    for (const capability of ["not JSON", "{}", host.capability({ version: 2 }), host.capability({ token: null })]) {
      process.env["OPENSEEK_MCP"] = capability;
      const error = await rejection(mcp.call("github", "list_issues", {}));
      expect(error).toBeInstanceOf(TransportError);
      expect((error as Error).message).toMatch(/^Invalid MCP host handoff: OPENSEEK_MCP /);
    }

    host.install();
    await expect(mcp.call("github", "list_issues", { n: Number.POSITIVE_INFINITY })).rejects.toThrow(
      /\$\.n is Infinity.*nothing was sent$/,
    );
    await expect(mcp.call(1 as never, "list_issues", {})).rejects.toThrow(TypeError);
    await expect(mcp.call("github", undefined as never, {})).rejects.toThrow(/MCP tool name must be a string/);
    await expect(mcp.call("github", "list_issues", {}, { deadline: 1 } as never)).rejects.toThrow(/Unknown call option "deadline"/);
    expect(host.requests).toHaveLength(0);
  });

  it.each([
    ["a 503", hostReplies.status(503), /^MCP transport failed \(HTTP 503\)/],
    ["invalid JSON", hostReplies.raw("not json"), /^MCP host returned invalid JSON/],
    ["version 2", hostReplies.json({ version: 2, content: "", is_error: false }), /^Invalid MCP response/],
    ["a non-boolean is_error", hostReplies.json({ version: 1, content: "", is_error: 0 }), /^Invalid MCP error flag/],
    [
      "images that are not paths",
      hostReplies.json({ version: 1, content: "", is_error: false, images: [1] }),
      /^Invalid MCP response \("images"/,
    ],
    ["a dropped connection", hostReplies.drop(), /^MCP connection failed/],
  ])("raises a TransportError for %s and never retries", async (_, reply, message) => {
    const host = await track(startMcpHost({ servers: [github] }));
    host.install();
    host.enqueue(reply);
    const error = await rejection(mcp.call("github", "list_issues", { repo: "r" }));
    expect(error).toBeInstanceOf(TransportError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toMatch(/execution outcome may be unknown$/);
    expect(host.requests).toHaveLength(1);
  });

  it("never waits for approval: a tool named in approval_tools still times out", async () => {
    const host = await track(startOpenSeekHost({ variable: "OPENSEEK_MCP", approvalTools: ["write"], respond: () => hostReplies.hang() }));
    host.install();
    const settings = { ...defaultSettings(), deadlineMs: 30 };
    await expect(mcpCallWithSettings("files", "write", {}, {}, settings)).rejects.toThrow(
      "MCP request timed out after 30 ms; execution outcome may be unknown",
    );
  });

  it("rejects with the caller's abort reason, not a TransportError", async () => {
    const host = await track(startMcpHost({ servers: [github] }));
    host.install();
    host.enqueue(hostReplies.hang());
    const controller = new AbortController();
    const pending = mcp.call("github", "list_issues", { repo: "r" }, { signal: controller.signal });
    await until(() => host.requests.length === 1);
    const reason = new Error("user pressed stop");
    controller.abort(reason);
    expect(await rejection(pending)).toBe(reason);
  });
});
