// The three ways a run that is not ok ends, narrowed by the host's guards, and modelResult's union on kind
// (issue 44, item 1): no `report.failure.code` where a body that threw has no `failure`.
import { expectTypeOf } from "vitest";
import type { Failure, Json } from "@posoco/ears";
import {
  isFailureOutcome,
  isHostFailure,
  isPaused,
  modelResult,
  runCode,
  type HostFailure,
  type HostFailureCode,
  type PausedRun,
  type RunReport,
} from "@posoco/ears/host";

const report: RunReport = await runCode({ code: "return 1;" });
if (isHostFailure(report)) {
  expectTypeOf(report.failure).toEqualTypeOf<HostFailure>();
  expectTypeOf(report.failure.code).toEqualTypeOf<HostFailureCode>();
} else if (isPaused(report)) {
  expectTypeOf(report.paused).toEqualTypeOf<PausedRun>();
} else if (isFailureOutcome(report)) {
  expectTypeOf(report.outcome).toEqualTypeOf<Failure>();
  expectTypeOf(report.failure).toEqualTypeOf<undefined>();
} else if (report.ok) {
  expectTypeOf(report.outcome.structured).toEqualTypeOf<Json | undefined>();
}

// @ts-expect-error: without narrowing, a report may have no failure (a body that threw has none)
void report.failure.code;

const result = modelResult(report);
expectTypeOf(result.text).toEqualTypeOf<string>();
switch (result.kind) {
  case "success":
    expectTypeOf(result.isError).toEqualTypeOf<false>();
    expectTypeOf(result.structured).toEqualTypeOf<Json | undefined>();
    break;
  case "failure":
    expectTypeOf(result.code).toEqualTypeOf<string>();
    break;
  case "host-failure":
    expectTypeOf(result.code).toEqualTypeOf<HostFailureCode>();
    break;
  case "paused":
    expectTypeOf(result.paused).toEqualTypeOf<PausedRun>();
    break;
  default:
    expectTypeOf(result).toEqualTypeOf<never>();
}
