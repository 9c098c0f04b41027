// mcp.search against real loopback MCP hosts: the catalog download (exact list requests, several replies,
// one download per capability, failures not cached), listings, unavailable servers, and every SearchError.
import { describe, expect, it } from "vitest";
import { mcp, SearchError, TransportError } from "../../src/openseek/index.js";
import { defaultSettings } from "../../src/openseek/ptc.js";
import { searchWithSettings } from "../../src/openseek/search.js";
import { hostReplies, mcpCatalogItems, startMcpHost, type McpServerDouble } from "../../src/testing/openseek-doubles.js";
import { rejection, useOpenSeekLifecycle } from "../helpers/openseek-lifecycle.js";

const track = useOpenSeekLifecycle();

const servers: McpServerDouble[] = [
  {
    name: "github",
    instructions: "Use owner/name for repositories.",
    tools: [
      {
        name: "list_issues",
        description: "List issues of a repository",
        inputSchema: { type: "object", properties: { repo: { type: "string", description: "owner/name" } } },
        outputSchema: { type: "object", properties: { issues: { type: "array" } } },
      },
      { name: "create_issue", description: "Open a new issue", inputSchema: { type: "object", properties: { title: { type: "string" } } } },
      { name: "get_file", description: "Read a file from a repository" },
    ],
  },
  { name: "slack", error: "failed to start: command not found" },
  {
    name: "calendar",
    tools: [
      { name: "listEvents", description: "List calendar events in a date range" },
      { name: "create_event", description: "Schedule an event" },
    ],
  },
];

async function searchError(promise: Promise<unknown>): Promise<SearchError> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(SearchError);
  return error as SearchError;
}

