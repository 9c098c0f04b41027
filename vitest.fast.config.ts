import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

// The suite's fast part, which CI runs on Node 22 besides the whole suite on Node 24 (scripts/test-nodes.mjs):
// what depends on the Node version: the protocol, wires, guest, contract, the host's engine, a sandboxed runCode
// and pooled runs (test/host/code, test/host/pool), the code tool's core, the CLI and the framework adapters,
// by folder, so a new test file falls in by itself. Left out, as what the Node version changes little and what
// takes long: the host-memory scenarios, the documentation's samples, the npm pack consumer, the benchmark's own
// tests, the attack and memory soaks, the confinement, limits, workspace and remote-runner suites (they exercise
// the kernel, bubblewrap, Landlock and sshd through the same runner), the deployment recipes, the registry-backed
// client configurations, the browser timeline, the real-terminal approval, and the type checker's soak.
export default defineConfig({
  test: {
    include: ["test/*.test.ts", "test/{protocol,wires,guest,contract,host,code-tool,cli,frameworks}/**/*.test.ts"],
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
      "test/host/{confine,limits,workspace,remote,sandbox}/**",
      "test/cli/{approve-tmux,session-dir-attacks,exec-workspace,mcp-workspace,mcp-workspace-files,limits,limit-mechanisms}.test.ts",
    ],
    // As vitest.config.ts: a bound for a hang on one loaded CPU, not a measure of speed.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // As vitest.config.ts: one test file per CPU this process may use.
    maxWorkers: availableParallelism(),
  },
});
