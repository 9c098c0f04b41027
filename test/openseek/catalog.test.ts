// Catalog building and whole-search pages on their own (no host): items across replies, optional fields,
// and pages of real tool entries against the 40,000-character budget.
import { describe, expect, it } from "vitest";
import { CatalogBuilder, parseCatalogPage, type Catalog, type McpTool } from "../../src/openseek/catalog.js";
import { PAGE_BUDGET } from "../../src/openseek/paging.js";
import { renderEntry } from "../../src/openseek/render.js";
import { SearchError } from "../../src/openseek/search-error.js";
import { readOptions, searchCatalog } from "../../src/openseek/search.js";

describe("catalog building", () => {
  it("reads replies in order; a server's tools may continue in the next reply", () => {
    const builder = new CatalogBuilder();
    builder.add(
      parseCatalogPage({
        items: [
          { server: "a", instructions: "Hi" },
          { server: "a", tool: { name: "one", input_schema: {} } },
        ],
        next_cursor: "x",
      }).items,
    );
    builder.add(
      parseCatalogPage({
        items: [
          { server: "a", tool: { name: "two", description: "Second", input_schema: { type: "object" }, output_schema: null } },
          { server: "b", error: "down", instructions: null },
        ],
      }).items,
    );
    expect(builder.build()).toEqual({
      servers: [
        { name: "a", instructions: "Hi" },
        { name: "b", error: "down" },
      ],
      tools: [
        { server: "a", name: "one", description: "", inputSchema: {} },
        { server: "a", name: "two", description: "Second", inputSchema: { type: "object" } },
      ],
    });
  });

  it("reads next_cursor: a string continues, null or absent ends", () => {
    expect(parseCatalogPage({ items: [], next_cursor: "c" })).toEqual({ items: [], nextCursor: "c" });
    expect(parseCatalogPage({ items: [], next_cursor: null })).toEqual({ items: [] });
    expect(parseCatalogPage({ items: [] })).toEqual({ items: [] });
    expect(() => parseCatalogPage(null)).toThrow(SearchError);
    expect(() => parseCatalogPage({ items: [], next_cursor: true })).toThrow(/"next_cursor" is boolean true/);
  });
});

function toolWithDescription(index: number, length: number): McpTool {
  return { server: "big", name: `tool_${index}`, description: "d".repeat(length), inputSchema: { type: "object" } };
}

function catalogOf(tools: McpTool[]): Catalog {
  return {
    servers: [
      { name: "big", instructions: "Read me first." },
      { name: "down", error: "offline" },
    ],
    tools,
  };
}

describe("search pages", () => {
  it("fills a page up to 40,000 characters of entries, with instructions and unavailable servers on top of it", () => {
    // Each entry is exactly 10,000 characters, so four fit and the fifth goes to the next page.
    const overhead = renderEntry(toolWithDescription(0, 1)).length - 1;
    const tools = Array.from({ length: 6 }, (_, index) => toolWithDescription(index, 10_000 - overhead));
    for (const tool of tools) expect(renderEntry(tool)).toHaveLength(10_000);
    const first = searchCatalog(catalogOf(tools), readOptions({ server: "big" }));
    expect(first.tools).toHaveLength(4);
    expect(first.nextOffset).toBe(4);
    expect(first.instructions).toBe("Read me first.");
    expect(first.text.length).toBeGreaterThan(PAGE_BUDGET);
    const listing = searchCatalog(catalogOf(tools), readOptions({ offset: 4 }));
    expect(listing.tools.map((tool) => tool.name)).toEqual(["tool_4", "tool_5"]);
    expect(listing.text.endsWith("Unavailable MCP servers:\n- down: offline")).toBe(true);
    expect(listing.text.length).toBeGreaterThan(20_000);
  });

  it("cuts an oversize tool's entry but keeps its full record", () => {
    const huge = toolWithDescription(0, 100_000);
    const page = searchCatalog(catalogOf([huge, toolWithDescription(1, 10)]), readOptions({ query: "tool" }));
    expect(page.tools).toEqual([huge]);
    expect(page.nextOffset).toBe(1);
    expect(page.text).toContain("entry cut:");
    expect(page.text.length).toBeLessThan(PAGE_BUDGET + 200);
    const next = searchCatalog(catalogOf([huge, toolWithDescription(1, 10)]), readOptions({ query: "tool", offset: 1 }));
    expect(next.tools.map((tool) => tool.name)).toEqual(["tool_1"]);
  });
});
