import { defineConfig } from "vitest/config";

// The tests Stryker runs against each mutant: the in-process tests of the protocol, wire and guest code, of the
// sandbox (test/host/sandbox/: the policy, argv and seccomp filter as data) and of the limits (test/host/limits/:
// the cgroup plan, a run's cgroup and limits on a cgroup file system given as data, the launcher's command line,
// the usage sampler on a /proc given as data,
// and that command line run by real shells on temporary files), of a bounded directory (test/host/workspace/
// bounded-dir.test.ts: stand-in mount and umount scripts that only record what they were asked) and of the
// compile code, and the session directory lock's tests on temporary directories (lock.test.ts: no mount). They
// import src/, which Stryker instruments.
// No test here reaches the machine's cgroups or mounts, or kills a process: RunCgroup's tests give it a fake file
// system, and test/helpers/no-host-cgroups.ts leaves the host no cgroup to offer a real guest's run (CONTRIBUTING.md,
// "Mutation testing": a mutant of the clean-up once killed the runner); a bounded directory's tests give it stand-in
// mount programs, and test/helpers/no-host-mounts.ts leaves runCode in process none to mount its working directory
// with. limits.test.ts, killed-host.test.ts, descriptors.attack.test.ts and real-files.test.ts use real cgroups or
// kill real processes, work-dir.attack.test.ts mounts: `npm test` only.
// Spawned-child and CLI tests load dist/, which a mutant of src/ does not reach, so they would only add time.
export default defineConfig({
  test: {
    include: [
      "test/{protocol,wires,contract,guest}/**/*.test.ts",
      "test/testing/arbitraries.test.ts",
      "test/host/run-host*.test.ts",
      "test/host/sandbox/**/*.test.ts",
      "test/host/limits/{plan,cgroup,run-limits,launcher,process-tree}.test.ts",
      "test/host/code/compile-{hostile,positions,verdicts}.test.ts",
      "test/host/workspace/{bounded-dir,lock}.test.ts",
      "test/cli/terminal-{text,approval}.test.ts",
    ],
    exclude: ["test/guest/spawned.test.ts", "test/protocol/schemas.test.ts", "test/protocol/vectors.test.ts"],
    setupFiles: ["test/helpers/no-host-cgroups.ts", "test/helpers/no-host-mounts.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
