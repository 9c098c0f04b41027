/**
 * composeContracts (issue 29, item 11): one contract from the user's own, an MCP connection's (JSON
 * Schema, names known at run time) and { fetch: FETCH_SPEC }, for declarations(), typecheck and runCode.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { composeContracts, defineCapabilities, jsonSchema } from "../../src/index.js";
import { FETCH_SPEC, runCode } from "../../src/host/index.js";

const tools = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
// The shape connectMcpServers gives: a contract from the tools' JSON Schemas, typed only as Contract.
const servers = defineCapabilities({
  "everything.echo": { description: "Echoes", arguments: jsonSchema({ type: "object", properties: { message: { type: "string" } } }) },
} as Record<string, { description: string; arguments: ReturnType<typeof jsonSchema> }>);

describe("composeContracts", () => {
  it("holds every part's capabilities in order, declared together", () => {
    const contract = composeContracts(tools, servers, { fetch: FETCH_SPEC });
    expect(contract.names).toEqual(["add", "everything.echo", "fetch"]);
    const declarations = contract.declarations();
    expect(declarations).toContain("  add: { args: {");
    expect(declarations).toContain('  /** Echoes */\n  "everything.echo": { args: {');
    expect(declarations).toContain("  fetch: { args: {");
    expect(contract.specs.add).toBe(tools.specs.add);
  });

  it("type-checks a body calling all three against the composed contract, and refuses a wrong argument", async () => {
    const contract = composeContracts(tools, servers, { fetch: FETCH_SPEC });
    const body = (a: string) =>
      `const [s, e] = await Promise.all([ears.call("add", { a: ${a}, b: 2 }), ears.call("everything.echo", { message: "hi" })]);\n` +
      'if (s.status === "failure") return s;\nreturn [s.structured.sum, e.status];';
    const capabilities = {
      ...tools.implement({ add: ({ a, b }) => ({ sum: a + b }) }),
      "everything.echo": () => "Echo: hi",
      fetch: () => "unused",
    };
    const good = await runCode({ code: body("1"), contract, capabilities, typecheck: true, sandbox: false });
    expect(good.outcome).toEqual({ status: "success", content: "", structured: [3, "success"] });
    const bad = await runCode({ code: body('"1"'), contract, capabilities, typecheck: true, sandbox: false });
    expect(bad.failure?.message).toContain("code.ts:1:54: Type 'string' is not assignable to type 'number'. (TS2322)");
  });

  it("refuses a name two parts declare, and a part that is not a contract or specs", () => {
    expect(() => composeContracts(tools, { add: FETCH_SPEC })).toThrow(
      'composeContracts: "add" is declared by part 1 and part 2; a capability name must be declared once',
    );
    expect(() => composeContracts(tools, null as never)).toThrow(
      "composeContracts: part 2 must be a contract or an object of capability specs by name",
    );
    expect(() => composeContracts([] as never)).toThrow("composeContracts: part 1 must be a contract");
    // A record part's specs are checked as defineCapabilities checks them.
    expect(() => composeContracts({ x: { arguments: 5 } } as never)).toThrow('defineCapabilities: "x".arguments must be a Standard Schema');
  });
});
