/**
 * A hostile upstream MCP server (fixtures/hostile/mcp-control-bytes.mjs): every text it sends (tool names,
 * descriptions, property names, enum values) reaches the terminal (`ears declarations`), a prompt
 * (`declarations()`) and an MCP client (`ears mcp`'s run_code description) with every control and
 * bidirectional character escaped (protocol/text.ts), colours too, and the declarations still compile and
 * call the tools by their real names. Before the fix `ears declarations` printed SGR colours raw, and
 * declarations() and run_code's description carried raw ESC, BEL, NUL, BS, DEL, C1 CSI and bidi overrides.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { connectMcpServers, readMcpConfig } from "../../src/host/index.js";
import { EARS, ears } from "../helpers/spawn-ears.js";

/** Any character no text from a server may carry raw. */
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** What the declarations of the second tool must say, escaped (as TypeScript source text). */
const ESCAPED = [
  "/** Colour \\x1b[30;40mblack on black, NUL\\x00 BEL\\x07 BS\\x08 DEL\\x7f CSI\\x9b2J RLO\\u202egnp.exe " +
    "LRI\\u2066x\\u2069 LRM\\u200e RLM\\u200f ALM\\u061c LS\\u2028end *\\/ done */",
  '"hostile.we\\u202eird\\u001b[31m": {',
  "/** a name with a \\u202eright-to-left override\\x1b[8m */",
  '"na\\u202eme": string;',
  '"mo\\u001bde"?: "a\\u001b[2Jb" | "c\\u202ed" | "e\\u009bf";',
  '"*/ x\\u2028"?: number;',
];

const dir = mkdtempSync(join(tmpdir(), "ears-declarations-hostile-"));
writeFileSync(
  join(dir, "mcp.json"),
  JSON.stringify({ mcpServers: { hostile: { command: process.execPath, args: [resolve("fixtures/hostile/mcp-control-bytes.mjs")] } } }),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ears declarations with a hostile MCP server", () => {
  it("prints the server's descriptions with every control and bidirectional character escaped, colours too", async () => {
    const run = await ears(["declarations", "--mcp-config", "mcp.json"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(UNSAFE);
    expect(run.stdout).toContain("Sets \\x1b]0;pwned\\x07 the title\\x1b[2J and clears\\x0dthe screen \\x9b31m");
    expect(run.stdout).toContain("Text\\x1b]52;c;cGF5bG9hZA==\\x07 for the clipboard");
    for (const text of ESCAPED) expect(run.stdout).toContain(text);
  });

  it("declarations() for a prompt has them escaped too, and says exactly what ears declarations prints", async () => {
    const connection = await connectMcpServers(readMcpConfig(join(dir, "mcp.json")), { onServerStderr: () => {} });
    try {
      const text = connection.contract.declarations();
      expect(text).not.toMatch(UNSAFE);
      for (const part of ESCAPED) expect(text).toContain(part);
      const cli = await ears(["declarations", "--mcp-config", "mcp.json"], { cwd: dir });
      expect(cli.stdout).toBe(text);
    } finally {
      await connection.close();
    }
  });

  it("the escaped declarations compile, and a body calls the tool by its real name and property names", async () => {
    const call = (mode: string) =>
      `const r = await ears.call("hostile.we\\u202eird\\x1b[31m", { "na\\u202eme": "n", "mo\\x1bde": ${mode} });\n` +
      'return r.status === "success" ? JSON.parse(r.content) : r;\n';
    writeFileSync(join(dir, "good.ts"), call('"c\\u202ed"'));
    writeFileSync(join(dir, "bad.ts"), call('"zzz"'));
    const args = ["exec", "--no-sandbox", "--mcp-config", "mcp.json", "--typecheck", "--json", "--code-file"];
    const good = await ears([...args, "good.ts"], { cwd: dir });
    expect(good.code).toBe(0);
    const report = JSON.parse(good.stdout) as { outcome: { structured: unknown } };
    expect(report.outcome.structured).toEqual({ "na\u202eme": "n", "mo\x1bde": "c\u202ed" });
    // The types are checked: a value the enum does not have is a compile error.
    const bad = await ears([...args, "bad.ts"], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ failure: { code: "CompileError" } });
  });

  it("ears mcp's run_code description, read by a real MCP client, has them escaped", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [EARS, "mcp", "--pool", "0", "--mcp-config", "mcp.json"],
      cwd: dir,
      stderr: "pipe",
    });
    transport.stderr?.on("data", () => {});
    const client = new Client({ name: "test", version: "1" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const description = tools.find((tool) => tool.name === "run_code")!.description!;
      expect(description).not.toMatch(UNSAFE);
      for (const text of ESCAPED) expect(description).toContain(text);
    } finally {
      await client.close();
    }
  });
});
