// Prints the closing line CI reads: "N passed, N failed" (", N skipped" when any were skipped).
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? ".vitest-report.json";
let report;
try {
  report = JSON.parse(readFileSync(file, "utf8"));
} catch (error) {
  console.log(`could not read the vitest report ${file}: ${error.message}`);
  console.log("0 passed, 1 failed");
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
// A suite that fails to load counts as a failure even though it ran no test.
const failed = (report.numFailedTests ?? 0) + (report.numFailedTestSuites ?? 0) - failedSuitesWithFailedTests(report);
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);

function failedSuitesWithFailedTests(r) {
  return (r.testResults ?? []).filter(
    (s) => s.status === "failed" && (s.assertionResults ?? []).some((t) => t.status === "failed"),
  ).length;
}
