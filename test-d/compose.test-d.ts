// Type tests for composeContracts (issue 29, item 11): the user's contract, an MCP connection's contract
// and { fetch: FETCH_SPEC } merge into one contract where the user's names keep their types, with no cast.
import { expectTypeOf } from "vitest";
import { z } from "zod";
import { composeContracts, defineCapabilities, serve, stdio, type Contract, type Failure, type TypedSuccess } from "@posoco/ears";
import { FETCH_SPEC, runCode, type McpConnection } from "@posoco/ears/host";

declare const servers: McpConnection;
const tools = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const contract = composeContracts(tools, servers.contract, { fetch: FETCH_SPEC });
// A contract as runCode and declarations() take it, without a cast.
const asContract: Contract = contract;
void asContract;
void runCode({ code: "return 1;", contract, typecheck: true });
expectTypeOf(contract.names).toEqualTypeOf<readonly ("add" | "fetch")[]>();

await serve({
  wire: stdio(),
  capabilities: contract,
  run: async (ears) => {
    expectTypeOf(await ears.call("add", { a: 1, b: 2 })).toEqualTypeOf<TypedSuccess<{ sum: number }> | Failure>();
    // @ts-expect-error: the user's names keep their argument types next to the MCP server's names
    await ears.call("add", { a: "1", b: 2 });
    // @ts-expect-error: an MCP server's names are known at run time only (runCode bodies get them from declarations())
    await ears.call("everything.echo", { message: "hi" });
    return null;
  },
});

// @ts-expect-error: a part is a contract or an object of specs
composeContracts(tools, 5);
