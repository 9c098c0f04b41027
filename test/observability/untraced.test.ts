/**
 * Tracing is zero-cost when it cannot record: with @opentelemetry/api installed but no tracer provider
 * registered (this file registers none), a run's frames and report are those of a run with tracing off;
 * with the package missing (a child process whose resolver cannot find it), runs work as before and a
 * host that asked for spans is told once why there are none.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createLinkedPair, serve } from "../../src/index.js";
import { runHost, type HostOptions, type RunReport } from "../../src/host/index.js";
import { requireBuild } from "../helpers/spawned-guest.js";

const ROOT = new URL("../../", import.meta.url);

/** Runs a guest that calls greet and logs, recording every line both ways. */
async function recorded(trace: HostOptions["trace"]): Promise<{ lines: string[]; report: RunReport }> {
  const lines: string[] = [];
  const [guestEnd, hostEnd] = createLinkedPair();
  void serve({
    wire: guestEnd,
    run: async (ears) => {
      await ears.log("hi");
      return { got: await ears.call("greet", "Ada"), traceparent: ears.traceparent ?? null };
    },
  });
  const report = await runHost(hostEnd, {
    capabilities: { greet: (name) => `hello ${String(name)}` },
    onFrame: (direction, line) => lines.push(`${direction} ${line}`),
    ...(trace === undefined ? {} : { trace }),
  });
  return { lines, report };
}

/** The report without its clock readings, which differ run to run. */
function timeless(report: RunReport): unknown {
  return JSON.parse(JSON.stringify(report, (key, value: unknown) => (key === "durationMs" || key === "atMs" ? 0 : value)));
}

describe("without a tracer provider", () => {
  it("a run is exactly a run with tracing off: same frames (no traceparent), same report", async () => {
    const untraced = await recorded(undefined);
    const off = await recorded(false);
    expect(untraced.lines).toEqual(off.lines);
    expect(untraced.lines.find((line) => line.startsWith('host {"type":"invoke"'))).not.toContain("traceparent");
    expect(timeless(untraced.report)).toEqual(timeless(off.report));
    expect(untraced.report.outcome?.structured).toMatchObject({ traceparent: null });
  });
});

describe("without @opentelemetry/api installed", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-no-otel-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs work unchanged, and a host that passed trace options gets one warning saying why there are no spans", () => {
    requireBuild();
    // A resolver that cannot find any @opentelemetry package, as on a machine without them.
    writeFileSync(
      join(dir, "hide-otel.mjs"),
      `export async function resolve(specifier, context, next) {
  if (!specifier.startsWith("@opentelemetry/")) return next(specifier, context);
  throw Object.assign(new Error("Cannot find package " + specifier), { code: "ERR_MODULE_NOT_FOUND" });
}\n`,
    );
    writeFileSync(
      join(dir, "register.mjs"),
      `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(join(dir, "hide-otel.mjs")).href)});\n`,
    );
    writeFileSync(
      join(dir, "host.mjs"),
      `import { createLinkedPair, serve } from ${JSON.stringify(new URL("dist/index.js", ROOT).href)};
import { runHost } from ${JSON.stringify(new URL("dist/host/index.js", ROOT).href)};
const warnings = [];
process.on("warning", (warning) => warnings.push(warning.code));
const results = [];
for (const trace of [undefined, { parent: { getValue: () => undefined } }, { parent: { getValue: () => undefined } }]) {
  const lines = [];
  const [guestEnd, hostEnd] = createLinkedPair();
  void serve({ wire: guestEnd, run: async (ears) => ({ got: await ears.call("greet", "Ada"), traceparent: ears.traceparent ?? null }) });
  const onFrame = (d, line) => lines.push(line);
  const report = await runHost(hostEnd, { capabilities: { greet: () => "hello" }, onFrame, ...(trace ? { trace } : {}) });
  results.push({ ok: report.ok, structured: report.outcome.structured, invoke: lines.find((l) => l.includes('"invoke"')) });
}
await new Promise((resolve) => setImmediate(resolve));
let loaded = true;
try { await import("@opentelemetry/api"); } catch { loaded = false; }
console.log(JSON.stringify({ results, warnings, loaded }));
`,
    );
    const child = spawnSync(process.execPath, ["--import", pathToFileURL(join(dir, "register.mjs")).href, join(dir, "host.mjs")], {
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(child.status, child.stderr).toBe(0);
    const { results, warnings, loaded } = JSON.parse(child.stdout) as {
      results: { ok: boolean; structured: unknown; invoke: string }[];
      warnings: string[];
      loaded: boolean;
    };
    expect(loaded).toBe(false);
    for (const result of results) {
      expect(result.ok).toBe(true);
      expect(result.structured).toEqual({ got: { status: "success", content: "hello" }, traceparent: null });
      expect(result.invoke).toBe('{"type":"invoke","protocol":1,"allowed":["greet"],"input":null}');
    }
    expect(warnings).toEqual(["EARS_TRACE_UNAVAILABLE"]);
  });
});
