import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Spawned-child tests start real processes; on a shared 2-core machine they need room.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
  },
});
