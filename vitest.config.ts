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
  },
});
