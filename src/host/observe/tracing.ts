/**
 * OpenTelemetry tracing of runs (docs/observability.md). `@opentelemetry/api` is an optional peer: it is
 * imported lazily, here only (never on the guest's path), the first time a run could be traced; when it
 * is missing, or no tracer provider is registered, a run is not observed at all and nothing changes.
 * With a provider, a run is one span ("ears.run", child of the active context or `trace.parent`) with a
 * child span per capability call ("ears.call <name>") and the run's W3C traceparent in the invoke frame.
 * Spans carry names, sizes, statuses and codes; payloads only when the host opts in (`trace.payloads`).
 */
import type * as Otel from "@opentelemetry/api";
import type { Json } from "../../protocol/json.js";
import type { RequestFrame } from "../../protocol/frames.js";
import type { Outcome } from "../../protocol/outcome.js";
import { excerpt } from "../../protocol/text.js";
import { SDK } from "../../protocol/version.js";
import type { RunObserver } from "./observer.js";
import type { LogEntry, RunReport, TraceOptions, TraceSetting } from "../api/types.js";

type Api = typeof Otel;

/** The tracer name (instrumentation scope) of the spans ears makes, and its version. */
export const TRACER_NAME = "@posoco/ears";
const TRACER_VERSION = SDK.slice(SDK.lastIndexOf("@") + 1);

/** Characters of a payload attribute kept by default with `payloads: true`. */
export const DEFAULT_PAYLOAD_CHARS = 4096;

/** A capability name or log level in a span is guest text: cut to this many characters. */
const MAX_NAME_CHARS = 256;

/** The API once imported; null when it could not be (not installed); undefined before the first try. */
let api: Api | null | undefined;
let loading: Promise<Api | null> | undefined;
let warnedMissing = false;

function loadApi(): Promise<Api | null> {
  loading ??= import("@opentelemetry/api").then(
    (module) => (api = module),
    () => (api = null),
  );
  return loading;
}

/** What the run is and what it was given, for the run span. */
export interface RunSubject {
  /** The public function that started the run. */
  api: "runGuest" | "runCode" | "runHost";
  input: Json;
  /** runCode's body. */
  code?: string;
}

/**
 * Runs `run` traced as `setting` says: with an observer (and the run span around it) when a tracer
 * provider is there to record it, without one otherwise. Resolves with `run`'s report; the span ends
 * before. Synchronous up to `run` once the API has been looked for, so a run starts as it always did.
 */
export function traced(
  setting: TraceSetting | undefined,
  subject: RunSubject,
  run: (observer: RunObserver | undefined) => Promise<RunReport>,
): Promise<RunReport> {
  if (setting === false) return run(undefined);
  const options = setting ?? {};
  if (api !== undefined) return tracedWith(api, options, subject, run);
  return loadApi().then((loaded) => tracedWith(loaded, options, subject, run));
}

function tracedWith(
  loaded: Api | null,
  options: TraceOptions,
  subject: RunSubject,
  run: (observer: RunObserver | undefined) => Promise<RunReport>,
): Promise<RunReport> {
  if (loaded === null) {
    // A tracer or context handed in means the host wants spans: say once why there are none.
    if ((options.tracer !== undefined || options.parent !== undefined) && !warnedMissing) {
      warnedMissing = true;
      process.emitWarning("ears: options.trace was given but @opentelemetry/api cannot be imported; runs are not traced", {
        code: "EARS_TRACE_UNAVAILABLE",
      });
    }
    return run(undefined);
  }
  const observer = SpanObserver.start(loaded, options, subject);
  if (observer === undefined) return run(undefined);
  return run(observer).then(
    (report) => {
      observer.finish(report);
      return report;
    },
    (error: unknown) => {
      observer.broke(error);
      throw error;
    },
  );
}

