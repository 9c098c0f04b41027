// The host of docs/deploy.md's recipes: reads one body per line on stdin as JSON ({"code": "...", "input": ...})
// and writes each run's report as one JSON line on stdout. runCode's defaults: sandbox "auto" (the strongest
// confinement this machine offers, a refusal where there is none) and the default limits.
import { createInterface } from "node:readline";
import { runCode } from "@posoco/ears/host";

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    process.stdout.write(`${JSON.stringify({ status: "failure", failure: { code: "BadRequest", message: "a line must be JSON" } })}\n`);
    continue;
  }
  const report = await runCode({ code: String(request.code), input: request.input ?? null });
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
