/**
 * What a model meets in code mode (issue 29, items 5 and 13): a tool without arguments is called as
 * `ears.call("memory.read_graph")`, under `typecheck: true` and at run time, whether its schema is
 * `z.object({})`, an object of optional properties or an empty JSON Schema object; and the messages a
 * model gets for a body that is not one function body, for reading `structured` before `status`, and for
 * a body that ran too long, say what to do (each quoted here).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { check, checkArguments } from "../../../src/contract/contract.js";
import { defineCapabilities, jsonSchema } from "../../../src/index.js";
import { compileBody } from "../../../src/host/code/compile.js";
import { runCode } from "../../../src/host/index.js";
import type { StandardSchemaV1 } from "../../../src/contract/contract.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";

const tools = defineCapabilities({
  "memory.read_graph": { description: "The whole graph", arguments: z.object({}) },
  "memory.search": { arguments: z.object({ query: z.string().optional(), limit: z.number().optional() }) },
  "everything.print-env": { arguments: jsonSchema({ type: "object", properties: {} }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
const seen: unknown[] = [];
const capabilities = tools.implement({
  "memory.read_graph": (args) => (seen.push(args), { structured: { nodes: 2 }, status: "success", content: "2 nodes" }),
  "memory.search": (args) => (seen.push(args), "found"),
  "everything.print-env": (args) => (seen.push(args), "env"),
  add: ({ a, b }) => ({ sum: a + b }),
});

describe("a tool without arguments", () => {
  // A JSON Schema capability's handler (an MCP tool's) gets what was sent; the MCP connector sends {}.
  it("is called with no arguments under typecheck and at run time; a schema's handler gets {}", async () => {
    seen.length = 0;
    const code = [
      'const graph = await ears.call("memory.read_graph");',
      'const found = await ears.call("memory.search");',
      'const env = await ears.call("everything.print-env");',
      'const some = await ears.call("memory.search", { limit: 2 });',
      "return [graph.status, found.status, env.status, some.status];",
    ].join("\n");
    const report = await runCode({ code, contract: tools, capabilities, typecheck: true, sandbox: false });
    expect(report.failure).toBeUndefined();
    expect(report.outcome?.structured).toEqual(["success", "success", "success", "success"]);
    expect(seen).toEqual([{}, {}, null, { limit: 2 }]);
  });

  it("a tool with a required argument still needs it, under typecheck and at run time", async () => {
    const typed = await runCode({ code: 'return await ears.call("add");', contract: tools, capabilities, typecheck: true, sandbox: false });
    expect(typed.failure?.message).toMatch(
      /^the code was not run: type errors: code\.ts:1:19: Expected 2-3 arguments, but got 1\. \(TS2554\)/,
    );
    const run = await runCode({ code: 'return await ears.call("add");', capabilities, sandbox: false });
    expect(run.outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
  });

  it("checkArguments: null is {} only where the schema refuses null and takes {}; sync and async schemas alike", async () => {
    const empty = z.object({});
    expect(checkArguments(empty, null)).toEqual({ ok: true, value: {} });
    expect(checkArguments(empty, { a: 1 })).toEqual(check(empty, { a: 1 }));
    const nullable = z.object({}).nullable();
    expect(checkArguments(nullable, null)).toEqual({ ok: true, value: null });
    const required = z.object({ a: z.number() });
    expect(checkArguments(required, null)).toEqual(check(required, null));
    const slow: StandardSchemaV1 = {
      "~standard": {
        version: 1,
        vendor: "test",
        validate: async (value) => (value === null ? { issues: [{ message: "null" }] } : { value }),
      },
    };
    expect(await checkArguments(slow, null)).toEqual({ ok: true, value: {} });
    const slowRefusing: StandardSchemaV1 = {
      "~standard": { version: 1, vendor: "test", validate: async () => ({ issues: [{ message: "no" }] }) },
    };
    expect(await checkArguments(slowRefusing, null)).toEqual({ ok: false, problem: "$: no" });
  });
});

describe("words a model can act on", () => {
  it("a body that closes its function early is told what to change, not 'Single function literal required' alone", async () => {
    expect(await compileBody("return 1 }); (async () => {")).toEqual({
      ok: false,
      message:
        "code.ts: the code must be the body of one async function, and it closes that function early: it has a `}` (or `})`) " +
        "that closes a bracket the code did not open, with more code after it; remove the extra closing brackets and write " +
        "the code as statements that end with a return (V8: Single function literal required)",
    });
  });

  it("reading structured before checking status gets the hint to check r.status first", async () => {
    const report = await runCode({
      code: 'const r = await ears.call("add", { a: 1, b: 2 });\nreturn r.structured.sum;',
      contract: tools,
      capabilities,
      typecheck: true,
      sandbox: false,
    });
    expect(report.failure?.message).toMatch(/^the code was not run: type errors: code\.ts:2:8: 'r\.structured' is possibly /);
    expect(
      report.failure?.message.endsWith(
        "; hint: a call resolves to a success or a failure; check its status before reading structured " +
          '(`const r = await ears.call(...); if (r.status === "failure") return r;`), ' +
          "then r.structured has the type the capability declares",
      ),
    ).toBe(true);
    const checked = await runCode({
      code: 'const r = await ears.call("add", { a: 1, b: 2 });\nif (r.status === "failure") return r;\nreturn r.structured.sum;',
      contract: tools,
      capabilities,
      typecheck: true,
      sandbox: false,
    });
    expect(checked.outcome?.structured).toBe(3);
  });

  it.runIf(process.platform === "linux" && bwrapPath !== undefined)(
    "a sandboxed body whose global fetch fails is told it has no network and to call the host's fetch",
    async () => {
      const report = await runCode({ code: 'const r = await fetch("http://127.0.0.1:9/");\nreturn r.status;', sandbox: true });
      expect(report.failure).toBeUndefined();
      // On every Node the position is the call of fetch (Node 22 names the await, Node 24 no frame of the body).
      expect(report.outcome).toEqual({
        status: "failure",
        code: "GuestFailed",
        content:
          "fetch failed (at code.ts:1:17): a sandboxed code body has no network of its own; " +
          'reach an HTTP API through ears.call("fetch", { url }) when the host grants fetch (it is then in the declarations)',
      });
    },
  );

  it.runIf(process.platform === "linux" && bwrapPath !== undefined)(
    "a failed fetch inside a function of the body is placed at that call; the error the body catches is its own",
    async () => {
      const code = [
        "async function get(url: string) {",
        "  return await fetch(url);",
        "}",
        'const caught = await get("http://127.0.0.1:9/").catch((e: unknown) => e);',
        'if (!(caught instanceof TypeError) || caught.message !== "fetch failed") return "not the fetch error";',
        'await get("http://127.0.0.1:9/");',
      ].join("\n");
      const report = await runCode({ code, sandbox: true });
      expect(report.outcome?.status).toBe("failure");
      expect(report.outcome?.content).toMatch(/^fetch failed \(at code\.ts:2:16\): a sandboxed code body has no network/);
    },
  );

  it("a body that runs too long is told it ran too long and what to do, not only the host's setting", async () => {
    const report = await runCode({ code: "while (true) {}", limits: { runTimeoutMs: 1000 }, sandbox: false });
    expect(report.failure).toEqual({
      code: "RunTimeout",
      message:
        "the code ran longer than 1 s, the most a run may take here (limits.runTimeoutMs), and was stopped: do less in one run " +
        "(fewer or smaller calls, no waiting or polling), or return what you have sooner and continue in the next run",
    });
  });
});
