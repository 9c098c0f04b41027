// Output paths that cannot crash: a report or value JSON.stringify cannot produce (in real runs, one
// larger than V8's ~512 MiB string limit; here a stand-in that throws the same RangeError) gives a clear
// message instead of an exception, and --json reports the failure to write.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { printJson, printOutcome } from "../../src/cli/report-output.js";
import type { Outcome } from "../../src/protocol/outcome.js";

function sink(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough();
  let text = "";
  stream.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  return { stream, text: () => text };
}

/** Throws what JSON.stringify throws for a result too large for one string. */
const tooLarge = {
  toJSON: () => {
    throw new RangeError("Invalid string length");
  },
};

describe("report output that cannot crash", () => {
  it("printJson says why on stderr, writes nothing to stdout and returns false", () => {
    const stdout = sink();
    const stderr = sink();
    expect(printJson({ ok: true, outcome: { structured: tooLarge } }, stdout.stream, stderr.stream)).toBe(false);
    expect(stdout.text()).toBe("");
    expect(stderr.text()).toBe("ears: the report cannot be written as JSON (Invalid string length); nothing was written to stdout\n");
  });

  it("printOutcome shows the content and names a structured value it cannot show, on stderr", () => {
    const stdout = sink();
    const stderr = sink();
    printOutcome({ status: "success", content: "done", structured: tooLarge } as unknown as Outcome, stdout.stream, stderr.stream);
    expect(stdout.text()).toBe("done\n");
    expect(stderr.text()).toMatch(/^ears: the result's structured value cannot be shown \(Invalid string length\)/);
  });
});
