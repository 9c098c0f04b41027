/** The code tools' shared text (issue 29 item 6): the run's limits and fetch origins, and logs bounded for a model. */
import { describe, expect, it } from "vitest";
import { boundedToolLogs, codeToolLimitsText, MAX_TOOL_LOG_CHARS } from "../../src/code-tool/text.js";

describe("codeToolLimitsText", () => {
  it("names the run time, CPU time, memory and result size, the host's defaults where none is set", () => {
    expect(codeToolLimitsText(undefined)).toBe(
      "Each run has no deadline of its own, 1 GiB of memory, a result of at most 64 MiB as JSON: a body past one is stopped " +
        "and its result lost, so do large work in steps and return a summary rather than everything.",
    );
    expect(
      codeToolLimitsText({ runTimeoutMs: 2500, cpuTimeMs: 10_000, memoryBytes: 256 * 1024 * 1024, maxResultBytes: 1024 * 1024 }),
    ).toMatch(/^Each run has 2\.5 s of run time, 10 s of CPU time, 256 MiB of memory, a result of at most 1 MiB as JSON: /);
  });

  it("names the only origins fetch reaches, when given", () => {
    const text = codeToolLimitsText({ runTimeoutMs: 1000 }, ["https://api.github.com", "http://127.0.0.1:8080"]);
    expect(text).toContain(
      '`fetch` reaches only "https://api.github.com", "http://127.0.0.1:8080" (any other origin is refused with FetchRefused): ' +
        "build URLs on these, do not guess others.",
    );
    expect(codeToolLimitsText({}, [])).not.toContain("fetch");
  });
});

describe("boundedToolLogs", () => {
  it("keeps at most 50 lines and counts the rest", () => {
    const logs = Array.from({ length: 80 }, (_, i) => `[info] ${i}`);
    const shown = boundedToolLogs(logs);
    expect(shown).toHaveLength(51);
    expect(shown.at(-1)).toBe("(30 more log lines not shown)");
  });

  it("cuts at the character bound, marking the cut line", () => {
    const shown = boundedToolLogs(["a".repeat(6000), "b".repeat(6000), "c"]);
    expect(shown[1]).toBe(`${"b".repeat(MAX_TOOL_LOG_CHARS - 6000)}…`);
    expect(shown.at(-1)).toBe("(1 more log lines not shown)");
    expect(boundedToolLogs([])).toEqual([]);
  });
});
