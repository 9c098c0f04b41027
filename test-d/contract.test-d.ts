// Type tests for typed capability contracts, checked by `tsc -p test-d` in `npm test` against the built
// package. Each `@ts-expect-error` is a misuse the issue requires to be a compile error: if it compiled,
// tsc would report the directive as unused and the test would fail.
import { expectTypeOf } from "vitest";
import { z } from "zod";
import { Outcome, serve, stdio, type Ears, type Failure, type Json, type Outcome as OutcomeType, type TypedSuccess } from "@posoco/ears";
import { runGuest, type Capabilities } from "@posoco/ears/host";
import { tools } from "./sample/contract.js";

await serve({
  wire: stdio(),
  capabilities: tools,
  input: z.object({ path: z.string() }),
  run: async (ears, input) => {
    expectTypeOf(input).toEqualTypeOf<{ path: string }>();
    // @ts-expect-error: input has no property "nope"
    void input.nope;
    // @ts-expect-error: path must be a string
    await ears.call("read", { path: 1 });
    // @ts-expect-error: "nope" is not in the contract
    await ears.call("nope", {});
    // @ts-expect-error: a contract capability with an arguments schema needs its arguments
    await ears.call("read");
    const sum = await ears.call("add", { a: 1, b: 2 });
    expectTypeOf(sum).toEqualTypeOf<TypedSuccess<{ sum: number }> | Failure>();
    if (!Outcome.isError(sum)) expectTypeOf(sum.structured.sum).toEqualTypeOf<number>();
    const text = await ears.call("read", { path: input.path });
    expectTypeOf(text).toEqualTypeOf<OutcomeType>();
    return undefined;
  },
});

// Without a contract everything stays as loose as before.
await serve({
  wire: stdio(),
  run: async (ears, input) => {
    expectTypeOf(ears).toEqualTypeOf<Ears>();
    expectTypeOf(input).toEqualTypeOf<Json>();
    expectTypeOf(await ears.call("anything", { any: "json" })).toEqualTypeOf<OutcomeType>();
    expectTypeOf(await ears.call("anything")).toEqualTypeOf<OutcomeType>();
    return null;
  },
});

const capabilities = tools.implement({
  read: async ({ path }) => {
    expectTypeOf(path).toEqualTypeOf<string>();
    return `contents of ${path}`;
  },
  add: ({ a, b }) => ({ sum: a + b }),
});
expectTypeOf(capabilities).toEqualTypeOf<Capabilities>();

tools.implement({
  read: () => "",
  // @ts-expect-error: structured.sum must be a number
  add: ({ a, b }) => ({ sum: "x" }),
});

// An outcome is always a valid answer; the host checks its structured at run time.
tools.implement({ read: () => Outcome.failure("NotFound"), add: async () => Outcome.success("", { sum: 1 }) });

// @ts-expect-error: "add" has no handler
tools.implement({ read: () => "" });

tools.implement({
  read: () => "",
  add: () => ({ sum: 1 }),
  // @ts-expect-error: "extra" is not declared in the contract
  extra: () => "",
});

expectTypeOf(tools.describe()).toEqualTypeOf<
  { name: string; description?: string; inputSchema: Record<string, unknown>; outputSchema?: Record<string, unknown> }[]
>();
expectTypeOf(tools.names).toEqualTypeOf<readonly ("read" | "add")[]>();

await runGuest({ command: process.execPath, capabilities });

// Outcome.isError still narrows a plain Outcome both ways.
declare const plain: OutcomeType;
if (Outcome.isError(plain)) expectTypeOf(plain).toEqualTypeOf<Failure>();
else expectTypeOf(plain.status).toEqualTypeOf<"success">();

// An untyped value: narrowed to Failure when isError holds, left as it was (any) otherwise.
declare const untyped: any;
if (!Outcome.isError(untyped)) expectTypeOf(untyped).toBeAny();

// The test kit takes a contract as serve does (issue 22, item 2): a typed program passes, its calls are typed.
{
  const { testGuest, replay } = await import("@posoco/ears/testing");
  const typedProgram = async (ears: Ears<typeof tools.specs>, input: { path: string }) => {
    const sum = await ears.call("add", { a: 1, b: 2 });
    return Outcome.isError(sum) ? sum : { sum: sum.structured.sum, path: input.path };
  };
  await testGuest(typedProgram, { contract: tools, inputSchema: z.object({ path: z.string() }), input: { path: "p" } });
  await testGuest(
    async (ears, input) => {
      expectTypeOf(input).toEqualTypeOf<{ path: string }>();
      // @ts-expect-error: path must be a string
      await ears.call("read", { path: 1 });
      // @ts-expect-error: "nope" is not in the contract
      await ears.call("nope", {});
      return (await ears.call("read", { path: input.path })).content;
    },
    { contract: tools, inputSchema: z.object({ path: z.string() }) },
  );
  // @ts-expect-error: a typed program needs its contract (without it the kit's ears is the loose one)
  await testGuest(typedProgram, { input: { path: "p" } });
  await replay("run.ndjson", { run: typedProgram, contract: tools, inputSchema: z.object({ path: z.string() }) });
  // @ts-expect-error: the same in a replay
  await replay("run.ndjson", { run: typedProgram });
  // Untyped programs need no options at all, as before.
  await testGuest(async (ears) => (await ears.call("anything")).status);
  await replay("run.ndjson", { run: async () => 1 });
}
