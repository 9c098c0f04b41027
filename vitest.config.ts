import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Slow host-memory scenarios run on their own: `npm run test:memory` (vitest.memory.config.ts).
    exclude: [...configDefaults.exclude, "test/memory/**"],
    // Spawned-child tests start real processes; on a shared 2-core machine they need room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
