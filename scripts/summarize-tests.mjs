// Prints the closing line CI reads: "N passed, N failed" (", N skipped" when any were skipped), added up
// over every vitest JSON report named on the command line. `--check NAME=STATUS` counts one more test,
// passed when STATUS is 0 (used for the type tests, which tsc runs outside vitest).
import { readFileSync } from "node:fs";

const files = [];
const checks = [];
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === "--check") checks.push(process.argv[++i] ?? "");
  else files.push(process.argv[i]);
}
if (files.length === 0) files.push(".vitest-report.json");

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of files) {
  let report;
  try {
    report = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    console.log(`could not read the vitest report ${file}: ${error.message}`);
    failed++;
    continue;
  }
  passed += report.numPassedTests ?? 0;
  // A test file that fails to load counts as a failure even though it ran no test. (vitest's
  // numFailedTestSuites also counts each describe block around a failed test, so files are counted here.)
  failed += (report.numFailedTests ?? 0) + filesFailedWithoutFailedTests(report);
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
for (const check of checks) {
  const [name, status] = check.split("=");
  if (status === "0") passed++;
  else {
    console.log(`${name} failed (exit status ${status})`);
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);

function filesFailedWithoutFailedTests(r) {
  return (r.testResults ?? []).filter((s) => s.status === "failed" && !(s.assertionResults ?? []).some((t) => t.status === "failed"))
    .length;
}
