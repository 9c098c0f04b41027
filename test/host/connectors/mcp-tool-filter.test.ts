/**
 * `allowTools` / `denyTools` per server of an `mcpServers` configuration (issue 29 item 9): a tool left out
 * is neither declared nor callable, and a body's call to it is refused by the host without reaching the
 * server. Against server-everything, whose `get-env` hands a body the server's environment.
 */
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { connectMcpServers, mcpConfig, runCode, type McpConfig } from "../../../src/host/index.js";

const EVERYTHING = resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const MARK = "ears-filter-secret-7f3a";

function everything(filter: { allowTools?: string[]; denyTools?: string[] }): McpConfig {
  return {
    mcpServers: {
      everything: {
        command: process.execPath,
        args: [EVERYTHING, "stdio"],
        env: { PATH: process.env.PATH ?? "", SECRET: MARK },
        ...filter,
      },
    },
  };
}

describe("allowTools and denyTools", () => {
  it("denyTools: get-env is not declared, and a body calling it is refused by the host, never reaching the server", async () => {
    const open = await connectMcpServers(everything({}), { onServerStderr: () => {} });
    try {
      // The attack without the filter: get-env hands the body the server's environment.
      const leaked = await runCode({
        code: 'return await ears.call("everything.get-env", {});',
        capabilities: open.capabilities,
        allowed: open.contract.names,
      });
      expect(JSON.stringify(leaked.outcome)).toContain(MARK);
    } finally {
      await open.close();
    }
    const denied = await connectMcpServers(everything({ denyTools: ["get-env"] }), { onServerStderr: () => {} });
    try {
      expect(denied.contract.names).not.toContain("everything.get-env");
      expect(denied.contract.names).toContain("everything.echo");
      expect(denied.contract.declarations()).not.toContain("get-env");
      expect(denied.capabilities["everything.get-env"]).toBeUndefined();
      const report = await runCode({
        code: 'return await ears.call("everything.get-env", {});',
        capabilities: denied.capabilities,
        // Even a host that allows the name: there is no capability behind it.
        allowed: [...denied.contract.names, "everything.get-env"],
      });
      expect(JSON.stringify(report)).not.toContain(MARK);
      expect(report.outcome).toMatchObject({ status: "failure", code: expect.stringMatching(/^Capability(Denied|Missing)$/) });
      expect(report.calls.map((call) => call.name)).toEqual(["everything.get-env"]);
    } finally {
      await denied.close();
    }
  });

  it("allowTools: only the listed tools become capabilities", async () => {
    const connection = await connectMcpServers(everything({ allowTools: ["echo", "get-sum"] }), { onServerStderr: () => {} });
    try {
      expect([...connection.contract.names].sort()).toEqual(["everything.echo", "everything.get-sum"]);
      expect(Object.keys(connection.capabilities).sort()).toEqual(["everything.echo", "everything.get-sum"]);
    } finally {
      await connection.close();
    }
  });

  it("a listed tool the server does not have fails the connection, naming it and the server's tools", async () => {
    await expect(connectMcpServers(everything({ denyTools: ["get-envv"] }), { onServerStderr: () => {} })).rejects.toThrow(
      /^MCP server "everything" could not be reached: "denyTools" names "get-envv", which server "everything" does not have \(its tools: .*get-env/,
    );
    await expect(connectMcpServers(everything({ allowTools: ["nope"] }), { onServerStderr: () => {} })).rejects.toThrow(
      /"allowTools" names "nope", which server "everything" does not have/,
    );
  });

  it("refuses a list that is not tool names", () => {
    expect(() => mcpConfig({ mcpServers: { a: { command: "x", denyTools: "get-env" } } })).toThrow(
      'MCP configuration: server "a": "denyTools" must be an array of tool names',
    );
    expect(() => mcpConfig({ mcpServers: { a: { url: "http://127.0.0.1:1/", allowTools: [""] } } })).toThrow(
      '"allowTools" must be an array',
    );
  });
});
