import { configDefaults, defineConfig } from "vitest/config";

// The suite's fast part, which CI runs on Node 22 besides the whole suite on Node 24 (scripts/test-nodes.mjs):
// the protocol, wires, guest, contract, transcripts, test kit, OpenSeek clients, observability, the host (a
// sandboxed runCode and pooled runs included), the CLI and the framework adapters, by folder, so a new test
// file falls in by itself. Left out, as the long soaks and the rest that does not depend on the Node version
// much: the host-memory scenarios (test/memory/, slow), the documentation's samples (test/docs/, doc*.test.ts),
// the npm pack consumer and the package's files (test/package/), the benchmark's own tests, the attack and
// memory soaks (*.attack.test.ts, *.memory.test.ts), the registry-backed client configurations, the browser
// timeline, and the type checker's soak over two TypeScript generations.
export default defineConfig({
  test: {
    include: [
      "test/*.test.ts",
      "test/{protocol,wires,guest,contract,transcripts,testing,openseek,observability,host,cli,frameworks,scripts}/**/*.test.ts",
    ],
    exclude: [
      ...configDefaults.exclude,
      "test/memory/**",
      "test/docs/**",
      "test/package/**",
      "test/bench/**",
      "test/**/*.attack.test.ts",
      "test/**/*.memory.test.ts",
      "test/**/doc*.test.ts",
      "test/cli/mcp-client-config.test.ts",
      "test/cli/timeline-browser.test.ts",
      "test/host/code/warm-typecheck.test.ts",
    ],
    // As vitest.config.ts: a bound for a hang on one loaded CPU, not a measure of speed.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