describe("mcp.search: catalog download", () => {
  it("lists the catalog over several replies with exact list requests, then reuses it", async () => {
    const host = await track(startMcpHost({ servers, pageSize: 3 }));
    host.install();
    const page = await mcp.search();
    // 8 items (3 servers, 5 tools) in replies of 3: three requests, the first without a cursor key at all.
    expect(host.requests.map((request) => request.rawBody)).toEqual([
      '{"version":1,"list":{}}',
      '{"version":1,"list":{"cursor":"page-1"}}',
      '{"version":1,"list":{"cursor":"page-2"}}',
    ]);
    for (const request of host.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${host.token}`);
      expect(request.headers.connection).toBe("close");
    }
    expect(page.tools.map((tool) => `${tool.server}/${tool.name}`)).toEqual([
      "github/list_issues",
      "github/create_issue",
      "github/get_file",
      "calendar/listEvents",
      "calendar/create_event",
    ]);
    expect(page.total).toBe(5);
    expect(page.nextOffset).toBeUndefined();
    expect(page.tools[0]).toEqual({
      server: "github",
      name: "list_issues",
      description: "List issues of a repository",
      inputSchema: { type: "object", properties: { repo: { type: "string", description: "owner/name" } } },
      outputSchema: { type: "object", properties: { issues: { type: "array" } } },
    });
    expect("outputSchema" in page.tools[1]!).toBe(false);

    await mcp.search({ query: "issue" });
    await mcp.search({ server: "calendar" });
    await Promise.all([mcp.search({ query: "event" }), mcp.search({ limit: 1 })]);
    expect(host.requests).toHaveLength(3);
  });

  it("shares one download between concurrent first searches", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    await Promise.all([mcp.search(), mcp.search({ query: "issue" }), mcp.search({ server: "github" })]);
    expect(host.requests).toHaveLength(1);
  });

  it("keys the cache by the capability: another host gets its own download", async () => {
    const first = await track(startMcpHost({ servers }));
    const second = await track(startMcpHost({ servers: [{ name: "only", tools: [{ name: "ping" }] }] }));
    first.install();
    expect((await mcp.search()).total).toBe(5);
    second.install();
    expect((await mcp.search()).tools.map((tool) => tool.name)).toEqual(["ping"]);
    first.install();
    expect((await mcp.search()).total).toBe(5);
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
  });

  it("ends the listing at next_cursor null", async () => {
    const host = await track(startMcpHost());
    host.install();
    host.enqueue(
      hostReplies.catalogPage(mcpCatalogItems([{ name: "a", tools: [{ name: "one" }] }]), "c1"),
      hostReplies.catalogPage([{ server: "a", tool: { name: "two", description: "", input_schema: {} } }], null),
    );
    expect((await mcp.search()).tools.map((tool) => tool.name)).toEqual(["one", "two"]);
    expect(host.requests).toHaveLength(2);
  });

  it("handles an empty catalog", async () => {
    const host = await track(startMcpHost({ servers: [] }));
    host.install();
    expect(await mcp.search()).toEqual({ text: "The MCP host lists no tools.", tools: [], total: 0 });
    expect(await mcp.search({ query: "anything" })).toEqual({ text: 'No MCP tools matching "anything".', tools: [], total: 0 });
    expect((await searchError(mcp.search({ server: "github" }))).message).toBe('Unknown MCP server "github"; the catalog has no servers');
  });

  it("fails with a SearchError and sends nothing without an MCP host", async () => {
    const host = await track(startMcpHost({ servers }));
    const error = await searchError(mcp.search({ query: "issue" }));
    expect(error.message).toMatch(/^MCP catalog could not be downloaded: No MCP host\. /);
    expect(error.cause).toBeInstanceOf(TransportError);
    process.env["OPENSEEK_MCP"] = host.capability({ version: 2 });
    expect((await searchError(mcp.search())).message).toMatch(/^MCP catalog could not be downloaded: Invalid MCP host handoff/);
    expect(host.requests).toHaveLength(0);
  });

  it.each([
    [
      "a refused listing",
      hostReplies.result("catalog unavailable: still connecting", { isError: true }),
      /the host refused the listing: catalog unavailable: still connecting$/,
    ],
    ["a 503", hostReplies.status(503), /MCP transport failed \(HTTP 503\); execution outcome may be unknown$/],
    ["a dropped connection", hostReplies.drop(), /MCP connection failed/],
    ["invalid JSON", hostReplies.raw("<html>"), /MCP host returned invalid JSON/],
    ["an invalid envelope", hostReplies.json({ version: 1, content: "x" }), /Invalid MCP error flag/],
    ["no data", hostReplies.result(""), /malformed: its data is missing/],
    ["items that are not an array", hostReplies.result("", { data: { items: {} } }), /malformed: "items" is an object, not an array/],
    ["an item that is not an object", hostReplies.catalogPage(["github"]), /malformed: an item is the string "github"/],
    [
      "a tool before its server",
      hostReplies.catalogPage([{ server: "x", tool: { name: "t", input_schema: {} } }]),
      /comes before that server's item/,
    ],
    [
      "a tool without input_schema",
      hostReplies.catalogPage([{ server: "x" }, { server: "x", tool: { name: "t" } }]),
      /"input_schema" that is missing/,
    ],
    [
      "a tool with a numeric name",
      hostReplies.catalogPage([{ server: "x" }, { server: "x", tool: { name: 3, input_schema: {} } }]),
      /"name" that is number 3/,
    ],
    ["a server listed twice", hostReplies.catalogPage([{ server: "x" }, { server: "x" }]), /listed twice/],
    ["a numeric error", hostReplies.catalogPage([{ server: "x", error: 500 }]), /"error" that is number 500/],
    [
      "tools of an unavailable server",
      hostReplies.catalogPage([
        { server: "x", error: "down" },
        { server: "x", tool: { name: "t", input_schema: {} } },
      ]),
      /unavailable server "x" lists tools/,
    ],
    ["a numeric next_cursor", hostReplies.catalogPage([], 2 as never), /"next_cursor" is number 2/],
  ])("raises a SearchError for %s and does not cache the failure", async (_, reply, message) => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    host.enqueue(reply);
    const error = await searchError(mcp.search());
    expect(error.message).toMatch(/^MCP catalog could not be downloaded: /);
    expect(error.message).toMatch(message);
    // The next search downloads again and succeeds.
    const requestsAfterFailure = host.requests.length;
    expect((await mcp.search()).total).toBe(5);
    expect(host.requests.length).toBe(requestsAfterFailure + 1);
  });

  it("refuses a cursor that repeats instead of looping", async () => {
    const host = await track(startMcpHost());
    host.install();
    host.respondWith(() => hostReplies.catalogPage([], "again"));
    const error = await searchError(mcp.search());
    expect(error.message).toBe('MCP catalog could not be downloaded: the host repeated the cursor "again", so the listing would never end');
    expect(host.requests.map((request) => request.rawBody)).toEqual(['{"version":1,"list":{}}', '{"version":1,"list":{"cursor":"again"}}']);
  });

  it("times out a listing that never answers", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    host.enqueue(hostReplies.hang());
    const error = await searchError(searchWithSettings({}, { ...defaultSettings(), deadlineMs: 30 }));
    expect(error.message).toBe("MCP catalog could not be downloaded: MCP request timed out after 30 ms; execution outcome may be unknown");
  });
});

describe("mcp.search: pages", () => {
  it("lists a server's tools in order, with its instructions on the first page only", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const first = await mcp.search({ server: "github", limit: 2 });
    expect(first.tools.map((tool) => tool.name)).toEqual(["list_issues", "create_issue"]);
    expect(first.total).toBe(3);
    expect(first.nextOffset).toBe(2);
    expect(first.instructions).toBe("Use owner/name for repositories.");
    expect(
      first.text.startsWith(
        'Instructions from MCP server "github":\nUse owner/name for repositories.\n\n' +
          'MCP tools 1-2 of 3 on MCP server "github". Next page: offset 2.',
      ),
    ).toBe(true);
    const second = await mcp.search({ server: "github", limit: 2, offset: 2 });
    expect(second.tools.map((tool) => tool.name)).toEqual(["get_file"]);
    expect(second.nextOffset).toBeUndefined();
    expect(second.instructions).toBeUndefined();
    expect(second.text).not.toContain("Use owner/name");
  });

  it("ranks a query across servers, or within one server when both are given", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const everywhere = await mcp.search({ query: "list" });
    expect(everywhere.tools.map((tool) => tool.name).sort()).toEqual(["listEvents", "list_issues"]);
    const withinGithub = await mcp.search({ query: "list", server: "github" });
    expect(withinGithub.tools.map((tool) => tool.name)).toEqual(["list_issues"]);
    expect(withinGithub.instructions).toBe("Use owner/name for repositories.");
    // A property description counts: "owner/name" is only in list_issues' schema.
    expect((await mcp.search({ query: "owner" })).tools.map((tool) => tool.name)).toEqual(["list_issues"]);
    expect(await mcp.search({ query: "weather forecast" })).toEqual({
      text: 'No MCP tools matching "weather forecast".',
      tools: [],
      total: 0,
    });
  });

  it("treats blank strings as absent", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const all = await mcp.search();
    expect(await mcp.search({ query: "", server: "  " })).toEqual(all);
    expect(await mcp.search({ query: " \t ", server: "" })).toEqual(all);
    expect(await mcp.search({ query: "--- ?" })).toEqual(all);
  });

  it("ends a listing of every tool with the unavailable servers, on its last page only", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const first = await mcp.search({ limit: 3 });
    expect(first.nextOffset).toBe(3);
    expect(first.text).not.toContain("Unavailable MCP servers");
    const last = await mcp.search({ limit: 3, offset: 3 });
    expect(last.nextOffset).toBeUndefined();
    expect(last.text.endsWith("Unavailable MCP servers:\n- slack: failed to start: command not found")).toBe(true);
    // A query search is not a listing of every tool.
    expect((await mcp.search({ query: "event" })).text).not.toContain("Unavailable");
  });

  it("answers a search naming an unavailable server with a page carrying its error", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    expect(await mcp.search({ server: "slack", query: "post message" })).toEqual({
      text: 'MCP server "slack" is unavailable: failed to start: command not found',
      tools: [],
      total: 0,
    });
  });

  it("gives an empty last page at offset == total and refuses offsets past it", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const end = await mcp.search({ offset: 5 });
    expect(end.tools).toEqual([]);
    expect(end.total).toBe(5);
    expect(end.nextOffset).toBeUndefined();
    expect(end.text).toMatch(/^No more MCP tools: all 5 come before offset 5\./);
    expect((await searchError(mcp.search({ offset: 6 }))).message).toBe(
      "offset 6 is past the end: 5 tools match, so the last page starts at most at offset 5",
    );
    await searchError(mcp.search({ server: "slack", offset: 1 }));
    await searchError(mcp.search({ query: "event", offset: 3 }));
  });

  it("returns copies: changing a page's tools does not change the cached catalog", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    const page = await mcp.search({ limit: 1 });
    (page.tools[0]!.inputSchema as Record<string, unknown>)["type"] = "changed";
    page.tools[0]!.name = "changed";
    expect((await mcp.search({ limit: 1 })).tools[0]!.name).toBe("list_issues");
    expect((await mcp.search({ limit: 1 })).tools[0]!.inputSchema).toMatchObject({ type: "object" });
  });
});

describe("mcp.search: option errors", () => {
  it("names an unknown server and the known ones", async () => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    expect((await searchError(mcp.search({ server: "gitlab" }))).message).toBe(
      'Unknown MCP server "gitlab"; known servers: "github", "slack", "calendar"',
    );
  });

  it.each([
    [{ limit: 0 }, "limit must be at least 1, got 0"],
    [{ limit: -3 }, "limit must be at least 1, got -3"],
    [{ limit: 1.5 }, "limit must be an integer, got number 1.5"],
    [{ limit: Number.NaN }, "limit must be an integer, got number NaN"],
    [{ limit: "8" }, 'limit must be an integer, got the string "8"'],
    [{ offset: -1 }, "offset must not be negative, got -1"],
    [{ offset: 0.5 }, "offset must be an integer, got number 0.5"],
    [{ offset: Number.POSITIVE_INFINITY }, "offset must be an integer, got number Infinity"],
    [{ query: 42 }, "query must be a string, got number 42"],
    [{ server: null }, "server must be a string, got null"],
    [{ server: ["github"] }, "server must be a string, got an array"],
    [{ querry: "issues" }, 'Unknown search option "querry"; the options are query, server, limit, offset'],
    ["github", 'search options must be an object like { query, server, limit, offset }, got the string "github"'],
  ])("refuses %j before downloading anything", async (options, message) => {
    const host = await track(startMcpHost({ servers }));
    host.install();
    expect((await searchError(mcp.search(options as never))).message).toBe(message);
    expect(host.requests).toHaveLength(0);
  });
});
