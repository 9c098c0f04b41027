import { defineConfig } from "vitest/config";

// The tests Stryker runs against each mutant: the in-process tests of the protocol, wire and guest code,
// and of the sandbox and the limits (test/host/sandbox/: the policy, argv and seccomp filter as data;
// test/host/limits/: the cgroup plan and the launcher) (they import src/, which Stryker instruments). Spawned-child and CLI tests load dist/, which a mutant
// of src/ does not reach, so they would only add time.
export default defineConfig({
  test: {
    include: [
      "test/{protocol,wires,contract,guest}/**/*.test.ts",
      "test/testing/arbitraries.test.ts",
      "test/host/run-host*.test.ts",
      "test/host/sandbox/**/*.test.ts",
      // Only the plan's tests (data in, data out). limits.test.ts and launcher.test.ts join and clear real
      // cgroups, and their mutants (a wrong directory, a wrong pid) killed the processes of the host's own
      // cgroup, Stryker's among them, three runs in a row: they run in `npm test`, not under Stryker.
      "test/host/limits/plan.test.ts",
    ],
    exclude: ["test/guest/spawned.test.ts", "test/protocol/schemas.test.ts", "test/protocol/vectors.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
