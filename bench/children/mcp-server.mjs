// An MCP SDK stdio server with one tool, written as the SDK's users write one. "echo" returns its
// arguments as structured content, like the ears host's echo capability. With the argument
// "ready-line" it writes one line on stdout once connected (the MCP handshake has no hello of its
// own), for the cold-start scenario.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { reportPeakRss } from "./peak-rss.mjs";

reportPeakRss();
const server = new McpServer({ name: "bench-echo", version: "1.0.0" });
server.registerTool("echo", { description: "Returns its arguments", inputSchema: { i: z.number(), path: z.string() } }, async (args) => ({
  content: [{ type: "text", text: "ok" }],
  structuredContent: args,
}));
await server.connect(new StdioServerTransport());
if (process.argv.includes("ready-line")) process.stdout.write('{"ready":true}\n');
