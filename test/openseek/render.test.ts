// Rendering on its own: an entry shows the call, the description and both JSON Schemas; a page puts the
// instructions on top, then the heading, the entries, and the unavailable servers.
import { describe, expect, it } from "vitest";
import type { McpTool } from "../../src/openseek/catalog.js";
import { renderEntry, renderHeading, renderPage, renderUnavailableServer } from "../../src/openseek/render.js";

const listIssues: McpTool = {
  server: "github",
  name: "list_issues",
  description: "List issues of a repository",
  inputSchema: { type: "object", properties: { repo: { type: "string" } } },
  outputSchema: { type: "object", properties: { issues: { type: "array" } } },
};

describe("renderEntry", () => {
  it("shows how to call the tool, its description and both schemas", () => {
    expect(renderEntry(listIssues)).toBe(
      [
        "### github / list_issues",
        'Call: mcp.call("github", "list_issues", arguments)',
        "List issues of a repository",
        "Arguments (JSON Schema):",
        '{\n  "type": "object",\n  "properties": {\n    "repo": {\n      "type": "string"\n    }\n  }\n}',
        "Result data (JSON Schema):",
        '{\n  "type": "object",\n  "properties": {\n    "issues": {\n      "type": "array"\n    }\n  }\n}',
      ].join("\n"),
    );
  });

  it("says when there is no description or no result schema", () => {
    const bare: McpTool = { server: "s", name: 'odd "name"', description: " ", inputSchema: {} };
    expect(renderEntry(bare)).toBe(
      [
        '### s / odd "name"',
        'Call: mcp.call("s", "odd \\"name\\"", arguments)',
        "(no description)",
        "Arguments (JSON Schema):",
        "{}",
        "Result data: no schema declared.",
      ].join("\n"),
    );
  });
});

describe("renderHeading", () => {
  it.each([
    [{ total: 12, offset: 0, shown: 8, nextOffset: 8 }, "MCP tools 1-8 of 12. Next page: offset 8."],
    [{ total: 12, offset: 8, shown: 4 }, "MCP tools 9-12 of 12."],
    [{ query: "issue", server: "github", total: 2, offset: 0, shown: 2 }, 'MCP tools 1-2 of 2 matching "issue" on MCP server "github".'],
    [{ query: "weather", total: 0, offset: 0, shown: 0 }, 'No MCP tools matching "weather".'],
    [{ server: "empty", total: 0, offset: 0, shown: 0 }, 'MCP server "empty" has no tools.'],
    [{ total: 0, offset: 0, shown: 0 }, "The MCP host lists no tools."],
    [{ total: 3, offset: 3, shown: 0 }, "No more MCP tools: all 3 come before offset 3."],
  ])("renders %j", (summary, text) => {
    expect(renderHeading(summary)).toBe(text);
  });
});

describe("renderPage", () => {
  it("puts instructions on top and unavailable servers last, separated by blank lines", () => {
    expect(
      renderPage({
        instructions: { server: "github", text: "Be careful." },
        heading: "HEADING",
        entries: ["ENTRY 1", "ENTRY 2"],
        unavailable: [
          { name: "slack", error: "down" },
          { name: "jira", error: "auth\nexpired" },
        ],
      }),
    ).toBe(
      'Instructions from MCP server "github":\nBe careful.\n\nHEADING\n\nENTRY 1\n\nENTRY 2\n\n' +
        "Unavailable MCP servers:\n- slack: down\n- jira: auth\nexpired",
    );
    expect(renderPage({ heading: "HEADING", entries: [], unavailable: [] })).toBe("HEADING");
  });

  it("renders the page of an unavailable server", () => {
    expect(renderUnavailableServer({ name: "slack", error: "connection refused" })).toBe(
      'MCP server "slack" is unavailable: connection refused',
    );
  });
});

describe("text from an MCP server on a page", () => {
  it("shows every control and bidirectional character escaped: names, description, schemas, instructions, errors", () => {
    const hostile: McpTool = {
      server: "s\x1b[31m",
      name: "t\u202eol",
      description: "Colour\x1b[30;40m NUL\x00 BEL\x07 CSI\x9b2J RLO\u202egnp.exe\nline two",
      inputSchema: { type: "object", properties: { "k\u2066ey\x1b": { type: "string", enum: ["a\u202eb"] } } },
      outputSchema: { description: "\x9b2J" },
    };
    const page = renderPage({
      instructions: { server: "s\u200f", text: "Use \x1b]0;pwned\x07 me" },
      heading: renderHeading({ server: "s\u061c", total: 0, offset: 0, shown: 0 }),
      entries: [renderEntry(hostile)],
      unavailable: [{ name: "down\x1b[2J", error: "gone\u202e" } as never],
    });
    expect(page).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
    expect(page).toContain("### s\\x1b[31m / t\\u202eol");
    expect(page).toContain('Call: mcp.call("s\\u001b[31m", "t\\u202eol", arguments)');
    expect(page).toContain("Colour\\x1b[30;40m NUL\\x00 BEL\\x07 CSI\\x9b2J RLO\\u202egnp.exe\nline two");
    expect(page).toContain('"k\\u2066ey\\u001b": {');
    expect(page).toContain('"a\\u202eb"');
    expect(page).toContain('"description": "\\u009b2J"');
    expect(page).toContain('Instructions from MCP server "s\\u200f":\nUse \\x1b]0;pwned\\x07 me');
    expect(page).toContain('MCP server "s\\u061c" has no tools.');
    expect(page).toContain("- down\\x1b[2J: gone\\u202e");
    expect(renderUnavailableServer({ name: "x\x07", error: "e\x1b" } as never)).toBe('MCP server "x\\u0007" is unavailable: e\\x1b');
  });
});
