/**
 * `ears declarations` and a hostile upstream MCP server (issue 28, item 11): the tool descriptions it
 * prints come from the server, and reach the terminal with their control bytes escaped as the CLI escapes
 * a guest's logs (src/cli/terminal-text.ts), colours aside. Before the fix ESC ]0;…BEL reached the terminal.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { unescapeTerminalText } from "../../src/cli/terminal-text.js";
import { ears } from "../helpers/spawn-ears.js";

const dir = mkdtempSync(join(tmpdir(), "ears-declarations-hostile-"));
writeFileSync(
  join(dir, "mcp.json"),
  JSON.stringify({ mcpServers: { hostile: { command: process.execPath, args: [resolve("fixtures/hostile/mcp-control-bytes.mjs")] } } }),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ears declarations with a hostile MCP server", () => {
  it("prints the server's descriptions with every control byte escaped, losslessly", async () => {
    const run = await ears(["declarations", "--mcp-config", "mcp.json"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    expect(run.stdout).toContain("Sets \\x1b]0;pwned\\x07 the title\\x1b[2J and clears\\x0dthe screen \\x9b31m");
    expect(run.stdout).toContain("Text\\x1b]52;c;cGF5bG9hZA==\\x07 for the clipboard");
    expect(unescapeTerminalText(run.stdout)).toContain("Sets \x1b]0;pwned\x07 the title\x1b[2J and clears\rthe screen \x9b31m");
  });
});
