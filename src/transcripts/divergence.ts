/**
 * Divergence text: the one sentence a replay reports when a guest does something its recording does not
 * show. Values are compared as JSON (jsonDifference, the protocol's one comparison) and shown cut short
 * (excerpt), with the path of the first difference when a cut would hide it.
 */
import type { RunReport } from "../host/api/types.js";
import type { HelloFrame, RequestFrame } from "../protocol/frames.js";
import { jsonDifference, type Json } from "../protocol/json.js";
import { Outcome } from "../protocol/outcome.js";
import { excerpt } from "../protocol/text.js";
import type { Recording } from "./recording.js";

/** How much of a request's arguments or an outcome a message shows. */
const MAX_SHOWN_CHARS = 200;
/** How much of each value at the first difference a message shows (it is a clause of a longer sentence). */
const MAX_DIFFERENCE_CHARS = 80;

/** The divergence of a guest's hello from the recorded one (another protocol), or undefined. */
export function helloDivergence(recorded: HelloFrame | undefined, hello: HelloFrame): string | undefined {
  if (recorded === undefined || recorded.protocol === hello.protocol) return undefined;
  return `hello: the recorded guest spoke protocol ${recorded.protocol}, but this guest speaks protocol ${hello.protocol}`;
}

/**
 * The divergence of the guest's request number `index + 1` from the recorded one at `index` (a request
 * past the end, another capability, other arguments), or undefined when it matches.
 */
export function requestDivergence(recording: Recording, index: number, request: RequestFrame): string | undefined {
  const number = index + 1;
  const expected = recording.exchanges[index]?.request;
  if (expected === undefined) {
    const recorded = recording.exchanges.length;
    return `request #${number}: the recording has no more requests (it has ${recorded}), but the guest sent ${describeRequest(request)}`;
  }
  if (expected.name !== request.name) {
    return `request #${number}: expected ${describeRequest(expected)} but the guest sent ${describeRequest(request)}`;
  }
  const difference = firstDifference(expected.arguments, request.arguments, "arguments");
  if (difference === undefined) return undefined;
  return `request #${number}: ${contrast(showRequest(expected), "sent", showRequest(request), difference)}`;
}

/** The divergence of a matching request the recording has no reply for: the replay cannot answer it. */
export function unansweredDivergence(number: number, request: RequestFrame): string {
  const why = "(the recorded session ended before it was answered); the replay stops here";
  return `request #${number} ${describeRequest(request)} has no reply in the recording ${why}`;
}

/**
 * Differences found once the run is over, after `matched` requests matched: recorded requests the guest
 * never made, then the result. Undefined when the run matches the recording to the end.
 */
export function endDivergence(recording: Recording, matched: number, report: Pick<RunReport, "outcome" | "failure">): string | undefined {
  const ended = report.failure === undefined ? "" : ` (the run ended: ${report.failure.code}: ${report.failure.message})`;
  const next = recording.exchanges[matched];
  if (next !== undefined) {
    const instead = report.outcome === undefined ? ended : ` and then returned ${describeOutcome(report.outcome)}`;
    const made = `made only ${matched} of the ${recording.exchanges.length} recorded requests`;
    return `request #${matched + 1}: expected ${describeRequest(next.request)} but the guest ${made}${instead}`;
  }
  const expected = recording.result;
  const actual = report.outcome;
  if (expected !== undefined && actual === undefined) {
    return `result: expected ${describeOutcome(expected)} but the guest sent no result${ended}`;
  }
  if (expected === undefined && actual !== undefined) {
    return `result: the recorded session ended without a result, but the guest returned ${describeOutcome(actual)}`;
  }
  if (expected !== undefined && actual !== undefined && !Outcome.equal(expected, actual)) {
    const difference = firstDifference(Outcome.toJson(expected), Outcome.toJson(actual));
    return `result: ${contrast(showOutcome(expected), "returned", showOutcome(actual), difference)}`;
  }
  return undefined;
}

/** Where two JSON values first differ (object key order ignored), or undefined when they are equal. */
function firstDifference(expected: Json | undefined, actual: Json | undefined, path = ""): string | undefined {
  const found = jsonDifference(expected, actual, path);
  if (found === undefined) return undefined;
  const show = (value: Json | undefined) => (value === undefined ? "absent" : excerpt(JSON.stringify(value), MAX_DIFFERENCE_CHARS));
  const where = found.path.replace(/^\./, "");
  return `${where === "" ? "the value" : where}: recorded ${show(found.a)}, now ${show(found.b)}`;
}

/** Both versions, plus where they differ when a version had to be cut short to stay readable. */
function contrast(expected: Shown, did: "sent" | "returned", actual: Shown, difference: string | undefined): string {
  const where = (expected.cut || actual.cut) && difference !== undefined ? `; first difference at ${difference}` : "";
  return `expected ${expected.text} but the guest ${did} ${actual.text}${where}`;
}

/** Text for a message, and whether it was cut short (then the message also says where the values differ). */
interface Shown {
  text: string;
  cut: boolean;
}

function shown(prefix: string, value: unknown): Shown {
  const json = JSON.stringify(value);
  return { text: `${prefix} ${excerpt(json, MAX_SHOWN_CHARS)}`, cut: json.length > MAX_SHOWN_CHARS };
}

function showRequest(request: RequestFrame): Shown {
  return shown(request.name, request.arguments);
}

function showOutcome(outcome: Outcome): Shown {
  const { status, ...rest } = Outcome.toJson(outcome);
  if (outcome.status === "failure") delete rest.code;
  return shown(`${status}${outcome.status === "failure" ? ` ${outcome.code}` : ""}`, rest);
}

function describeRequest(request: RequestFrame): string {
  return showRequest(request).text;
}

function describeOutcome(outcome: Outcome): string {
  return showOutcome(outcome).text;
}
