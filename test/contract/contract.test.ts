/**
 * Typed capability contracts at run time: the guest checks its input and each call's arguments before
 * sending, the host checks arguments before the handler and the handler's `structured` after it, and the
 * guest never hands the program a success whose `structured` contradicts the contract.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import {
  createLinkedPair,
  defineCapabilities,
  FailureCode,
  Outcome,
  serve,
  type Contract,
  type StandardSchemaV1,
} from "../../src/index.js";
import { HostReplyCode, runHost, type Capabilities, type HostOptions } from "../../src/host/index.js";
import { jsonValue } from "../../src/testing/index.js";
import { failOnUnhandledRejections } from "../helpers/host.js";

failOnUnhandledRejections();

const tools = defineCapabilities({
  read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string() }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});

/** Runs an (untyped) guest program against runHost over the memory pair. */
async function session(
  options: HostOptions,
  program: (ears: { call: (name: string, args?: unknown) => Promise<Outcome> }, input: unknown) => unknown,
  contract?: Contract,
  input?: StandardSchemaV1,
) {
  const [guestEnd, hostEnd] = createLinkedPair();
  const served = serve({ wire: guestEnd, capabilities: contract, input, run: program as never });
  const report = await runHost(hostEnd, options);
  return { report, served: await served };
}

describe("contracts: the issue's sample, in process", () => {
  it("types flow end to end and the run succeeds", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    void serve({
      wire: guestEnd,
      capabilities: tools,
      input: z.object({ path: z.string() }),
      run: async (ears, input) => {
        const text = await ears.call("read", { path: input.path });
        if (Outcome.isError(text)) return text;
        const sum = await ears.call("add", { a: 1, b: 2 });
        if (Outcome.isError(sum)) return sum;
        return { length: text.content.length, sum: sum.structured.sum };
      },
    });
    const report = await runHost(hostEnd, {
      input: { path: "README.md" },
      capabilities: tools.implement({
        read: async ({ path }) => `contents of ${path}`,
        add: ({ a, b }) => ({ sum: a + b }),
      }),
    });
    expect(report.outcome).toEqual({ status: "success", content: "", structured: { length: "contents of README.md".length, sum: 3 } });
    expect(report.calls.map((call) => call.name)).toEqual(["read", "add"]);
  });

  it("allowed defaults to exactly the contract's names", async () => {
    const { report } = await session(
      { capabilities: tools.implement({ read: () => "", add: ({ a, b }) => ({ sum: a + b }) }) },
      (ears) => ({ allowed: [...(ears as unknown as { allowed: string[] }).allowed] }),
    );
    expect(report.outcome?.structured).toEqual({ allowed: ["read", "add"] });
  });
});

