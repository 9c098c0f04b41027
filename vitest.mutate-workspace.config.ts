import { defineConfig } from "vitest/config";
import base from "./vitest.mutate.config.js";

// `npm run mutate` over the session directory's lock and the host's walks over a workspace alone (CONTRIBUTING.md,
// "Mutation testing"): the mutate config's settings with only their tests (in process, on temporary directories, no
// sandbox or mount), so the initial run does not take the whole suite's time on a loaded machine.
export default defineConfig({ ...base, test: { ...base.test, include: ["test/host/workspace/{lock,walk,walk.details}.test.ts"] } });
