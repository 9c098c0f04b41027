// host.ts
import { runGuest } from "@posoco/ears/host";
import { tools } from "./contract.js";
const report = await runGuest({
  command: process.execPath,
  args: ["guest.js"],
  input: { path: "README.md" },
  capabilities: tools.implement({
    read: async ({ path }) => `contents of ${path}`,
    add: ({ a, b }) => ({ sum: a + b }),
  }),
});
if (report.ok) console.log(report.outcome.structured);
console.log(JSON.stringify(tools.describe())); // [{ name, description?, inputSchema, outputSchema? }] as JSON Schema
