import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Slow host-memory scenarios run on their own: `npm run test:memory` (vitest.memory.config.ts).
    exclude: [...configDefaults.exclude, "test/memory/**"],
    // Spawned-child tests start real processes: on one loaded CPU (scripts/stress-suite.sh, a busy CI machine)
    // a test that takes 3 s on an idle one takes 30 or more. A bound for a hang, not a measure of speed.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // One test file per CPU this process may use: the suite mostly waits (on real processes, deadlines, servers)
    // rather than computes, and vitest's default, one fewer than the CPUs, is a single worker on a 2-CPU machine:
    // the whole suite took about 14 minutes that way on an idle one, 8 with two. Under scripts/stress-suite.sh's
    // `taskset -c 0` it is one: the suite on one loaded CPU, not files also crowding each other there.
    maxWorkers: availableParallelism(),
  },
});
