import { defineConfig } from "vitest/config";
import base from "./vitest.mutate.config.js";

// `npm run mutate` over the approval ledgers and the resume path alone (CONTRIBUTING.md, "Mutation testing"):
// the mutate config's settings with only their tests, so the initial run does not take the whole suite's time.
export default defineConfig({ ...base, test: { ...base.test, include: ["test/host/approval/{ledger,resume}.test.ts"] } });