describe("contracts: the guest", () => {
  it("refuses input that does not match its schema: InvalidInput, the program does not run", async () => {
    const program = vi.fn(() => "ran");
    const { report } = await session({ input: { path: 7 } }, program, undefined, z.object({ path: z.string() }));
    expect(program).not.toHaveBeenCalled();
    expect(report.outcome?.status).toBe("failure");
    expect(report.outcome).toMatchObject({ code: FailureCode.InvalidInput });
    expect(report.outcome?.content).toContain("$.path");
  });

  it("hands the program the input schema's output", async () => {
    const { report } = await session(
      { input: { n: "41" } },
      (_ears, input) => input,
      undefined,
      z.object({ n: z.coerce.number().transform((n) => n + 1) }),
    );
    expect(report.outcome).toEqual(Outcome.success("", { n: 42 }));
  });

  it("refuses arguments the contract rejects before sending: InvalidArguments, the host sees no request", async () => {
    const handler = vi.fn(() => "");
    const { report } = await session(
      { allowed: ["read"], capabilities: { read: handler } },
      async (ears) => ears.call("read", { path: 1 }),
      tools,
    );
    expect(report.outcome).toMatchObject({ status: "failure", code: FailureCode.InvalidArguments });
    expect(report.outcome?.content).toMatch(/arguments for "read" do not match the contract: \$\.path: .*nothing was sent/);
    expect(report.calls).toEqual([]);
    expect(handler).not.toHaveBeenCalled();
  });

  it("refuses a name the contract does not declare, even when the host allows it", async () => {
    const { report } = await session({ allowed: ["nope"], capabilities: { nope: () => "" } }, async (ears) => ears.call("nope", {}), tools);
    expect(report.outcome).toMatchObject({ status: "failure", code: FailureCode.CapabilityDenied });
    expect(report.calls).toEqual([]);
  });

  it("turns a success whose structured contradicts the contract into InvalidReply", async () => {
    // An untyped host answering the guest's contract wrongly: a string sum, then no structured at all.
    const answers = [{ sum: "3" }, "no structured"];
    const seen: unknown[] = [];
    const { report } = await session(
      { allowed: ["add"], capabilities: { add: () => answers.shift() } },
      async (ears) => {
        for (let i = 0; i < 2; i++) seen.push(await ears.call("add", { a: 1, b: 2 }));
        return undefined;
      },
      tools,
    );
    expect(report.calls).toHaveLength(2);
    expect(seen).toEqual([
      expect.objectContaining({ status: "failure", code: FailureCode.InvalidReply, content: expect.stringContaining("$.sum") }),
      expect.objectContaining({ status: "failure", code: FailureCode.InvalidReply }),
    ]);
  });

  it("passes a host failure through unchecked", async () => {
    const { report } = await session(
      { allowed: ["add"], capabilities: { add: () => Outcome.failure("Busy", "later") } },
      async (ears) => ears.call("add", { a: 1, b: 2 }),
      tools,
    );
    expect(report.outcome).toEqual(Outcome.failure("Busy", "later"));
  });

  it("checks with a schema that validates asynchronously, for arguments and replies", async () => {
    const positive: StandardSchemaV1<number> = {
      "~standard": {
        version: 1,
        vendor: "test",
        validate: async (value) => (typeof value === "number" && value > 0 ? { value } : { issues: [{ message: "not positive" }] }),
      },
    };
    const contract = defineCapabilities({ twice: { arguments: positive, structured: positive } });
    const { report } = await session(
      { capabilities: { twice: (n) => (n as number) * 2 } },
      async (ears) => [await ears.call("twice", 2), await ears.call("twice", -1)],
      contract,
    );
    expect(report.calls.map((call) => call.arguments)).toEqual([2]);
    expect(report.outcome?.structured).toEqual([
      { status: "success", content: "", structured: 4 },
      { status: "failure", code: FailureCode.InvalidArguments, content: expect.stringContaining("not positive") },
    ]);
  });
});

