/**
 * Every MCP client configuration the docs show for `ears mcp` works from any directory (issue 29 item 2): a
 * bare `npx ears` would resolve the unscoped registry package "ears". Each JSON block of README.md and
 * docs/*.md with an `ears mcp` server is started as a client starts it, from an unrelated empty temporary
 * directory with a private npm cache, and driven by the MCP SDK's client through initialize, tools/list and
 * one run_code. `@posoco/ears` is not on the registry: its `--package=` argument gets the `npm pack` tarball
 * (packed once), and the example's configuration file a real one; everything else is as documented. npx
 * installs the peers from the registry on first use, hence the long timeouts.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_HELP } from "../../src/cli/help.js";

const root = resolve(import.meta.dirname, "../..");

interface ServerEntry {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

/** Each `ears mcp` server of each ```json block in the README and docs/, with where it is. */
function documentedConfigs(): { where: string; server: ServerEntry }[] {
  const files = [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((n) => n.endsWith(".md"))
      .map((n) => `docs/${n}`),
  ];
  return files.flatMap((file) => {
    const text = readFileSync(join(root, file), "utf8");
    return [...text.matchAll(/```json\n([\s\S]*?)```/g)].flatMap((match) => {
      let config: { mcpServers?: Record<string, ServerEntry> };
      try {
        config = JSON.parse(match[1]!);
      } catch {
        return [];
      }
      const line = text.slice(0, match.index).split("\n").length + 1;
      return Object.values(config.mcpServers ?? {})
        .filter(
          (server) =>
            [server.command, ...(server.args ?? [])].some((word) => /(^|\/)ears$/.test(word)) && (server.args ?? []).includes("mcp"),
        )
        .map((server) => ({ where: `${file}:${line}`, server }));
    });
  });
}

/** The configuration `ears mcp --help` shows, as written there (over lines). */
function helpConfig(): { where: string; server: ServerEntry } {
  const text = /\{"mcpServers": \{"ears": [\s\S]*?\]\}\}\}/.exec(MCP_HELP)?.[0];
  if (text === undefined) throw new Error("ears mcp --help shows no client configuration");
  return {
    where: "ears mcp --help",
    server: (JSON.parse(text.replace(/\n\s*/g, " ")) as { mcpServers: { ears: ServerEntry } }).mcpServers.ears,
  };
}

const configs = [...documentedConfigs(), helpConfig()];

describe("the documented MCP client configurations of ears mcp", () => {
  let folder: string;
  let tarball: string;
  beforeAll(() => {
    if (process.env.EARS_TEST_REGISTRY !== "1") return;
    folder = mkdtempSync(join(tmpdir(), "ears-client-config-"));
    execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", folder], { cwd: root, stdio: "ignore" });
    tarball = join(
      folder,
      readdirSync(folder).find((name) => name.endsWith(".tgz"))!,
    );
  }, 120_000);
  afterAll(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it("are found, and none runs a bare `npx ears` (the unscoped registry package)", () => {
    expect(configs.length).toBeGreaterThan(0);
    for (const { where, server } of configs) {
      if (server.command !== "npx") continue;
      expect(server.args, where).toContain("--package=@posoco/ears");
      expect(server.args!.indexOf("ears"), where).toBeGreaterThan(server.args!.indexOf("--package=@posoco/ears"));
    }
  });

  // npx installs the peers from the npm registry, and tests send traffic to loopback only: this part runs when
  // asked for (EARS_TEST_REGISTRY=1; CONTRIBUTING.md, "Tests that use the registry"), the check above always.
  it.runIf(process.env.EARS_TEST_REGISTRY === "1").each(configs.map((c) => [c.where, c.server] as const))(
    "%s starts from an empty directory and serves initialize, tools/list and run_code",
    async (where, server) => {
      const dir = mkdtempSync(join(folder, "client-"));
      const cwd = join(dir, "empty");
      mkdirSync(cwd);
      const servers = join(dir, "mcp.json");
      writeFileSync(servers, JSON.stringify({ mcpServers: {} }));
      const args = (server.args ?? []).map((arg) =>
        arg === "--package=@posoco/ears" ? `--package=${tarball}` : /^\/(home\/me|abs)\/.*mcp\.json$/.test(arg) ? servers : arg,
      );
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        npm_config_cache: join(dir, "npm-cache"),
        npm_config_update_notifier: "false",
        ...server.env,
      };
      const transport = new StdioClientTransport({ command: server.command, args, env, cwd, stderr: "pipe" });
      let stderr = "";
      transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
      const client = new Client({ name: "client-config-test", version: "1" });
      try {
        await client.connect(transport, { timeout: 220_000 }).catch((error: Error) => {
          throw new Error(`${where}: ${error.message}; its stderr:\n${stderr}`);
        });
        const { tools } = await client.listTools();
        expect(
          tools.map((tool) => tool.name),
          where,
        ).toEqual(["run_code"]);
        const result = await client.callTool({ name: "run_code", arguments: { code: "return 6 * 7;" } }, undefined, { timeout: 60_000 });
        expect(result.content, `${where}\n${stderr}`).toEqual([{ type: "text", text: "42" }]);
      } finally {
        await client.close();
      }
    },
    300_000,
  );
});
