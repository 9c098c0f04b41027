/**
 * OpenTelemetry tracing of runs, with the SDK's in-memory exporter and a global provider and context
 * manager (this file's worker only): the span tree (active span -> run -> calls), statuses and codes on
 * failure, attributes without payloads by default and with them on request, and the traceparent the
 * guest sees belonging to the run span.
 */
import { readFileSync } from "node:fs";
import { context, trace, SpanStatusCode, type Span } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Outcome, serve, createLinkedPair } from "../../src/index.js";
import { runCode, runHost } from "../../src/host/index.js";
import { runReport } from "../../src/host/report/report.js";
import { runAttributes } from "../../src/host/observe/tracing.js";
import { failOnUnhandledRejections, runFixture } from "../helpers/host.js";
import { requireBuild } from "../helpers/spawned-guest.js";

failOnUnhandledRejections();

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  requireBuild();
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  contextManager.disable();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
/** Attribute keys that would hold what the guest or host sent (none by default). */
const PAYLOAD_KEYS = ["ears.run.input", "ears.run.result", "ears.code", "ears.call.arguments", "ears.call.outcome", "ears.log.content"];

/** Runs `body` inside an active span and returns it (ended) with body's value. */
async function underActiveSpan<T>(body: () => Promise<T>): Promise<{ parent: Span; value: T }> {
  return trace.getTracer("test").startActiveSpan("agent turn", async (parent) => {
    const value = await body();
    parent.end();
    return { parent, value };
  });
}