describe("contracts: the host", () => {
  it("answers InvalidArguments and does not run the handler when the guest's arguments do not match", async () => {
    const read = vi.fn(() => "");
    const { report } = await session(
      { capabilities: tools.implement({ read, add: ({ a, b }) => ({ sum: a + b }) }) },
      // An untyped guest, as a hostile one would be.
      async (ears) => ears.call("read", { path: ["..", "etc"] }),
    );
    expect(read).not.toHaveBeenCalled();
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.InvalidArguments });
    expect(report.outcome?.content).toMatch(/the handler did not run/);
  });

  it("refuses a handler's structured that contradicts the contract: CapabilityFailed, not sent", async () => {
    const add = (() => ({ sum: "x" })) as unknown as (args: { a: number; b: number }) => { sum: number };
    const { report } = await session({ capabilities: tools.implement({ read: () => "", add }) }, async (ears) =>
      ears.call("add", { a: 1, b: 2 }),
    );
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.CapabilityFailed });
    expect(report.outcome?.content).toMatch(/"add" answered a structured value that does not match the contract: \$\.sum/);
    expect(report.outcome?.content).not.toContain('"x"');
  });

  it("sends a handler's made outcome as it is once its structured matches", async () => {
    const { report } = await session(
      { capabilities: tools.implement({ read: () => "", add: ({ a, b }) => Outcome.success("added", { sum: a + b }) }) },
      async (ears) => ears.call("add", { a: 1, b: 2 }),
    );
    expect(report.outcome).toEqual(Outcome.success("added", { sum: 3 }));
  });

  it("implement throws on a missing or undeclared handler", () => {
    expect(() => tools.implement({ read: () => "" } as never)).toThrow(/no handler function for "add"/);
    expect(() => tools.implement({ read: () => "", add: () => ({ sum: 1 }), extra: () => "" } as never)).toThrow(/"extra" not declared/);
  });

  it("defineCapabilities and serve refuse what is not a schema or a contract", async () => {
    expect(() => defineCapabilities({ read: { arguments: { parse: () => 1 } as never } })).toThrow(/Standard Schema/);
    expect(() => defineCapabilities({ read: { description: 1 as never } })).toThrow(/description must be a string/);
    const [guestEnd] = createLinkedPair();
    await expect(serve({ wire: guestEnd, capabilities: { read: {} } as never, run: () => 1 })).rejects.toThrow(
      /made by defineCapabilities/,
    );
    await expect(serve({ wire: guestEnd, input: {} as never, run: () => 1 })).rejects.toThrow(/options.input must be a Standard Schema/);
  });

  it("the handler runs exactly when the arguments schema accepts (property, seeded)", async () => {
    const schema = z.object({ path: z.string() });
    await fc.assert(
      fc.asyncProperty(fc.oneof(jsonValue(), fc.record({ path: jsonValue() })), async (args) => {
        let ran = false;
        const capabilities: Capabilities = tools.implement({
          read: ({ path }) => {
            ran = true;
            return path;
          },
          add: () => ({ sum: 0 }),
        });
        const outcome = (await capabilities.read!(args, { name: "read", id: 1, signal: new AbortController().signal })) as Outcome | string;
        expect(ran).toBe(schema.safeParse(args).success);
        if (!ran) expect(outcome).toMatchObject({ status: "failure", code: FailureCode.InvalidArguments });
      }),
      { seed: 10, numRuns: 200 },
    );
  });
});

describe("contracts: describe()", () => {
  it("gives JSON Schema for each capability's arguments and structured", () => {
    const described = tools.describe();
    expect(JSON.parse(JSON.stringify(described))).toEqual(described);
    expect(described).toEqual([
      {
        name: "read",
        description: "Read a UTF-8 file under the root",
        inputSchema: expect.objectContaining({ type: "object", properties: { path: { type: "string" } }, required: ["path"] }),
      },
      {
        name: "add",
        inputSchema: expect.objectContaining({ type: "object", required: ["a", "b"] }),
        outputSchema: expect.objectContaining({ type: "object", properties: { sum: { type: "number" } } }),
      },
    ]);
    expect(defineCapabilities({ ping: {} }).describe()).toEqual([{ name: "ping", inputSchema: {} }]);
  });

  it("names the capability whose schema library has no Standard JSON Schema", () => {
    const bare: StandardSchemaV1<string> = { "~standard": { version: 1, vendor: "bare", validate: (value) => ({ value: String(value) }) } };
    expect(() => defineCapabilities({ echo: { arguments: bare } }).describe()).toThrow(
      /"echo"\.arguments is a bare schema without Standard JSON Schema/,
    );
  });
});

describe("contracts: a schema that throws", () => {
  const throwing: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => {
        throw new Error("schema bug");
      },
    },
  };
  const contract = defineCapabilities({ boom: { arguments: throwing } });

  it("on the guest, the call rejects with the schema's error and nothing is sent", async () => {
    const { report } = await session(
      { allowed: ["boom"], capabilities: { boom: () => "" } },
      async (ears) => {
        try {
          await ears.call("boom", 1);
          return "no rejection";
        } catch (error) {
          return (error as Error).message;
        }
      },
      contract,
    );
    expect(report.outcome).toEqual(Outcome.success("", "schema bug"));
    expect(report.calls).toEqual([]);
  });

  it("on the host, the reply is CapabilityFailed and the handler does not run", async () => {
    const handler = vi.fn(() => "");
    const { report } = await session({ capabilities: contract.implement({ boom: handler }) }, async (ears) => ears.call("boom", 1));
    expect(handler).not.toHaveBeenCalled();
    expect(report.outcome).toMatchObject({ status: "failure", code: HostReplyCode.CapabilityFailed, content: "schema bug" });
  });
});