/** The run span and its call spans. Every method is guarded: a tracer or exporter that throws costs the span, never the run. */
class SpanObserver implements RunObserver {
  readonly traceparent: string | undefined;
  /** Call spans by request id, until their reply is sent. */
  private readonly calls = new Map<number, Otel.Span>();
  private readonly recording: boolean;

  private constructor(
    private readonly api: Api,
    private readonly tracer: Otel.Tracer,
    private readonly span: Otel.Span,
    private readonly context: Otel.Context,
    /** Characters kept of each payload attribute; undefined: no payloads. */
    private readonly maxChars: number | undefined,
  ) {
    const spanContext = span.spanContext();
    this.recording = span.isRecording();
    this.traceparent = api.isSpanContextValid(spanContext)
      ? `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & 0xff).toString(16).padStart(2, "0")}`
      : undefined;
  }

  /** The run span, or undefined when nothing would record or carry it (no provider): the run is then not observed. */
  static start(api: Api, options: TraceOptions, subject: RunSubject): SpanObserver | undefined {
    try {
      const tracer = (options.tracer as Otel.Tracer | undefined) ?? api.trace.getTracer(TRACER_NAME, TRACER_VERSION);
      const parent = (options.parent as Otel.Context | undefined) ?? api.context.active();
      const maxChars = options.payloads === true ? DEFAULT_PAYLOAD_CHARS : options.payloads ? options.payloads.maxChars : undefined;
      const attributes: Otel.Attributes = { "ears.run.api": subject.api };
      if (maxChars !== undefined) {
        attributes["ears.run.input"] = payload(subject.input, maxChars);
        if (subject.code !== undefined) attributes["ears.code"] = excerpt(subject.code, maxChars);
      }
      const span = tracer.startSpan("ears.run", { kind: api.SpanKind.INTERNAL, attributes }, parent);
      if (!span.isRecording() && !api.isSpanContextValid(span.spanContext())) return undefined;
      return new SpanObserver(api, tracer, span, api.trace.setSpan(parent, span), maxChars);
    } catch {
      return undefined;
    }
  }

  requested(frame: RequestFrame, line: string): void {
    if (!this.recording || this.calls.has(frame.id)) return; // a reused id ends the run; its first span stays
    guard(() => {
      const name = excerpt(frame.name, MAX_NAME_CHARS);
      const attributes: Otel.Attributes = {
        "ears.capability.name": name,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "ears.call.id": frame.id,
        "ears.call.request.size": Buffer.byteLength(line),
      };
      if (this.maxChars !== undefined) attributes["ears.call.arguments"] = payload(frame.arguments, this.maxChars);
      const span = this.tracer.startSpan(`ears.call ${name}`, { kind: this.api.SpanKind.INTERNAL, attributes }, this.context);
      this.calls.set(frame.id, span);
    });
  }

