// Every example in docs/openseek.md runs as written against loopback host doubles (only the package
// specifiers are pointed at the sources), so the documentation cannot drift from the SDK.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { hostReplies, startMcpHost, startPtcHost } from "../../src/testing/openseek-doubles.js";
import { useOpenSeekLifecycle } from "../helpers/openseek-lifecycle.js";

const track = useOpenSeekLifecycle();
const root = resolve(fileURLToPath(import.meta.url), "../../..");
const doc = readFileSync(join(root, "docs/openseek.md"), "utf8");
const scratch = mkdtempSync(join(tmpdir(), "ears-openseek-docs-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The code block that follows `<!-- example: name -->`. */
function example(name: string): string {
  const match = new RegExp(`<!-- example: ${name} -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (match === null) throw new Error(`docs/openseek.md has no example "${name}"`);
  return match[1]!;
}

let runs = 0;
/** Runs an example as a module in this process (so it uses the sources) and returns what it printed. */
async function run(name: string, cwd?: string): Promise<string[]> {
  const code = example(name)
    .replaceAll('"@posoco/ears/openseek"', JSON.stringify(pathToFileURL(join(root, "src/openseek/index.ts")).href))
    .replaceAll('"@posoco/ears/testing"', JSON.stringify(pathToFileURL(join(root, "src/testing/index.ts")).href));
  const file = join(scratch, `${name}-${++runs}.mjs`);
  writeFileSync(file, code);
  const printed: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void printed.push(args.join(" ")));
  const previous = process.cwd();
  if (cwd !== undefined) process.chdir(cwd);
  try {
    await import(pathToFileURL(file).href);
  } finally {
    process.chdir(previous);
    log.mockRestore();
  }
  return printed;
}

/** 1-based code-point column of `needle` in `line`. */
function column(line: string, needle: string): number {
  return [...line.slice(0, line.indexOf(needle))].length + 1;
}

describe("docs/openseek.md examples", () => {
  it("ptc-call edits and prints the result", async () => {
    const host = await track(startPtcHost({ tools: { edit: () => ({ content: "applied 1 edit", data: { outcome: "applied" } }) } }));
    host.install();
    expect(await run("ptc-call")).toEqual(["applied 1 edit"]);
    expect(host.requests[0]!.body).toEqual({
      version: 1,
      name: "edit",
      arguments: { path: "note.txt", start_line: 1, old_string: "before", new_string: "after" },
    });
  });

  it("ptc-errors prints results, and transport failures without retrying", async () => {
    const host = await track(startPtcHost({ tools: { web_search: () => ({ content: "3 sources" }) } }));
    host.install();
    expect(await run("ptc-errors")).toEqual(["3 sources"]);
    host.enqueue(hostReplies.status(503));
    expect(await run("ptc-errors")).toEqual([
      "web_search did not complete (http): PTC transport failed (HTTP 503); execution outcome may be unknown",
    ]);
    expect(host.requests).toHaveLength(2);
    delete process.env["OPENSEEK_PTC"];
    expect((await run("ptc-errors"))[0]).toMatch(/^web_search did not complete \(handoff\): No PTC host\./);
  });

  it("fix-warnings applies guarded edits bottom-up and keeps only what the host accepted", async () => {
    const project = join(scratch, `project-${++runs}`);
    mkdirSync(join(project, "src"), { recursive: true });
    mkdirSync(join(project, "bin"));
    const a = ["fn main {", '  let s = "😀"; old_a(1) + old_b(2)', "  old_c()", "}", ""];
    const b = ["old_d()", "old_e()", ""];
    writeFileSync(join(project, "src/a.mbt"), a.join("\n"));
    writeFileSync(join(project, "src/b.mbt"), b.join("\n"));
    const deprecated = (path: string, lines: string[], line: number, name: string, use: string) => {
      const from = column(lines[line - 1]!, name);
      return {
        level: "warning",
        error_code: 20,
        path,
        loc: `${line}:${from}-${line}:${from + name.length}`,
        message: `${name} is deprecated. Use \`${use}\` instead`,
      };
    };
    const diagnostics = [
      deprecated("src/a.mbt", a, 2, "old_a", "new_a"),
      { level: "error", error_code: 4014, path: "src/a.mbt", loc: "3:3-3:8", message: "type mismatch" },
      deprecated("src/a.mbt", a, 2, "old_b", "new_b"),
      deprecated("src/b.mbt", b, 1, "old_d", "new_d"),
      { level: "warning", error_code: 20, path: "src/a.mbt", loc: "1:1-1:3", message: "fn is deprecated. Use `a.b` instead" },
      deprecated("src/a.mbt", a, 3, "old_c", "new_c"),
      deprecated("src/b.mbt", b, 2, "old_e", "new_e"),
      { level: "warning", error_code: 20, path: "src/a.mbt", loc: "2:3-3:4", message: "Use `x` instead" },
    ];
    writeFileSync(join(project, "bin/diagnostics.jsonl"), diagnostics.map((d) => JSON.stringify(d)).join("\n") + "\n");
    writeFileSync(join(project, "bin/moon"), '#!/bin/sh\ncat "$(dirname "$0")/diagnostics.jsonl"\n');
    chmodSync(join(project, "bin/moon"), 0o755);

    const edits: unknown[] = [];
    const host = await track(
      startPtcHost({
        tools: {
          edit: (args) => {
            const edit = args as { path: string; start_line: number; old_string: string; new_string: string };
            edits.push(args);
            if (edit.old_string.endsWith("old_c"))
              return { content: "reverted: warnings did not decrease", data: { outcome: "reverted", reason: "warning_delta" } };
            if (edit.old_string.endsWith("old_e"))
              return { content: "reverted", isError: true, data: { outcome: "reverted", reason: "error_delta", restore_failed: true } };
            const file = join(project, edit.path);
            const lines = readFileSync(file, "utf8").split("\n");
            const line = lines[edit.start_line - 1]!;
            if (!line.startsWith(edit.old_string))
              return { content: "old_string not found", isError: true, data: { outcome: "not_found" } };
            lines[edit.start_line - 1] = edit.new_string + line.slice(edit.old_string.length);
            writeFileSync(file, lines.join("\n"));
            return { content: "applied", data: { outcome: "applied", path: edit.path } };
          },
        },
      }),
    );
    host.install();
    const path = process.env["PATH"];
    process.env["PATH"] = `${join(project, "bin")}${delimiter}${path ?? ""}`;
    let printed: string[];
    try {
      printed = await run("fix-warnings", project);
    } finally {
      process.env["PATH"] = path;
    }
    expect(printed).toEqual([
      "fixed 2 of 5 deprecation warnings",
      "left: src/a.mbt:3: warning_delta",
      "left: src/b.mbt:2: reverted, but the file could not be restored",
      "left: src/b.mbt:1: skipped after a failed restore",
    ]);
    expect(readFileSync(join(project, "src/a.mbt"), "utf8")).toBe(
      ["fn main {", '  let s = "😀"; new_a(1) + new_b(2)', "  old_c()", "}", ""].join("\n"),
    );
    expect(readFileSync(join(project, "src/b.mbt"), "utf8")).toBe(b.join("\n"));
    // Right to left on line 2: old_b first, anchored on the whole prefix through its span, with both guards.
    expect(edits[1]).toEqual({
      path: "src/a.mbt",
      start_line: 2,
      end_line: 2,
      old_string: '  let s = "😀"; old_a(1) + old_b',
      new_string: '  let s = "😀"; old_a(1) + new_b',
      revert_if_error_delta_greater_or_equal: 1,
      revert_if_warning_delta_greater_or_equal: 0,
    });
    expect(edits).toHaveLength(4);
  });

  it("mcp-search-call prints the page, calls the first tool, and shows its saved images", async () => {
    const mcpHost = await track(
      startMcpHost({
        servers: [
          {
            name: "github",
            instructions: "Repositories are owner/name.",
            tools: [
              { name: "get_file", description: "Read a file" },
              {
                name: "list_issues",
                description: "List issues of a repository",
                inputSchema: { type: "object", properties: { repo: { type: "string" } } },
                handler: (args) => ({ content: `2 issues in ${(args as { repo: string }).repo}`, images: ["/tmp/mcp/chart.png"] }),
              },
            ],
          },
        ],
      }),
    );
    const ptc = await track(startPtcHost({ tools: { read_image: () => ({ content: "Image: /tmp/mcp/chart.png" }) } }));
    mcpHost.install();
    ptc.install();
    const printed = await run("mcp-search-call");
    expect(printed[0]).toMatch(
      /^Instructions from MCP server "github":\nRepositories are owner\/name\.\n\nMCP tools 1-1 of 1 matching "list issues"/,
    );
    expect(printed[0]).toContain('Call: mcp.call("github", "list_issues", arguments)');
    expect(printed[1]).toBe("2 issues in moonbitlang/openseek");
    expect(ptc.requests.map((request) => request.body)).toEqual([
      { version: 1, name: "read_image", arguments: { path: "/tmp/mcp/chart.png" } },
    ]);
  });

  it("mcp-listing pages through every tool and ends with the unavailable servers", async () => {
    const tools = Array.from({ length: 25 }, (_, index) => ({ name: `tool_${index}` }));
    const host = await track(
      startMcpHost({
        servers: [
          { name: "many", tools },
          { name: "down", error: "timed out during initialize" },
        ],
      }),
    );
    host.install();
    const printed = await run("mcp-listing");
    expect(printed).toHaveLength(2);
    expect(printed[0]).toMatch(/^MCP tools 1-20 of 25\. Next page: offset 20\./);
    expect(printed[1]).toMatch(/^MCP tools 21-25 of 25\./);
    expect(printed[1]!.endsWith("Unavailable MCP servers:\n- down: timed out during initialize")).toBe(true);
  });

  it("testing-doubles runs its assertions", async () => {
    expect(await run("testing-doubles")).toEqual(["doubles ok"]);
  });
});
