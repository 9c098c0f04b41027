// Prints the closing line CI reads: "N passed, N failed" (", N skipped" when any were skipped), added up
// over every vitest JSON report named on the command line. `--check NAME=STATUS` counts one more test,
// passed when STATUS is 0 (used for the type tests and lint, which run outside vitest). `--label NAME`
// starts a group (the reports and checks after it, up to the next label): each group's counts are printed on
// a line of their own, "NAME: N passed, N failed", before the total (scripts/test-nodes.mjs: one group per
// Node version).
import { readFileSync } from "node:fs";

const groups = [{ label: undefined, files: [], checks: [] }];
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === "--label") groups.push({ label: process.argv[++i] ?? "", files: [], checks: [] });
  else if (arg === "--check") groups.at(-1).checks.push(process.argv[++i] ?? "");
  else groups.at(-1).files.push(arg);
}
if (groups.every((group) => group.files.length === 0 && group.checks.length === 0)) groups[0].files.push(".vitest-report.json");

const total = { passed: 0, failed: 0, skipped: 0 };
const labelled = groups.some((group) => group.label !== undefined);
for (const group of groups) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const file of group.files) {
    let report;
    try {
      report = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      console.log(`could not read the vitest report ${file}: ${error.message}`);
      counts.failed++;
      continue;
    }
    counts.passed += report.numPassedTests ?? 0;
    // A test file that fails to load counts as a failure even though it ran no test. (vitest's
    // numFailedTestSuites also counts each describe block around a failed test, so files are counted here.)
    counts.failed += (report.numFailedTests ?? 0) + filesFailedWithoutFailedTests(report);
    counts.skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  }
  for (const check of group.checks) {
    const at = check.lastIndexOf("=");
    const [name, status] = [check.slice(0, at), check.slice(at + 1)];
    if (status === "0") counts.passed++;
    else {
      console.log(`${name} failed (exit status ${status})`);
      counts.failed++;
    }
  }
  if (labelled && (group.label !== undefined || group.files.length + group.checks.length > 0)) {
    console.log(`${group.label ?? "other"}: ${line(counts)}`);
  }
  for (const key of Object.keys(total)) total[key] += counts[key];
}
console.log(line(total));
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0);

function line({ passed, failed, skipped }) {
  return `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`;
}

function filesFailedWithoutFailedTests(r) {
  return (r.testResults ?? []).filter((s) => s.status === "failed" && !(s.assertionResults ?? []).some((t) => t.status === "failed"))
    .length;
}