  replied(id: number, outcome: Outcome, line: string): void {
    const span = this.calls.get(id);
    if (span === undefined) return;
    this.calls.delete(id);
    guard(() => {
      span.setAttribute("ears.call.status", outcome.status);
      span.setAttribute("ears.call.response.size", Buffer.byteLength(line));
      if (outcome.status === "failure") {
        span.setAttribute("ears.call.failure_code", outcome.code);
        span.setAttribute("error.type", outcome.code);
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: outcome.code });
      }
      if (this.maxChars !== undefined) span.setAttribute("ears.call.outcome", payload(outcome as unknown as Json, this.maxChars));
      span.end();
    });
  }

  step(name: string): (problem: string | undefined) => void {
    if (!this.recording) return () => {};
    let span: Otel.Span | undefined;
    guard(() => {
      span = this.tracer.startSpan(name, { kind: this.api.SpanKind.INTERNAL }, this.context);
    });
    return (problem) =>
      guard(() => {
        if (span === undefined) return;
        span.setAttribute("ears.step.ok", problem === undefined);
        if (problem !== undefined) span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: "CompileError" });
        span.end();
      });
  }

  logged(entry: LogEntry): void {
    if (!this.recording) return;
    guard(() => {
      const attributes: Otel.Attributes = {
        "ears.log.level": excerpt(entry.level, MAX_NAME_CHARS),
        "ears.log.size": Buffer.byteLength(entry.content),
      };
      if (this.maxChars !== undefined) attributes["ears.log.content"] = excerpt(entry.content, this.maxChars);
      this.span.addEvent("ears.log", attributes);
    });
  }

  /** Ends the calls still open (the run ended before their reply) and the run span, with what the report says. */
  finish(report: RunReport): void {
    this.endOpenCalls();
    guard(() => {
      const span = this.span;
      span.setAttributes(runAttributes(report));
      if (this.maxChars !== undefined && report.outcome !== undefined) {
        span.setAttribute("ears.run.result", payload(report.outcome as unknown as Json, this.maxChars));
      }
      if (!report.ok) {
        const code = report.failure?.code ?? (report.outcome?.status === "failure" ? report.outcome.code : "Failed");
        span.setAttribute("error.type", code);
        // A failure message can quote guest output: it is a payload.
        const message =
          this.maxChars !== undefined && report.failure !== undefined ? `${code}: ${excerpt(report.failure.message, this.maxChars)}` : code;
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
      }
      span.end();
    });
  }

  /** The run itself threw (a bug: runs never reject): the span records it and ends. */
  broke(error: unknown): void {
    this.endOpenCalls();
    guard(() => {
      this.span.recordException(error instanceof Error ? error : String(error));
      this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: "the run threw" });
      this.span.end();
    });
  }

  private endOpenCalls(): void {
    for (const span of this.calls.values()) {
      guard(() => {
        span.setAttribute("ears.call.status", "unanswered");
        span.setAttribute("error.type", "Unanswered");
        span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: "the run ended before the call was answered" });
        span.end();
      });
    }
    this.calls.clear();
  }
}

/** What the report tells about the run, as span attributes: verdict, codes, process, sandbox, usage. */
export function runAttributes(report: RunReport): Otel.Attributes {
  const attributes: Otel.Attributes = {
    "ears.run.ok": report.ok,
    "ears.run.calls": report.calls.length + (report.droppedCalls ?? 0),
    "ears.run.logs": report.logs.length + report.droppedLogs,
  };
  if (report.outcome !== undefined) {
    attributes["ears.outcome.status"] = report.outcome.status;
    if (report.outcome.status === "failure") attributes["ears.outcome.code"] = report.outcome.code;
  }
  if (report.failure !== undefined) attributes["ears.failure.code"] = report.failure.code;
  // "none" means the guest ran unconfined: a run whose guest never started (CompileError) claims nothing.
  if (report.sandbox !== undefined && (report.sandbox !== null || report.pid !== undefined)) {
    attributes["ears.sandbox.mechanism"] = report.sandbox?.mechanism ?? "none";
  }
  if (report.pid !== undefined) attributes["process.pid"] = report.pid;
  if (report.exit?.code !== undefined && report.exit.code !== null) attributes["process.exit.code"] = report.exit.code;
  if (report.exit?.signal) attributes["ears.exit.signal"] = report.exit.signal;
  // `usage` comes from the resource limits work; read loosely so any figures it has are carried.
  const usage = (report as { usage?: unknown }).usage;
  if (typeof usage === "object" && usage !== null) {
    for (const [key, value] of Object.entries(usage)) {
      if (typeof value === "number" || typeof value === "string" || typeof value === "boolean") {
        attributes[`ears.usage.${key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)}`] = value;
      }
    }
  }
  return attributes;
}

/** A JSON value as a span attribute, cut to `maxChars`. */
function payload(value: Json, maxChars: number): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "null";
  } catch {
    text = "(not representable as JSON)";
  }
  return excerpt(text, maxChars);
}

function guard(run: () => void): void {
  try {
    run();
  } catch {
    // Tracing is best effort: a tracer or processor that throws must not change the run.
  }
}
