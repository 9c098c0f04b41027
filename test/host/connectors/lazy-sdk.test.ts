/**
 * The MCP SDK is an optional peer (issue 19): the guest entry and the host entry load without it, and
 * the connectors say what to install when it is missing. A child process runs the built package with a
 * module hook that makes `@modelcontextprotocol/sdk` unresolvable, as in an install without it.
 */
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@modelcontextprotocol/")) {
    const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    error.code = "ERR_MODULE_NOT_FOUND";
    throw error;
  }
  return next(specifier, context);
}`;

const HOOKS_URL = `data:text/javascript,${encodeURIComponent(HOOKS)}`;
const REGISTER = `import { register } from "node:module"; register(${JSON.stringify(HOOKS_URL)});`;

const SCRIPT = `
const guest = await import(${JSON.stringify(pathToFileURL(resolve("dist/index.js")).href)});
const host = await import(${JSON.stringify(pathToFileURL(resolve("dist/host/index.js")).href)});
const lines = [typeof guest.serve, typeof host.runCode, typeof host.fetchCapability({ allow: ["https://a.example"] })];
try {
  await host.connectMcpServers({ mcpServers: { a: { command: "true" } } });
  lines.push("connected?");
} catch (error) {
  lines.push(error.name + ": " + error.message);
}
console.log(lines.join("\\n"));
`;

/** Runs `args` with the hook that hides the MCP SDK; stdout, stderr and the exit code. */
function withoutSdk(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) =>
    execFile(process.execPath, ["--import", `data:text/javascript,${encodeURIComponent(REGISTER)}`, ...args], (error, stdout, stderr) =>
      done({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr }),
    ),
  );
}

describe("the MCP SDK is loaded only by the connectors", () => {
  it("ears mcp without it exits 64 saying what to install; the other commands run", async () => {
    const mcp = await withoutSdk([resolve("dist/cli/main.js"), "mcp"]);
    expect(mcp.stderr).toBe(
      "ears: MCP connectors and ears mcp need @modelcontextprotocol/sdk, an optional peer dependency that is not installed: " +
        "npm install @modelcontextprotocol/sdk\n",
    );
    expect(mcp.code).toBe(64);
    const exec = await withoutSdk([resolve("dist/cli/main.js"), "exec", "--no-sandbox", "--code", "return 1 + 1;"]);
    expect(exec.stdout).toBe("2\n");
    expect(exec.code).toBe(0);
  });

  it("the guest and host entries load without it; connectMcpServers says what to install", async () => {
    const stdout = await new Promise<string>((done, fail) =>
      execFile(
        process.execPath,
        ["--import", `data:text/javascript,${encodeURIComponent(REGISTER)}`, "--input-type=module", "-e", SCRIPT],
        (error, out, err) => (error ? fail(new Error(`${error.message}\n${err}`)) : done(out)),
      ),
    );
    expect(stdout.trim().split("\n")).toEqual([
      "function",
      "function",
      "function",
      "MissingPeerError: MCP connectors and ears mcp need @modelcontextprotocol/sdk, an optional peer dependency that is not installed: " +
        "npm install @modelcontextprotocol/sdk",
    ]);
  });
});
