// A guest program's return value: what the runtime refuses with GuestFailed (functions, symbols, bigint,
// Map, Set, Date, ...) is a compile error where the type shows it; JSON, interfaces of JSON and outcomes pass.
import { Outcome, serve, stdio, type Json } from "@posoco/ears";

interface Summary {
  lines: number;
  names: string[];
  nested: { ok: boolean; note?: string };
}
declare const summary: Summary;
declare const json: Json;
declare const anything: unknown;

await serve({ wire: stdio(), run: async () => ({ length: 1, names: ["a"], nested: { deep: [null, true, "x"] } }) });
await serve({ wire: stdio(), run: () => summary });
await serve({ wire: stdio(), run: async () => json });
await serve({ wire: stdio(), run: () => anything });
await serve({ wire: stdio(), run: () => undefined });
await serve({ wire: stdio(), run: async () => {} });
await serve({ wire: stdio(), run: async (ears) => ears.call("read", { path: "a" }) });
await serve({ wire: stdio(), run: () => Outcome.failure("NotFound", "missing") });
await serve({ wire: stdio(), run: async () => (Math.random() > 0.5 ? Outcome.success("", { a: 1 }) : { a: 2 }) });

// @ts-expect-error: a Date becomes a string in JSON
await serve({ wire: stdio(), run: async () => ({ when: new Date() }) });
// @ts-expect-error: a Map becomes {}
await serve({ wire: stdio(), run: () => new Map([["a", 1]]) });
// @ts-expect-error: a bigint cannot be sent
await serve({ wire: stdio(), run: async () => ({ total: 10n }) });
// @ts-expect-error: a function cannot be sent
await serve({ wire: stdio(), run: () => ({ callback: () => 1 }) });
// @ts-expect-error: a symbol cannot be sent
await serve({ wire: stdio(), run: () => [1, Symbol("x")] });
// @ts-expect-error: a Set becomes {}
await serve({ wire: stdio(), run: async () => ({ ids: new Set([1]) }) });
// @ts-expect-error: also when only one branch returns it
await serve({ wire: stdio(), run: async () => (Math.random() > 0.5 ? { a: 1 } : 1n) });

// Untyped call arguments: JSON, interfaces of JSON and unknown pass; what JSON would alter does not compile.
interface Query {
  path: string;
  limit?: number;
}
declare const query: Query;
await serve({
  wire: stdio(),
  run: async (ears) => {
    await ears.call("read", { path: "a" });
    await ears.call("read", query);
    await ears.call("read", json);
    await ears.call("read", anything);
    await ears.call("read");
    await ears.call("read", undefined, { timeoutMs: 5 });
    // @ts-expect-error: a Date becomes a string in JSON
    await ears.call("read", { since: new Date() });
    // @ts-expect-error: a function cannot be sent
    await ears.call("read", () => "a");
    // @ts-expect-error: a bigint cannot be sent, with options too
    await ears.call("read", { n: 1n }, { timeoutMs: 5 });
    // @ts-expect-error: a Map becomes {}
    await ears.call("read", new Map());
    // @ts-expect-error: a symbol inside an array
    await ears.call("read", ["a", Symbol("b")]);
    return undefined;
  },
});
