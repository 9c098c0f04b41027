// A narrower copy of vitest.mutate.config.ts for one Stryker run over the sandbox's files (CONTRIBUTING.md): only the
// sandbox's in-process tests, which are the ones that reach src/host/sandbox/.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/host/sandbox/**/*.test.ts"],
    setupFiles: ["test/helpers/no-host-cgroups.ts", "test/helpers/no-host-mounts.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
