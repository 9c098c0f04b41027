import { defineConfig } from "vitest/config";

// The host-memory scenarios (test/memory/): each runs a child host against an attacking guest and checks
// its peak RSS. They move gigabytes through pipes, so they run apart from the default suite:
// `npm run test:memory`. One file at a time: two at once would compete for the machine's memory and cores.
export default defineConfig({
  test: {
    include: ["test/memory/**/*.test.ts"],
    testTimeout: 240_000,
    hookTimeout: 30_000,
    pool: "forks",
    fileParallelism: false,
  },
});
