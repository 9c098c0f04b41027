/**
 * docs/connectors.md's host loop over an MCP configuration is code users copy: it type-checks (strict,
 * nodenext, against the built package) and runs as written against server-everything, its types stripped.
 */
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

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
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "host-loop.ts"), example!);
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const args = [
      "--ignoreConfig",
      "--strict",
      "--noEmit",
      "--module",
      "nodenext",
      "--target",
      "es2022",
      "--types",
      "node",
      "--skipLibCheck",
    ];
    let output = "";
    try {
      execFileSync(process.execPath, [tsc, ...args, join(scratch, "host-loop.ts")], { cwd: root, encoding: "utf8" });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout);
    }
    expect(output).toBe("");
  });

  it("the host loop runs against server-everything and prints the tool's answer", () => {
    mkdirSync(scratch, { recursive: true });
    writeFileSync(
      join(scratch, "mcp.json"),
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, "stdio"] } } }),
    );
    const amaro = createRequire(import.meta.url)("amaro") as { transformSync(code: string, options: { mode: string }): { code: string } };
    writeFileSync(join(scratch, "host-loop.mjs"), amaro.transformSync(example!, { mode: "strip-only" }).code);
    const stdout = execFileSync(process.execPath, [join(scratch, "host-loop.mjs")], {
      cwd: scratch,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    expect(stdout).toBe("The sum of 1 and 2 is 3.\n");
  });
});
