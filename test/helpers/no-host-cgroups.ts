/**
 * Setup for `npm run mutate` (vitest.mutate.config.ts): no test run under Stryker reaches this machine's
 * cgroups. A test that runs a real guest (test/guest/runtimes.test.ts) would otherwise create, clear and
 * remove a real run cgroup with src/host/limits/cgroup.ts, and a mutant of that code could then kill the
 * processes of the host's own cgroup, the mutation runner's among them (it did, three runs in a row).
 * Here the host has no cgroup to offer; RunCgroup's own tests give it a fake file system instead.
 */
import { vi } from "vitest";

vi.mock("../../src/host/limits/cgroup.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../src/host/limits/cgroup.js")>()),
  hostCgroupPlan: () => ({ version: null, reason: "no cgroup while mutation testing (test/helpers/no-host-cgroups.ts)" }),
}));
