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
      // Not limits.test.ts: it runs the cgroup code that kills what is left in a run's cgroups for real, and a
      // mutant of that code (a wrong directory) kills the host's own processes, Stryker's among them.
      "test/host/limits/{plan,launcher}.test.ts",
    ],
    exclude: ["test/guest/spawned.test.ts", "test/protocol/schemas.test.ts", "test/protocol/vectors.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
