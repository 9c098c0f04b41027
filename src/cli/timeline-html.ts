/**
 * A timeline as one self-contained HTML page (`ears timeline`): inline CSS and a few lines of inline
 * script (the search box), no network and no external asset — its Content-Security-Policy forbids any
 * fetch, so it can be opened offline and attached to a bug report. Every piece of guest text is
 * HTML-escaped; the script only shows and hides rows.
 */
import type { ResourceUsage } from "../host/api/types.js";
import type { Timeline, TimelineCall, TimelineMark } from "../transcripts/timeline.js";
import { limitsLine, usageLine } from "./report-output.js";

/** The page for `timeline`, titled after `source` (the transcript's name). */
export function timelineHtml(timeline: Timeline, source: string): string {
  const scale = Math.max(timeline.durationMs, 1);
  const rows = [
    ...timeline.calls.map((call) => ({ at: call.startMs, html: callRow(call, timeline, scale) })),
    ...timeline.marks.map((mark) => ({ at: mark.atMs, html: markRow(mark, timeline, scale) })),
  ].sort((a, b) => a.at - b.at);
  const calls = timeline.calls.length + timeline.droppedCalls;
  const failed = timeline.calls.filter((call) => call.status !== "success").length;
  const report = timeline.report;
  // The figures as the report wrote them, on the line the CLI prints after a live run.
  const usage = report?.usage === undefined ? undefined : usageLine(report.usage as unknown as ResourceUsage);
  const measuredBy = typeof report?.usage?.source === "string" ? report.usage.source : undefined;
  const limits = report?.limits === undefined ? undefined : limitsLine(report.limits);
  const bad = report?.ok === false || timeline.result?.status === "failure" || report?.failure !== undefined;
  const facts = [
    `${time(timeline.durationMs, timeline.timed)}`,
    `${calls} call${calls === 1 ? "" : "s"}${failed > 0 ? `, ${failed} not successful` : ""}`,
    `${timeline.marks.filter((mark) => mark.kind === "log").length} logs`,
    ...(usage !== undefined ? [`usage: ${usage}`] : []),
    ...(measuredBy !== undefined ? [`usage measured by ${measuredBy}`] : []),
    ...(limits !== undefined ? [`limits: ${limits}`] : []),
    ...(report?.sandbox !== undefined ? [`sandbox: ${report.sandbox}`] : []),
    ...(report?.exit !== undefined ? [`exit: ${report.exit}`] : []),
    ...(timeline.sdk !== undefined ? [`guest: ${timeline.sdk}`] : []),
  ];
  const notes = [
    ...(timeline.timed ? [] : ["This transcript has no times (record it with ears run --record): positions show the order of frames."]),
    ...(timeline.droppedCalls > 0 ? [`${timeline.droppedCalls} later calls are not shown.`] : []),
    ...(timeline.droppedMarks > 0 ? [`${timeline.droppedMarks} later logs and stderr chunks are not shown.`] : []),
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ears timeline: ${escape(source)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>ears timeline <span class="source">${escape(source)}</span></h1>
<ul class="facts"><li class="verdict ${bad ? "bad" : "good"}">${escape(verdict(timeline))}</li>${facts
    .map((fact) => `<li>${escape(fact)}</li>`)
    .join("")}</ul>
${notes.map((note) => `<p class="note">${escape(note)}</p>`).join("\n")}
${failureSection(timeline)}
${codeSection(timeline)}
<label class="search">Search <input id="search" type="search" placeholder="name, code, text…" autocomplete="off"></label>
<span id="shown">${rows.length} rows</span>
</header>
<main>
<div class="axis">${axis(timeline)}</div>
<ol id="rows">
${rows.map((row) => row.html).join("\n")}
</ol>
${resultSection(timeline)}
</main>
<footer>Made by <code>ears timeline</code> from ${escape(source)}. Self-contained: no network, no external assets.</footer>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** Nothing may be fetched: only the page's own inline style and script run. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'";

function verdict(timeline: Timeline): string {
  const failure = timeline.report?.failure;
  if (failure !== undefined) return `session failed: ${failure.code}`;
  const result = timeline.result;
  if (result === undefined) return "no result";
  return result.status === "success" ? "success" : `guest failure: ${result.code ?? ""}`;
}

function callRow(call: TimelineCall, timeline: Timeline, scale: number): string {
  const end = call.endMs ?? timeline.durationMs;
  const left = percent(call.startMs / scale);
  const width = percent(Math.max(end - call.startMs, 0) / scale);
  const outcome = call.status === "failure" ? `failure ${call.code ?? ""}` : call.status;
  const duration = call.endMs === undefined ? "no reply" : time(call.endMs - call.startMs, timeline.timed);
  const content = call.content ? ` <span class="content">${escape(call.content)}</span>` : "";
  return [
    `<li class="row call ${call.status}">`,
    `<div class="label"><span class="at">${escape(time(call.startMs, timeline.timed))}</span>`,
    ` <span class="name">#${call.id} ${escape(call.name)}</span> <span class="args">${escape(call.arguments)}</span></div>`,
    `<div class="lane"><span class="bar" style="left:${left}%;width:${width}%"`,
    ` title="${escape(`${call.name}: ${duration}, ${outcome}`)}"></span></div>`,
    `<div class="outcome"><span class="duration">${escape(duration)}</span> <span class="status">${escape(outcome)}</span>${content}</div>`,
    "</li>",
  ].join("\n");
}

function markRow(mark: TimelineMark, timeline: Timeline, scale: number): string {
  return [
    `<li class="row mark ${mark.kind}${mark.kind === "end" && mark.level === "normal" ? " normal" : ""}">`,
    `<div class="label"><span class="at">${escape(time(mark.atMs, timeline.timed))}</span>`,
    ` <span class="level">${escape(markLabel(mark))}</span></div>`,
    `<div class="lane"><span class="tick" style="left:${percent(mark.atMs / scale)}%"></span></div>`,
    `<div class="outcome"><pre>${escape(mark.text)}</pre></div>`,
    "</li>",
  ].join("\n");
}

function markLabel(mark: TimelineMark): string {
  switch (mark.kind) {
    case "log":
      return `[${mark.level ?? "info"}]`;
    case "stderr":
      return "[stderr]";
    case "session":
      return "[session]";
    case "line":
      return `[not a frame, from ${mark.level ?? "?"}]`;
    case "approval":
      return `[approval ${mark.level ?? "?"}]`;
    case "end":
      return "[end]";
  }
}

function failureSection(timeline: Timeline): string {
  const failure = timeline.report?.failure;
  if (failure === undefined) return "";
  return [
    `<section class="failure"><h2>Session failure <code>${escape(failure.code)}</code></h2>`,
    `<pre>${escape(failure.message)}</pre></section>`,
  ].join("\n");
}

/** The body the run was given, with line numbers as code.ts:LINE counts them (failures name those lines). */
function codeSection(timeline: Timeline): string {
  const { code } = timeline;
  if (code === undefined) return "";
  const lines = code.text.split("\n");
  const width = String(lines.length).length;
  const numbered = lines.map((line, index) => `${String(index + 1).padStart(width)}  ${line}`).join("\n");
  const cut = code.droppedChars > 0 ? `<p class="note">${code.droppedChars} more characters were not recorded.</p>` : "";
  return `<details class="code" open><summary>Code (code.ts)</summary><pre>${escape(numbered)}</pre>${cut}</details>`;
}

function resultSection(timeline: Timeline): string {
  const result = timeline.result;
  if (result === undefined) return `<section class="result"><h2>Result</h2><p>The guest sent no result.</p></section>`;
  const code = result.code !== undefined ? ` <code>${escape(result.code)}</code>` : "";
  return [
    `<section class="result ${result.status}">`,
    `<h2>Result: ${escape(result.status)}${code} <span class="at">at ${escape(time(result.atMs, timeline.timed))}</span></h2>`,
    result.content !== "" ? `<pre class="content">${escape(result.content)}</pre>` : "",
    result.structured !== undefined ? `<pre class="structured">${escape(result.structured)}</pre>` : "",
    "</section>",
  ].join("\n");
}

function axis(timeline: Timeline): string {
  return [0, 0.25, 0.5, 0.75, 1]
    .map((fraction) => `<span style="left:${percent(fraction)}%">${escape(time(timeline.durationMs * fraction, timeline.timed))}</span>`)
    .join("");
}

/** A time for people: ms below 10 s, s above; for an untimed transcript, the entry's position. */
function time(ms: number, timed: boolean): string {
  if (!timed) return `#${Math.round(ms)}`;
  if (ms >= 10_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${ms.toFixed(ms >= 100 ? 0 : 1)} ms`;
}

function percent(fraction: number): string {
  return (Math.min(Math.max(fraction, 0), 1) * 100).toFixed(3);
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text made safe for HTML text and attribute values. */
export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

const STYLE = `
:root {
  --good: #2e7d32;
  --bad: #c62828;
  --none: #9e9e9e;
  --log: #1565c0;
  --err: #6a1b9a;
  --line: #e0e0e0;
  font: 14px/1.4 system-ui, sans-serif;
  color: #212121;
}
body { margin: 0; padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 8px; }
h1 .source { font-weight: normal; color: #616161; }
h2 { font-size: 16px; margin: 16px 0 4px; }
.facts { list-style: none; padding: 0; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 6px; }
.facts li { background: #f5f5f5; border: 1px solid var(--line); border-radius: 12px; padding: 2px 10px; }
.facts li.verdict.good { background: #e8f5e9; border-color: var(--good); }
.facts li.verdict.bad { background: #ffebee; border-color: var(--bad); }
.note { color: #616161; margin: 4px 0; }
.search input { font: inherit; padding: 3px 6px; width: 260px; }
#shown { color: #616161; margin-left: 8px; }
.axis {
  position: relative;
  height: 18px;
  margin-left: 38%;
  margin-right: 24%;
  border-bottom: 1px solid #bdbdbd;
  color: #757575;
  font-size: 12px;
}
.axis span { position: absolute; transform: translateX(-50%); white-space: nowrap; }
.axis span:first-child { transform: none; }
.axis span:last-child { transform: translateX(-100%); }
ol#rows { list-style: none; padding: 0; margin: 0; }
.row {
  display: grid;
  grid-template-columns: 38% 1fr 24%;
  align-items: center;
  border-bottom: 1px solid #f0f0f0;
  min-height: 24px;
}
.row[hidden] { display: none; }
.label { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding-right: 8px; }
.at { color: #757575; font-variant-numeric: tabular-nums; display: inline-block; min-width: 64px; }
.name { font-weight: 600; }
.args { color: #616161; font-family: ui-monospace, monospace; font-size: 12px; }
.lane { position: relative; height: 16px; background: linear-gradient(90deg, #fafafa, #fafafa); }
.bar { position: absolute; top: 2px; height: 12px; min-width: 3px; border-radius: 2px; background: var(--good); }
.call.failure .bar { background: var(--bad); }
.call.unanswered .bar { background: repeating-linear-gradient(45deg, var(--none), var(--none) 4px, #e0e0e0 4px, #e0e0e0 8px); }
.tick {
  position: absolute;
  top: 3px;
  width: 8px;
  height: 8px;
  margin-left: -4px;
  transform: rotate(45deg);
  background: var(--log);
}
.mark.stderr .tick { background: var(--err); }
.mark.session .tick { background: #616161; }
.mark.session .level { color: #616161; }
.mark.line .tick { background: var(--bad); }
.mark.approval .tick { background: #00695c; }
.mark.approval .level { color: #00695c; font-weight: 600; }
.mark.end .tick { background: var(--bad); }
.mark.end .level { color: var(--bad); font-weight: 600; }
.mark.end.normal .tick { background: var(--good); }
.mark.end.normal .level { color: #616161; font-weight: 400; }
.outcome { padding-left: 8px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-size: 13px; }
.call.failure .status { color: var(--bad); font-weight: 600; }
.call.success .status { color: var(--good); }
.call.unanswered .status { color: #616161; font-weight: 600; }
.outcome .content { color: #757575; }
.outcome pre { margin: 0; white-space: pre-wrap; font-size: 12px; max-height: 6em; overflow: auto; }
.mark.log .level { color: var(--log); font-weight: 600; }
.mark.stderr .level { color: var(--err); font-weight: 600; }
.mark.line .level { color: var(--bad); }
section pre {
  background: #fafafa;
  border: 1px solid var(--line);
  padding: 8px;
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  max-height: 24em;
  overflow: auto;
}
section.failure h2, section.result.failure h2 { color: var(--bad); }
section.result.success h2 { color: var(--good); }
footer { margin-top: 24px; color: #9e9e9e; font-size: 12px; }
`;

const SCRIPT = `
const search = document.getElementById("search");
const shown = document.getElementById("shown");
const rows = Array.from(document.querySelectorAll("#rows > li"));
search.addEventListener("input", () => {
  const wanted = search.value.trim().toLowerCase();
  let count = 0;
  for (const row of rows) {
    const hit = wanted === "" || row.textContent.toLowerCase().includes(wanted);
    row.hidden = !hit;
    if (hit) count++;
  }
  shown.textContent = wanted === "" ? rows.length + " rows" : count + " of " + rows.length + " rows";
});
`;
