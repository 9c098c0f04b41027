/**
 * Setup for `npm run mutate` (vitest.mutate.config.ts): no test run under Stryker mounts or unmounts anything.
 * runCode gives every run a bounded directory (src/host/workspace/bounded-dir.ts), which a root host mounts
 * with the real mount program; a test that calls runCode in process (test/contract/compose.test.ts,
 * test/host/code/compile-hostile.test.ts) would then run a mutant of that code's command lines as root. Here
 * the host has no mount programs to offer, so such a run gets the plain directory a host that cannot mount
 * gets; bounded-dir.test.ts gives its own stand-in programs, which only record what they were asked.
 */
import { vi } from "vitest";
import type { MountSystem } from "../../src/host/workspace/bounded-dir.js";

vi.mock("../../src/host/workspace/bounded-dir.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/host/workspace/bounded-dir.js")>();
  const none: MountSystem = {
    tools: () => "no mounts while mutation testing (test/helpers/no-host-mounts.ts)",
    cover: real.hostMounts.cover,
  };
  return {
    ...real,
    mountBounded: (dir: string, bound: Parameters<typeof real.mountBounded>[1], shared = false, system = none) =>
      real.mountBounded(dir, bound, shared, system),
    bindMount: (source: string, target: string, system = none) => real.bindMount(source, target, system),
    unmountBounded: (dir: string, system = none) => real.unmountBounded(dir, system),
    makeBoundedDir: (prefix: string, bound: Parameters<typeof real.makeBoundedDir>[1], fallback: boolean, shared = false, system = none) =>
      real.makeBoundedDir(prefix, bound, fallback, shared, system),
  };
});
