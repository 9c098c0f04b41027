import { defineConfig } from "vitest/config";

// The tests Stryker runs against each mutant: the in-process tests of the protocol, wire and guest code,
// and of the sandbox (test/host/sandbox/: the policy, argv and seccomp filter as data) (they import src/,
// which Stryker instruments). Not src/host/limits/: see CONTRIBUTING.md, "Mutation testing".
// Spawned-child and CLI tests load dist/, which a mutant of src/ does not reach, so they would only add time.
export default defineConfig({
  test: {
    include: [
      "test/{protocol,wires,contract,guest}/**/*.test.ts",
      "test/testing/arbitraries.test.ts",
      "test/host/run-host*.test.ts",
      "test/host/sandbox/**/*.test.ts",
    ],
    exclude: ["test/guest/spawned.test.ts", "test/protocol/schemas.test.ts", "test/protocol/vectors.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
