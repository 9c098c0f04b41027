import { defineConfig } from "vitest/config";
import base from "./vitest.mutate.config.js";

// The Landlock session's bounds: measureTree's tests and the watchdog's directory check (run-limits.test.ts).
export default defineConfig({
  ...base,
  test: { ...base.test, include: ["test/host/workspace/walk.details.test.ts", "test/host/limits/{run-limits,watchdog}.test.ts"] },
});
