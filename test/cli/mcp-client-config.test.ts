/**
 * Every MCP client configuration the docs show for `ears mcp` works from any directory (issue 29 item 2): a
 * bare `npx ears` would resolve the unscoped registry package "ears". Each JSON block of README.md and
 * docs/*.md with an `ears mcp` server is started as a client starts it, from an unrelated empty temporary
 * directory with a private npm cache and HOME, and driven by the MCP SDK's client through initialize,
 * tools/list and one run_code. npx installs from a registry on loopback (test/helpers/local-registry.ts)
 * that serves the `npm pack` tarball of this repository as `@posoco/ears` and every other package from
 * what the repository has installed, so the configurations run exactly as written, offline.
 * With EARS_TEST_REGISTRY=1 they run against the npm registry instead (CONTRIBUTING.md, "Tests that use the
 * registry"): the peers' ranges as published today; `@posoco/ears` is not on it, so its `--package=` gets
 * the tarball's path there.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MCP_HELP } from "../../src/cli/help.js";
import { startLocalRegistry, type LocalRegistry } from "../helpers/local-registry.js";

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
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
/** The npm registry itself, when asked for; else the loopback one. */
const realRegistry = process.env.EARS_TEST_REGISTRY === "1";

describe("the documented MCP client configurations of ears mcp", () => {
  let folder: string;
  let tarball: string;
  let registry: LocalRegistry | undefined;
  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "ears-client-config-"));
    execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", folder], { cwd: root, stdio: "ignore" });
    tarball = join(
      folder,
      readdirSync(folder).find((name) => name.endsWith(".tgz"))!,
    );
    if (!realRegistry) {
      const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, unknown>;
      registry = await startLocalRegistry([join(root, "node_modules")], [{ manifest, tarball }]);
    }
  }, 120_000);
  afterAll(async () => {
    await registry?.close();
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

  it.each(configs.map((c) => [c.where, c.server] as const))(
    "%s starts from an empty directory and serves initialize, tools/list and run_code",
    async (where, server) => {
      const dir = mkdtempSync(join(folder, "client-"));
      const cwd = join(dir, "empty");
      mkdirSync(cwd);
      const servers = join(dir, "mcp.json");
      writeFileSync(servers, JSON.stringify({ mcpServers: {} }));
      const args = (server.args ?? []).map((arg) =>
        arg === "--package=@posoco/ears" && realRegistry
          ? `--package=${tarball}`
          : /^\/(home\/me|abs)\/.*mcp\.json$/.test(arg)
            ? servers
            : arg,
      );
      // Only what npx needs: no proxy, no CA file, no user or project npmrc; one cache for every configuration.
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "",
        HOME: dir,
        npm_config_cache: join(folder, "npm-cache"),
        npm_config_update_notifier: "false",
        npm_config_audit: "false",
        npm_config_fund: "false",
        ...(registry === undefined ? {} : { npm_config_registry: registry.url, npm_config_proxy: "", npm_config_https_proxy: "" }),
        ...server.env,
      };
      const transport = new StdioClientTransport({ command: server.command, args, env, cwd, stderr: "pipe" });
      let stderr = "";
      transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
      const client = new Client({ name: "client-config-test", version: "1" });
      try {
        // Offline, a configuration takes 2 to 10 s here; the bounds leave room for a machine busy with the whole suite.
        await client.connect(transport, { timeout: realRegistry ? 220_000 : 90_000 }).catch((error: Error) => {
          const missed = registry === undefined ? "" : `; the loopback registry had no ${JSON.stringify(registry.missed)}`;
          throw new Error(`${where}: ${error.message}${missed}; its stderr:\n${stderr}`);
        });
        const { tools } = await client.listTools();
        expect(
          tools.map((tool) => tool.name),
          where,
        ).toEqual(["run_code"]);
        const result = await client.callTool({ name: "run_code", arguments: { code: "return 6 * 7;" } }, undefined, { timeout: 60_000 });
        expect(result.content, `${where}\n${stderr}`).toEqual([{ type: "text", text: "42" }]);
        if (registry !== undefined) {
          // npx got everything from the loopback registry (the cache was empty before the first configuration).
          expect(registry.missed, where).toEqual([]);
          expect(registry.served).toContain(`@posoco/ears@${version}`);
        }
      } finally {
        await client.close();
      }
    },
    realRegistry ? 300_000 : 150_000,
  );
});
