// Tracing options type-check against OpenTelemetry's own types without the package's types depending on
// OpenTelemetry; the guest's traceparent is a string or undefined.
import { expectTypeOf } from "vitest";
import { context, trace, type Tracer } from "@opentelemetry/api";
import type { Ears } from "@posoco/ears";
import { runHost, type HostOptions, type TraceSetting } from "@posoco/ears/host";

const tracer: Tracer = trace.getTracer("host");
const options: HostOptions = { trace: { tracer, parent: context.active(), payloads: { maxChars: 100 } } };
expectTypeOf(options.trace).toEqualTypeOf<TraceSetting | undefined>();
expectTypeOf<false>().toExtend<TraceSetting>();
// @ts-expect-error: payloads caps are { maxChars }, not a bare number
void runHost({ send: async () => {}, receive: async () => undefined }, { trace: { payloads: 100 } });
expectTypeOf<Ears["traceparent"]>().toEqualTypeOf<string | undefined>();