describe("contracts: hostile or odd schema results", () => {
  it("a thenable that is not this realm's Promise is awaited, not read as a valid result", async () => {
    const thenable: StandardSchemaV1 = {
      "~standard": {
        version: 1,
        vendor: "test",
        validate: () => ({ then: (resolve: (r: unknown) => void) => resolve({ issues: [{ message: "refused later" }] }) }) as never,
      },
    };
    const handler = vi.fn(() => "");
    const { report } = await session(
      { capabilities: defineCapabilities({ guarded: { arguments: thenable } }).implement({ guarded: handler }) },
      async (ears) => ears.call("guarded", 1),
    );
    expect(handler).not.toHaveBeenCalled();
    expect(report.outcome).toMatchObject({ code: FailureCode.InvalidArguments, content: expect.stringContaining("refused later") });
  });

  it("a result that is not an object is the schema's bug: CapabilityFailed, the handler does not run", async () => {
    const broken: StandardSchemaV1 = { "~standard": { version: 1, vendor: "test", validate: () => null as never } };
    const handler = vi.fn(() => "");
    const { report } = await session(
      { capabilities: defineCapabilities({ b: { arguments: broken } }).implement({ b: handler }) },
      async (ears) => ears.call("b", 1),
    );
    expect(handler).not.toHaveBeenCalled();
    expect(report.outcome).toMatchObject({ code: HostReplyCode.CapabilityFailed, content: expect.stringContaining("not a result object") });
  });

  it("the problem sentence stays bounded whatever keys and messages the other side sends", async () => {
    const strict = z.record(z.string(), z.number());
    const key = "k".repeat(100_000);
    const { report } = await session(
      { capabilities: defineCapabilities({ r: { arguments: strict } }).implement({ r: () => "" }) },
      async (ears) => ears.call("r", { [key]: "x", [`${key}2`]: "y", [`${key}3`]: "z", a: "1", b: "2", c: "3", d: "4" }),
    );
    expect(report.outcome).toMatchObject({ code: FailureCode.InvalidArguments, content: expect.stringContaining("and 2 more") });
    expect(report.outcome!.content.length).toBeLessThan(1200);
  });
});

describe("contracts: a slow asynchronous check", () => {
  it("does not start the handler once the call has timed out", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: StandardSchemaV1 = {
      "~standard": { version: 1, vendor: "test", validate: async (value) => (await gate, { value }) },
    };
    const handler = vi.fn(() => "");
    const { report } = await session(
      { capabilities: defineCapabilities({ slow: { arguments: slow } }).implement({ slow: handler }), limits: { callTimeoutMs: 50 } },
      async (ears) => {
        const outcome = await ears.call("slow", 1);
        release();
        await new Promise((resolve) => setTimeout(resolve, 20));
        return outcome;
      },
    );
    expect(report.outcome).toMatchObject({ code: HostReplyCode.CallTimedOut });
    expect(handler).not.toHaveBeenCalled();
  });
});

describe("contracts: names that are Object.prototype's", () => {
  it("a capability called __proto__ or constructor is declared, allowed and called like any other", async () => {
    const contract = defineCapabilities({ ["__proto__"]: { arguments: z.string() }, constructor: {} });
    expect(contract.names).toEqual(["__proto__", "constructor"]);
    const { report } = await session(
      { capabilities: contract.implement({ ["__proto__"]: (text: string) => `got ${text}`, constructor: () => "built" } as never) },
      async (ears) => [(await ears.call("__proto__", "x")).content, (await ears.call("constructor")).content],
      contract,
    );
    expect(report.outcome?.structured).toEqual(["got x", "built"]);
  });
});

describe("contracts: arguments left out", () => {
  it("are checked as the null the wire carries, the same value the host checks", async () => {
    const contract = defineCapabilities({ ping: { arguments: z.null() } });
    const { report } = await session(
      { capabilities: contract.implement({ ping: () => "pong" }) },
      async (ears) => ears.call("ping"),
      contract,
    );
    expect(report.outcome).toEqual(Outcome.success("pong"));
    expect(report.calls.map((call) => call.arguments)).toEqual([null]);
  });
});
