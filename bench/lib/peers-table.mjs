// The pure parts of the peers scenario (bench/scenarios/peers.mjs, issue 33): the bodies every system runs,
// the probe body that finds out what a body can reach, the one-line isolation summary made from what the
// probe found, and the table of medians and p90s. No process, no peer package: test/bench/peers-table.test.ts.

/**
 * The three bodies, the same text for every system: each system's prelude defines `add(a, b)` (one host
 * call: `ears.call("add", …)`, `tools.add(…)`) and `hostFn` (a function the host made, for the realm probe).
 */
export const BODIES = {
  one: { label: "one add call", code: "return (await add(1, 2)) * 2;", expect: 6 },
  ten: {
    label: "ten add calls",
    code: "let s = 0;\nfor (let i = 0; i < 10; i++) s += await add(i, 1);\nreturn s;",
    expect: 55,
  },
  compute: {
    label: "small compute",
    code: "let s = 0;\nfor (let i = 0; i < 200000; i++) s = (s + i * i) % 1000003;\nreturn s;",
    expect: smallCompute(),
  },
};

function smallCompute() {
  let s = 0;
  for (let i = 0; i < 200000; i++) s = (s + i * i) % 1000003;
  return s;
}

/** The environment variable the host sets for the probe: a body that sees its value sees the host's environment. */
export const PROBE_ENV = "EARS_PEERS_PROBE";

/**
 * A body (same rules as {@link BODIES}) that tries what an untrusted body should not do and returns what
 * worked: read /etc/hostname, read a file the host made outside any sandbox (`hostFile`, holding `token`),
 * see the host's environment variable {@link PROBE_ENV} (= `token`), connect to a loopback port the host
 * listens on, start a process, and reach the host's own realm through a function the host made (the
 * classic `node:vm` escape). It finds Node's built-ins through `process.getBuiltinModule` and Deno's
 * through `Deno`, in its own realm or the host's; a system with neither has no way to any of it.
 */
export function probeBody({ hostFile, token, port }) {
  const literal = JSON.stringify;
  return `const realms = [globalThis];
try { const other = hostFn.constructor("return globalThis")(); if (other && other !== globalThis) realms.push(other); } catch {}
const node = realms.map((r) => r.process).find((p) => typeof p?.getBuiltinModule === "function");
const deno = node === undefined ? realms.map((r) => r.Deno).find((d) => d !== undefined) : undefined;
const attempt = async (f) => { try { return (await f()) === true; } catch { return false; } };
const read = (path) => (node ? node.getBuiltinModule("node:fs").readFileSync(path, "utf8") : deno.readTextFileSync(path));
const found = {
  hostRealm: realms.length > 1 && (realms[1].process !== undefined || realms[1].Deno !== undefined),
  systemFile: await attempt(() => read("/etc/hostname").length >= 0),
  hostFile: await attempt(() => read(${literal(hostFile)}) === ${literal(token)}),
  env: await attempt(() => (node ? node.env[${literal(PROBE_ENV)}] : deno.env.get(${literal(PROBE_ENV)})) === ${literal(token)}),
  socket: await attempt(() =>
    node
      ? new Promise((resolve) => {
          const s = node.getBuiltinModule("node:net").connect(${port}, "127.0.0.1");
          s.setTimeout(1000, () => { s.destroy(); resolve(false); });
          s.once("connect", () => { s.destroy(); resolve(true); });
          s.once("error", () => resolve(false));
        })
      : deno.connect({ hostname: "127.0.0.1", port: ${port} }).then((c) => { c.close(); return true; }),
  ),
  spawn: await attempt(() =>
    node
      ? node.getBuiltinModule("node:child_process").spawnSync("/bin/sh", ["-c", "exit 7"]).status === 7
      : new deno.Command("/bin/sh", { args: ["-c", "exit 7"] }).outputSync().code === 7,
  ),
};
return found;`;
}

