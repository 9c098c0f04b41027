/**
 * docs/connectors.md's host loop over an MCP configuration is code users copy: it type-checks (strict,
 * nodenext, against the built package) and runs as written against server-everything, its types stripped.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runStripped, typeErrors } from "../helpers/doc-examples.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
// Inside the repository, where the package name resolves to this package's build.
const scratch = join(root, ".connectors-docs-example");
const example = /<!-- code-example: connectors-host-loop -->\n```ts\n([\s\S]*?)```/.exec(
  readFileSync(join(root, "docs/connectors.md"), "utf8"),
)?.[1];
const everything = join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

describe("docs/connectors.md", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("the host loop over an MCP configuration type-checks in strict nodenext against the built package", () => {
    expect(example).toContain("connectMcpServers(readMcpConfig(");
    expect(typeErrors(scratch, "host-loop.ts", example!)).toBe("");
  });

  it("the host loop runs against server-everything and prints the tool's answer", () => {
    mkdirSync(scratch, { recursive: true });
    writeFileSync(
      join(scratch, "mcp.json"),
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, "stdio"] } } }),
    );
    const stdout = runStripped(scratch, "host-loop.mjs", example!, { cwd: scratch, quiet: true });
    expect(stdout).toBe("The sum of 1 and 2 is 3.\n");
  });
});
