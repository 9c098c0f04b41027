// Tokenization, BM25 and tool ranking on their own: no host, no catalog download.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rankBm25 } from "../../src/openseek/bm25.js";
import type { McpTool } from "../../src/openseek/catalog.js";
import { rankTools, toolDocument } from "../../src/openseek/ranking.js";
import { tokenize } from "../../src/openseek/tokens.js";

function tool(server: string, name: string, description = "", inputSchema: McpTool["inputSchema"] = { type: "object" }): McpTool {
  return { server, name, description, inputSchema };
}

describe("tokenize", () => {
  it.each([
    ["List issues", ["list", "issues"]],
    ["list_issues", ["list", "issues"]],
    ["listIssues", ["list", "issues"]],
    ["list-issues.v2", ["list", "issues", "v2"]],
    ["HTTPServer getURLPath", ["http", "server", "get", "url", "path"]],
    ["utf8Decode", ["utf8", "decode"]],
    ["  owner/name, (repo)!  ", ["owner", "name", "repo"]],
    ["Größe ändern", ["größe", "ändern"]],
    ["___ -- ?", []],
    ["", []],
  ])("splits %j into %j", (text, tokens) => {
    expect(tokenize(text)).toEqual(tokens);
  });

  it("gives lower-case words of letters and digits only", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        for (const token of tokenize(text)) {
          expect(token).toMatch(/^[\p{L}\p{N}\p{M}]+$/u);
          expect(token).toBe(token.toLowerCase());
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("rankBm25", () => {
  const documents = [["a", "b"], ["a", "c", "c", "c"], ["d"]];

  it("scores with k1 1.2, b 0.75 and the non-negative IDF", () => {
    const [only] = rankBm25(documents, ["c"]);
    expect(only!.index).toBe(1);
    expect(only!.score).toBeCloseTo(1.3367053536619988, 12);
    const both = rankBm25(documents, ["a"]);
    expect(both.map((ranked) => ranked.index)).toEqual([0, 1]);
    expect(both[0]!.score).toBeCloseTo(0.4991762683023676, 12);
    expect(both[1]!.score).toBeCloseTo(0.3637214015268508, 12);
  });

  it("leaves out documents that share no term and counts a repeated query term once", () => {
    expect(rankBm25(documents, ["zzz"])).toEqual([]);
    expect(rankBm25(documents, [])).toEqual([]);
    expect(rankBm25([], ["a"])).toEqual([]);
    expect(rankBm25(documents, ["a", "a", "c"])).toEqual(rankBm25(documents, ["c", "a"]));
  });

  it("keeps input order for equal scores", () => {
    expect(rankBm25([["x", "y"], ["x", "z"], ["w"], ["x", "q"]], ["x"]).map((ranked) => ranked.index)).toEqual([0, 1, 3]);
  });

  it("returns exactly the documents sharing a term, best first, ties in input order", () => {
    const word = fc.constantFrom("a", "b", "c", "d", "e");
    fc.assert(
      fc.property(fc.array(fc.array(word, { maxLength: 6 }), { maxLength: 12 }), fc.array(word, { maxLength: 3 }), (docs, query) => {
        const ranked = rankBm25(docs, query);
        const expected = docs.flatMap((doc, index) => (doc.some((token) => query.includes(token)) ? [index] : []));
        expect(ranked.map((entry) => entry.index).sort((x, y) => x - y)).toEqual(expected);
        for (let i = 1; i < ranked.length; i++) {
          const [previous, current] = [ranked[i - 1]!, ranked[i]!];
          expect(previous.score >= current.score).toBe(true);
          if (previous.score === current.score) expect(previous.index).toBeLessThan(current.index);
        }
        for (const entry of ranked) expect(entry.score).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe("rankTools", () => {
  it("searches server, name, description and schema property names and descriptions at every depth", () => {
    const deep = tool("cal", "create_event", "Schedule", {
      type: "object",
      properties: {
        when: {
          type: "object",
          description: "Start of the event",
          properties: { zone: { type: "string", description: "IANA timezone" }, attendeeList: { type: "array" } },
        },
      },
    });
    const withOutput: McpTool = {
      ...tool("files", "stat", "File facts"),
      outputSchema: { type: "object", properties: { modifiedAt: { description: "last write" } } },
    };
    const tools = [tool("github", "list_issues", "List issues"), deep, withOutput];
    expect(rankTools(tools, "timezone")).toEqual([deep]);
    expect(rankTools(tools, "attendee")).toEqual([deep]);
    expect(rankTools(tools, "zone")).toEqual([deep]);
    expect(rankTools(tools, "github")).toEqual([tools[0]]);
    expect(rankTools(tools, "Issues")).toEqual([tools[0]]);
    // camelCase in a schema splits too: "attendeeList" holds "list", so it matches after list_issues.
    expect(rankTools(tools, "listIssues")).toEqual([tools[0], deep]);
    expect(rankTools(tools, "modified write")).toEqual([withOutput]);
    expect(rankTools(tools, "nothing here")).toEqual([]);
  });

  it("does not search data inside schemas (enum, const, default, examples)", () => {
    const schema = {
      type: "object",
      properties: { mode: { enum: [{ description: "secret" }], default: { description: "hidden" }, examples: ["sample"] } },
    };
    expect(rankTools([tool("s", "t", "", schema)], "secret hidden sample")).toEqual([]);
    expect(toolDocument(tool("s", "t", "", schema))).toEqual(["s", "t", "mode"]);
  });

  it("takes IDF from the tools being ranked, so a server search can order differently", () => {
    const alpha = tool("s", "a1", "alpha");
    const beta = tool("s", "b1", "beta");
    const others = Array.from({ length: 5 }, (_, index) => tool("t", `t${index}`, "alpha"));
    // Within server s both words are equally rare: a tie, so catalog order.
    expect(rankTools([alpha, beta], "alpha beta")).toEqual([alpha, beta]);
    // Across the catalog "alpha" is common, so the rarer "beta" wins.
    expect(rankTools([alpha, beta, ...others], "alpha beta")[0]).toBe(beta);
  });

  it("survives schemas nested deeper than the call stack", () => {
    let schema: Record<string, unknown> = { type: "string", description: "bottom" };
    for (let depth = 0; depth < 50_000; depth++) schema = { type: "object", properties: { inner: schema } };
    expect(rankTools([tool("s", "deep", "", schema as McpTool["inputSchema"])], "bottom")).toHaveLength(1);
  });
});