describe("a traced runGuest", () => {
  it("is a run span under the active span, with a child span per call; the guest's traceparent is the run span's", async () => {
    const { parent, value: report } = await underActiveSpan(() =>
      runFixture("traced.mjs", [], {
        capabilities: { read: () => "contents", missing: () => Outcome.failure("NotFound", "no such thing") },
      }),
    );
    expect(report.ok).toBe(true);
    const [run] = named("ears.run");
    expect(run).toBeDefined();
    expect(parentOf(run!)).toBe(parent.spanContext().spanId);
    expect(run!.spanContext().traceId).toBe(parent.spanContext().traceId);
    // The guest saw the run span's context, so its own spans would join this trace under the run.
    const { traceId, spanId } = run!.spanContext();
    expect(report.outcome?.structured).toEqual({ traceparent: `00-${traceId}-${spanId}-01`, statuses: ["success", "failure"] });

    const read = named("ears.call read")[0]!;
    const missing = named("ears.call missing")[0]!;
    for (const call of [read, missing]) {
      expect(parentOf(call)).toBe(spanId);
      expect(call.spanContext().traceId).toBe(traceId);
      expect(call.attributes["ears.call.request.size"]).toBeGreaterThan(0);
      expect(call.attributes["ears.call.response.size"]).toBeGreaterThan(0);
    }
    expect(read.attributes).toMatchObject({ "ears.capability.name": "read", "gen_ai.tool.name": "read", "ears.call.status": "success" });
    expect(read.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(missing.attributes).toMatchObject({
      "ears.call.status": "failure",
      "ears.call.failure_code": "NotFound",
      "error.type": "NotFound",
    });
    expect(missing.status).toEqual({ code: SpanStatusCode.ERROR, message: "NotFound" });

    expect(run!.attributes).toMatchObject({
      "ears.run.api": "runGuest",
      "ears.run.ok": true,
      "ears.run.calls": 2,
      "ears.outcome.status": "success",
    });
    expect(run!.attributes["ears.sandbox.mechanism"]).toBe(report.sandbox?.mechanism ?? "none");
    expect(run!.attributes["process.pid"]).toBe(report.pid);
    expect(run!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(run!.events.map((event) => [event.name, event.attributes?.["ears.log.level"]])).toEqual([["ears.log", "warn"]]);
    // No arguments, outcomes, input, result or log text unless the host asks.
    for (const span of spans()) for (const key of PAYLOAD_KEYS) expect(span.attributes).not.toHaveProperty(key);
    for (const event of run!.events) expect(event.attributes).not.toHaveProperty("ears.log.content");
    expect(JSON.stringify(spans().map((span) => span.attributes))).not.toContain("do not trace me");
  });

  it("a guest's own OpenTelemetry spans, continued from ears.traceparent, are children of the run span", async () => {
    const { value: report } = await underActiveSpan(() => runFixture("traced-otel.mjs"));
    expect(report.ok, report.stderr).toBe(true);
    const run = named("ears.run")[0]!;
    expect(report.outcome?.structured).toEqual({ traceId: run.spanContext().traceId, parentSpanId: run.spanContext().spanId });
  });

  it("a run that fails is an ERROR span with the failure code; a call left unanswered is closed as such", async () => {
    // read never answers: the run times out while the call waits, or before the guest got to call at all
    // (a slow start); either way the run span says RunTimeout.
    const report = await runFixture("traced.mjs", [], {
      capabilities: { read: () => new Promise<never>(() => {}), missing: () => "x" },
      limits: { runTimeoutMs: 300 },
      killGraceMs: 100,
    });
    expect(report.failure?.code).toBe("RunTimeout");
    const run = named("ears.run")[0]!;
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: "RunTimeout" });
    expect(run.attributes).toMatchObject({ "ears.run.ok": false, "ears.failure.code": "RunTimeout", "error.type": "RunTimeout" });

    // The run ends only once read is waiting: its handler ends it, so the call is there to be closed.
    exporter.reset();
    const end = new AbortController();
    const ended = await runFixture("traced.mjs", [], {
      capabilities: {
        read: () => {
          end.abort();
          return new Promise<never>(() => {});
        },
        missing: () => "x",
      },
      signal: end.signal,
      killGraceMs: 100,
    });
    expect(ended.failure?.code).toBe("Aborted");
    expect(named("ears.run")[0]!.status).toEqual({ code: SpanStatusCode.ERROR, message: "Aborted" });
    const read = named("ears.call read")[0]!;
    expect(read.attributes).toMatchObject({ "ears.call.status": "unanswered", "error.type": "Unanswered" });
    expect(read.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("with payloads: true, carries arguments, outcomes, logs, input and result, each cut to maxChars", async () => {
    const report = await runFixture("traced.mjs", [], {
      input: { task: "x".repeat(100) },
      capabilities: { read: () => "contents", missing: () => Outcome.failure("NotFound", "no such thing") },
      trace: { payloads: { maxChars: 50 } },
    });
    expect(report.ok).toBe(true);
    const run = named("ears.run")[0]!;
    expect(run.attributes["ears.run.input"]).toBe(`${JSON.stringify({ task: "x".repeat(100) }).slice(0, 50)}… (111 characters)`);
    expect(String(run.attributes["ears.run.result"])).toMatch(/^\{"status":"success".*characters\)$/);
    expect(named("ears.call missing")[0]!.attributes["ears.call.arguments"]).toBe('{"secret":"do not trace me"}');
    expect(named("ears.call read")[0]!.attributes["ears.call.outcome"]).toBe('{"status":"success","content":"contents"}');
    expect(run.events[0]!.attributes?.["ears.log.content"]).toBe("halfway");
  });
});

describe("a traced runCode and runHost", () => {
  it("runCode: a body that does not compile is an ERROR run span with CompileError, and its code stays out of the span", async () => {
    const report = await runCode({ code: "return (;", sandbox: false });
    expect(report.failure?.code).toBe("CompileError");
    const run = named("ears.run")[0]!;
    expect(run.attributes).toMatchObject({ "ears.run.api": "runCode", "ears.failure.code": "CompileError" });
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes).not.toHaveProperty("ears.code");
    // Nothing ran, so nothing ran unconfined: no "ears.sandbox.mechanism" = "none" (issue 29, item 12).
    expect(run.attributes).not.toHaveProperty("ears.sandbox.mechanism");

    exporter.reset();
    await runCode({ code: "return (;", sandbox: false, trace: { payloads: true } });
    expect(named("ears.run")[0]!.attributes["ears.code"]).toBe("return (;");
  });

  it("runHost takes trace.tracer and trace.parent; a throwing tracer costs the spans, never the run", async () => {
    const parentSpan = trace.getTracer("test").startSpan("explicit parent");
    const parent = trace.setSpan(context.active(), parentSpan);
    const [guestEnd, hostEnd] = createLinkedPair();
    void serve({ wire: guestEnd, run: async (ears) => ({ traceparent: ears.traceparent ?? null, got: await ears.call("greet", "Ada") }) });
    const report = await runHost(hostEnd, {
      capabilities: { greet: (name) => `hello ${String(name)}` },
      trace: { tracer: provider.getTracer("mine"), parent },
    });
    parentSpan.end();
    expect(report.ok).toBe(true);
    const run = named("ears.run")[0]!;
    expect(run.instrumentationScope.name).toBe("mine");
    expect(parentOf(run)).toBe(parentSpan.spanContext().spanId);
    expect(named("ears.call greet")).toHaveLength(1);

    exporter.reset();
    const broken = {
      startSpan: () => {
        throw new Error("exporter down");
      },
    };
    const [guest2, host2] = createLinkedPair();
    void serve({ wire: guest2, run: async (ears) => ({ traceparent: ears.traceparent ?? null }) });
    const untraced = await runHost(host2, { trace: { tracer: broken } });
    expect(untraced.ok).toBe(true);
    expect(untraced.outcome?.structured).toEqual({ traceparent: null });
    expect(spans()).toEqual([]);
  });

  it("trace: false turns tracing off even with a provider", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    void serve({ wire: guestEnd, run: (ears) => ({ traceparent: ears.traceparent ?? null }) });
    const report = await runHost(hostEnd, { trace: false });
    expect(report.outcome?.structured).toEqual({ traceparent: null });
    expect(spans()).toEqual([]);
  });

  it("bad trace options throw before anything runs", () => {
    const [, hostEnd] = createLinkedPair();
    expect(() => runHost(hostEnd, { trace: "yes" as never })).toThrow("options.trace must be false or an object");
    expect(() => runHost(hostEnd, { trace: { tracer: {} as never } })).toThrow("options.trace.tracer must be an OpenTelemetry Tracer");
    expect(() => runHost(hostEnd, { trace: { parent: 1 as never } })).toThrow("options.trace.parent must be an OpenTelemetry Context");
    expect(() => runHost(hostEnd, { trace: { payloads: { maxChars: 0 } } })).toThrow("options.trace.payloads must be a boolean");
  });
});

describe("a type-checked runCode (issue 29, item 12)", () => {
  it("has an ears.typecheck span under the run span, an ERROR when the check refuses the body", async () => {
    const good = await runCode({ code: "const n: number = 1; return n;", typecheck: true, sandbox: false });
    expect(good.ok).toBe(true);
    const [check] = named("ears.typecheck");
    const [run] = named("ears.run");
    const parent = check?.parentSpanContext?.spanId ?? (check as unknown as { parentSpanId?: string }).parentSpanId;
    expect(parent).toBe(run!.spanContext().spanId);
    expect(check!.attributes["ears.step.ok"]).toBe(true);

    exporter.reset();
    const bad = await runCode({ code: 'const n: number = "x"; return n;', typecheck: true, sandbox: false });
    expect(bad.failure?.code).toBe("CompileError");
    const [refused] = named("ears.typecheck");
    expect(refused!.attributes["ears.step.ok"]).toBe(false);
    expect(refused!.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe("the run span's attributes from a report", () => {
  it("carry the usage figures when the report has them, snake-cased, and the sandbox mechanism or none", () => {
    const report = runReport({ outcome: { status: "success", content: "" }, durationMs: 1, sandbox: null, pid: 7 });
    const pid = { "process.pid": 7 };
    const usage = { source: "cgroup-v2" as const, cpuMs: 120, peakMemoryBytes: 50_331_648, peakProcesses: 3, wallMs: 7, calls: 0 };
    expect(runAttributes({ ...report, usage })).toEqual({
      "ears.run.ok": true,
      "ears.run.calls": 0,
      "ears.run.logs": 0,
      "ears.outcome.status": "success",
      "ears.sandbox.mechanism": "none",
      "ears.usage.source": "cgroup-v2",
      "ears.usage.cpu_ms": 120,
      "ears.usage.peak_memory_bytes": 50_331_648,
      "ears.usage.peak_processes": 3,
      "ears.usage.wall_ms": 7,
      ...pid,
      "ears.usage.calls": 0,
    });
    expect(runAttributes(report)).not.toHaveProperty("ears.usage.cpu_ms");
  });
});

describe("the documented install line (issue 29, item 12)", () => {
  it("names OpenTelemetry versions whose peer ranges admit each other (a bare install fails with ERESOLVE)", () => {
    const docs = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8");
    const line = /^npm install (@opentelemetry\/.*)$/m.exec(docs)?.[1];
    expect(line, "docs/observability.md names an npm install line").toBeDefined();
    const named = new Map(line!.split(" ").map((spec) => [spec.slice(0, spec.lastIndexOf("@")), spec.slice(spec.lastIndexOf("@") + 1)]));
    const installed = (name: string) =>
      JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), "utf8")) as {
        version: string;
        peerDependencies?: Record<string, string>;
      };
    // Each named version is the one this repository tests with (same major, or same minor for a 0.x.y-style pin).
    for (const [name, wanted] of named) expect(`${installed(name).version}.`.startsWith(`${wanted}.`), `${name}@${wanted}`).toBe(true);
    // And the API version each SDK package asks for admits the named API.
    const api = installed("@opentelemetry/api").version;
    for (const name of [...named.keys()].filter((name) => name !== "@opentelemetry/api")) {
      const range = installed(name).peerDependencies?.["@opentelemetry/api"];
      if (range !== undefined) expect(admits(range, api), `${name} accepts @opentelemetry/api ${range}`).toBe(true);
    }
  });
});

/** Whether `version` meets every comparator of a range such as ">=1.3.0 <1.10.0" (the form these packages use). */
function admits(range: string, version: string): boolean {
  const parts = (v: string) => v.split(".").map(Number);
  const compare = (a: string, b: string) => {
    const [x, y] = [parts(a), parts(b)];
    for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
    return 0;
  };
  return range.split(" ").every((comparator) => {
    const [, op, bound] = /^(>=|<=|>|<|\^|~)?(.*)$/.exec(comparator)!;
    const c = compare(version, bound!);
    if (op === ">=") return c >= 0;
    if (op === "<") return c < 0;
    if (op === "<=") return c <= 0;
    if (op === ">") return c > 0;
    if (op === "^") return c >= 0 && parts(version)[0] === parts(bound!)[0];
    return c === 0;
  });
}
