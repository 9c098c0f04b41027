// Reports are unions that narrow the way the runtime behaves (test/host/report-union.test.ts proves the
// runtime keeps to them).
import { expectTypeOf } from "vitest";
import type { Failure, Outcome, ServeReport, Success } from "@posoco/ears";
import { runGuest, type HostFailure, type RunReport } from "@posoco/ears/host";
import { replay, testGuest } from "@posoco/ears/testing";

const report = await runGuest({ command: process.execPath });
if (report.ok) {
  expectTypeOf(report.outcome).toEqualTypeOf<Success>();
  expectTypeOf(report.failure).toEqualTypeOf<undefined>();
} else {
  expectTypeOf(report.outcome).toEqualTypeOf<Outcome | Failure | undefined>();
  // A run that paused for approval has neither a failure nor an outcome, and holds its token.
  if (report.paused !== undefined) expectTypeOf(report.outcome).toEqualTypeOf<undefined>();
  else if (report.failure === undefined) expectTypeOf(report.outcome).toEqualTypeOf<Failure>();
  else expectTypeOf(report.failure).toEqualTypeOf<HostFailure>();
}

// The README's pattern: after the throw, outcome is a Success.
function check(r: RunReport): void {
  if (!r.ok) throw new Error(r.failure?.message ?? r.outcome?.content);
  expectTypeOf(r.outcome.structured).toEqualTypeOf<Success["structured"]>();
}
check(report);

// @ts-expect-error: without narrowing, outcome may be absent
void report.outcome.status;

const tested = await testGuest(async () => 1);
if (tested.ok) expectTypeOf(tested.outcome).toEqualTypeOf<Success>();
expectTypeOf(tested.transcript).toBeArray();

declare const served: ServeReport;
if (served.status === "completed") expectTypeOf(served.outcome).toEqualTypeOf<Outcome>();
else expectTypeOf(served.error.message).toBeString();

// testGuest's transcript holds frames: entry.frame.type type-checks (the README's example).
expectTypeOf(tested.transcript.map((entry) => entry.frame.type)).toEqualTypeOf<
  ("hello" | "invoke" | "request" | "log" | "result" | "reply")[]
>();
const first = tested.transcript[0];
if (first !== undefined && first.frame.type === "request") expectTypeOf(first.frame.name).toBeString();

// A replay's report: divergence is a string exactly when ok is false.
const replayed = await replay("run.ndjson", { run: async () => 1 });
if (replayed.ok) expectTypeOf(replayed.divergence).toEqualTypeOf<undefined>();
else expectTypeOf(replayed.divergence).toEqualTypeOf<string>();
