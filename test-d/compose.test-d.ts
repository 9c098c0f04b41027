// Type tests for composeContracts (issue 29, item 11): the user's contract, an MCP connection's contract
// and { fetch: FETCH_SPEC } merge into one contract where the user's names keep their types, with no cast.
import { expectTypeOf } from "vitest";
import { z } from "zod";
import {
  composeContracts,
  defineCapabilities,
  serve,
  stdio,
  type Contract,
  type Failure,
  type Outcome,
  type TypedSuccess,
} from "@posoco/ears";
import { FETCH_SPEC, runCode, type McpConnection } from "@posoco/ears/host";

declare const servers: McpConnection<"everything">;
const tools = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const contract = composeContracts(tools, servers.contract, { fetch: FETCH_SPEC });
// A contract as runCode and declarations() take it, without a cast.
const asContract: Contract = contract;
void asContract;
void runCode({ code: "return 1;", contract, typecheck: true });
// The servers' names are known at run time only: their pattern stays in the names (issue 44, item 4).
expectTypeOf(contract.names).toEqualTypeOf<readonly ("add" | "fetch" | `everything.${string}`)[]>();
void contract.names.filter((name) => name !== "everything.get-sum");

await serve({
  wire: stdio(),
  capabilities: contract,
  run: async (ears) => {
    expectTypeOf(await ears.call("add", { a: 1, b: 2 })).toEqualTypeOf<TypedSuccess<{ sum: number }> | Failure>();
    // @ts-expect-error: the user's names keep their argument types next to the MCP server's names
    await ears.call("add", { a: "1", b: 2 });
    // An MCP server's names are known at run time only: callable, with any JSON arguments and an Outcome back.
    expectTypeOf(await ears.call("everything.get-sum", { a: 1, b: 2 })).toEqualTypeOf<Outcome>();
    // @ts-expect-error: a server the configuration does not name
    await ears.call("other.get-sum", { a: 1, b: 2 });
    // @ts-expect-error: a typo in the user's own tool's arguments still fails
    await ears.call("add", { a: 1, bb: 2 });
    // @ts-expect-error: a name that is neither the user's nor a server's
    await ears.call("ad", { a: 1, b: 2 });
    return null;
  },
});

// @ts-expect-error: a part is a contract or an object of specs
composeContracts(tools, 5);

// A connection whose configuration's type does not spell out its servers (read from a file), and a part
// typed as plain Contract: their names are any `${string}.${string}` or any string, and the user's own
// names, dotted ones too, keep their types beside them.
declare const anyServers: McpConnection;
declare const plain: Contract;
const dotted = defineCapabilities({ "fs.read": { arguments: z.object({ path: z.string() }) } });
const loose = composeContracts(tools, dotted, anyServers.contract);
const looser = composeContracts(tools, plain);
await serve({
  wire: stdio(),
  capabilities: loose,
  run: async (ears) => {
    expectTypeOf(await ears.call("github.search", { q: "x" })).toEqualTypeOf<Outcome>();
    await ears.call("fs.read", { path: "a" });
    // @ts-expect-error: the user's dotted name keeps its argument type beside `${string}.${string}`
    await ears.call("fs.read", { path: 1 });
    // @ts-expect-error: still the user's own arguments
    await ears.call("add", { a: "1", b: 2 });
    return null;
  },
});
await serve({
  wire: stdio(),
  capabilities: looser,
  run: async (ears) => {
    expectTypeOf(await ears.call("anything", null)).toEqualTypeOf<Outcome>();
    // @ts-expect-error: the user's own arguments, even beside a string index
    await ears.call("add", { a: "1", b: 2 });
    return null;
  },
});

// How the README writes it: connectMcpServers with a literal configuration names its servers.
declare const connect: typeof import("@posoco/ears/host").connectMcpServers;
const everything = await connect({
  mcpServers: { everything: { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] } },
});
expectTypeOf(everything.contract.names).toEqualTypeOf<readonly `everything.${string}`[]>();
void runCode({
  code: "return 1;",
  contract: everything.contract,
  capabilities: everything.capabilities,
  allowed: everything.contract.names,
});