/** What each probe means, in the order the summary lists them. */
const PROBES = [
  ["systemFile", "/etc/hostname"],
  ["hostFile", "a host file"],
  ["env", "the host's env"],
  ["socket", "a loopback socket"],
  ["spawn", "a process"],
];

/**
 * The one-line isolation summary of a probe's result: what the body could reach, what it could not, and the
 * host realm when it got there. A probe that did not come back is said so (`failed` is why).
 */
export function isolationSummary(found, failed) {
  if (found === undefined || found === null || typeof found !== "object") return `probe failed: ${failed ?? "no result"}`;
  const reached = PROBES.filter(([key]) => found[key] === true).map(([, words]) => words);
  const denied = PROBES.filter(([key]) => found[key] !== true).map(([, words]) => words);
  const parts = [];
  if (found.hostRealm === true) parts.push("reached the host's realm (a host function's constructor)");
  parts.push(reached.length === 0 ? "reached nothing" : `reached ${reached.join(", ")}`);
  if (denied.length > 0) parts.push(`not ${denied.join(", ")}`);
  return parts.join("; ");
}

/** The value at quantile `q` (0..1) of numbers, interpolated; NaN for none. */
export function quantile(samples, q) {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

/**
 * Microseconds per host call in a fresh runner, from the ten-call body's runs: the median of (result − first call)
 * / 10, both as the host saw them (the first call's reply, nine more calls and the result: ten round trips
 * between host and body), so the start and the teardown, which dwarf a call and vary by more, stay out of it.
 * Undefined when no run has both times.
 */
export function perCallMicros(tenRuns) {
  const spans = (tenRuns ?? [])
    .filter((r) => Number.isFinite(r.firstCallMs) && Number.isFinite(r.resultMs))
    .map((r) => ((r.resultMs - r.firstCallMs) / 10) * 1000);
  return spans.length === 0 ? undefined : quantile(spans, 0.5);
}

/**
 * The table's rows for one round: per system, per body, the median and p90 of the call to the result and (for
 * systems with a teardown the caller waits for) to the end, in ms; the per-call µs; and the isolation line.
 * `systems`: [{ name, samples: { [bodyId]: [{ resultMs, endMs? }] } | undefined, skipped?: string, isolation }].
 */
export function peersRows(systems) {
  const ms = (value) => (Number.isFinite(value) ? value.toFixed(value >= 100 ? 0 : value >= 10 ? 1 : 2) : "-");
  return systems.map(({ name, samples, skipped, isolation }) => {
    if (samples === undefined) return { name, cells: [`not run: ${skipped ?? "unknown"}`], isolation };
    const cells = Object.keys(BODIES).map((id) => {
      const runs = samples[id] ?? [];
      const result = runs.map((r) => r.resultMs);
      const end = runs.map((r) => r.endMs).filter((v) => v !== undefined);
      const head = `${ms(quantile(result, 0.5))} / ${ms(quantile(result, 0.9))}`;
      return end.length === 0 ? head : `${head} (end ${ms(quantile(end, 0.5))} / ${ms(quantile(end, 0.9))})`;
    });
    const perCall = perCallMicros(samples.ten);
    cells.push(perCall === undefined ? "-" : perCall.toFixed(0));
    return { name, cells, isolation };
  });
}

/** The round's table as text: a header, one line per system, then the isolation line of each. */
export function peersTable(title, systems) {
  const rows = peersRows(systems);
  const header = ["System", ...Object.values(BODIES).map((b) => `${b.label}: median / p90 ms`), "µs per call"];
  const body = rows.map((r) => [r.name, ...r.cells]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => String(cells[i] ?? "").length)));
  const line = (cells) =>
    cells
      .map((c, i) => String(c ?? "").padEnd(widths[i]))
      .join(" | ")
      .trimEnd();
  const isolation = rows.map((r) => `  ${r.name}: ${r.isolation}`);
  return [title, line(header), widths.map((w) => "-".repeat(w)).join("-|-"), ...body.map(line), "Isolation, probed:", ...isolation].join(
    "\n",
  );
}
