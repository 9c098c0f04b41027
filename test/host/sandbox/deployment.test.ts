/**
 * `ears doctor`'s deployment matrix (src/host/sandbox/deployment.ts) over environments given as data: each
 * guarantee with its mechanism, and for each one not fully given the fix for the environment detected, never
 * "see the error above" and never advice that trades security away (seccomp=unconfined, privileged). The
 * facts read from a machine (doctor.ts, deploymentFacts) on data too; the real runs are in
 * test/host/limits/environments.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deploymentMatrix, environmentOf, type DeploymentFacts, type Environment } from "../../../src/host/sandbox/deployment.js";
import { deploymentFacts, type Check, type MachineView } from "../../../src/host/sandbox/doctor.js";
import { supportOn } from "../../../src/host/limits/limits.js";
import type { CgroupPlan } from "../../../src/host/limits/cgroup.js";

const GUARANTEES = ["file system", "network", "host sockets", "signals and /proc", "memory", "processes", "CPU", "/tmp", "sessions"];

/** A root host on a VM: bubblewrap starts, cgroup v1. */
const ROOT_VM: DeploymentFacts = {
  platform: "linux",
  root: true,
  capSysAdmin: true,
  environment: "host",
  bubblewrap: { installed: true, starts: true },
  landlock: { abi: null, reason: "unknown" },
  seccomp: true,
  cgroup: { version: "v1", controllers: ["memory", "pids", "cpu"] },
  rlimits: true,
  watchdog: true,
  systemdRun: true,
};

/** Docker's default: no user namespaces, /sys/fs/cgroup read-only, a non-root user. */
const DOCKER: DeploymentFacts = {
  ...ROOT_VM,
  root: false,
  capSysAdmin: false,
  environment: "docker",
  bubblewrap: { installed: true, starts: false, problem: "bwrap: No permissions to create new namespace" },
  cgroup: { version: null, reason: "the host may not write its cgroup v2 /sys/fs/cgroup", v2Mounted: true },
};

const factsArb: fc.Arbitrary<DeploymentFacts> = fc.record({
  platform: fc.constantFrom<NodeJS.Platform>("linux", "linux", "linux", "darwin"),
  root: fc.boolean(),
  capSysAdmin: fc.boolean(),
  environment: fc.constantFrom<Environment>("docker", "podman", "kubernetes", "container", "host"),
  bubblewrap: fc.oneof(
    fc.constant({ installed: false, starts: false }),
    fc.constant({ installed: true, starts: true }),
    fc.constant({ installed: true, starts: false, problem: "bwrap: setting up uid map: Permission denied" }),
  ),
  userns: fc.option(fc.constant({ problem: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000" }), {
    nil: undefined,
  }),
  landlock: fc.oneof(
    fc.constant({ abi: null, reason: "unknown" }),
    fc.integer({ min: 1, max: 7 }).map((abi) => ({ abi })),
  ),
  seccomp: fc.boolean(),
  cgroup: fc.oneof(
    fc.record({ version: fc.constantFrom<"v1" | "v2">("v1", "v2"), controllers: fc.subarray(["memory", "pids", "cpu"]) }),
    fc.record({ version: fc.constant(null), reason: fc.constant("no cgroup here"), v2Mounted: fc.boolean() }),
  ),
  rlimits: fc.boolean(),
  watchdog: fc.boolean(),
  systemdRun: fc.boolean(),
}) as fc.Arbitrary<DeploymentFacts>;

describe("the deployment matrix", () => {
  it("a root VM with bubblewrap and cgroup v1: every guarantee given, no fix", () => {
    const matrix = deploymentMatrix(ROOT_VM);
    expect(matrix.map((row) => row.guarantee)).toEqual(GUARANTEES);
    expect(matrix.map((row) => [row.mechanism, row.ok, row.fix])).toEqual([
      ["bubblewrap", true, undefined],
      ["bubblewrap", true, undefined],
      ["bubblewrap", true, undefined],
      ["bubblewrap", true, undefined],
      ["cgroup v1", true, undefined],
      ["cgroup v1", true, undefined],
      ["cgroup v1", true, undefined],
      ["bubblewrap tmpfs", true, undefined],
      ["bubblewrap tmpfs", true, undefined],
    ]);
  });

  it("Docker's defaults, non-root, no Landlock helper: the fixes keep Docker's seccomp profile and bound the container itself", () => {
    const rows = Object.fromEntries(deploymentMatrix(DOCKER).map((row) => [row.guarantee, row]));
    expect(rows["file system"]).toMatchObject({ mechanism: "none", ok: false });
    expect(rows["file system"]!.fix).toContain("Landlock needs no privilege and no namespace");
    expect(rows["file system"]!.fix).toContain("do not add --security-opt seccomp=unconfined or --privileged");
    expect(rows.memory).toMatchObject({ mechanism: "rlimit+watchdog", ok: false });
    expect(rows.memory!.fix).toContain("docker run --memory 2g --pids-limit 512 --cpus 2");
    expect(rows.memory!.fix).toContain("--cgroupns=private --security-opt unmask=/sys/fs/cgroup");
    expect(rows["/tmp"]).toMatchObject({ mechanism: "none", fix: expect.stringContaining("Landlock") });
    expect(rows.sessions).toMatchObject({ mechanism: "none", detail: expect.stringContaining("createSession is refused") });
    // With the Landlock helper (ABI 7): confined, /proc still visible, /tmp per file, and the container's /tmp bound as the fix.
    const landlock = Object.fromEntries(deploymentMatrix({ ...DOCKER, landlock: { abi: 7 } }).map((row) => [row.guarantee, row]));
    expect(["file system", "network", "host sockets"].map((name) => [landlock[name]!.mechanism, landlock[name]!.ok])).toEqual([
      ["landlock", true],
      ["landlock", true],
      ["landlock", true],
    ]);
    expect(landlock["signals and /proc"]).toMatchObject({
      mechanism: "landlock",
      ok: false,
      fix: expect.stringContaining("keep the profile"),
    });
    expect(landlock["/tmp"]).toMatchObject({
      mechanism: "rlimit",
      fix: "bound the container's own /tmp: docker run --tmpfs /tmp:rw,size=256m (podman run the same)",
    });
    // Landlock ABI 3: the file system, not TCP (ABI 4) nor scoping (ABI 6).
    const old = deploymentMatrix({ ...DOCKER, landlock: { abi: 3 } });
    expect(old.slice(0, 4).map((row) => row.mechanism)).toEqual(["landlock", "none", "none", "none"]);
    expect(old[1]!.detail).toMatch(/^Landlock ABI 3 cannot give it \(needs 4\)/);
  });

  it("Kubernetes: securityContext lines and the pod's resources; a non-root host: systemd-run delegation, or cgroup v2", () => {
    const pod = Object.fromEntries(deploymentMatrix({ ...DOCKER, environment: "kubernetes" }).map((row) => [row.guarantee, row]));
    expect(pod["file system"]!.fix).toContain(
      "securityContext: { seccompProfile: { type: RuntimeDefault }, allowPrivilegeEscalation: false",
    );
    expect(pod.memory!.fix).toContain("resources: { limits: { memory: 2Gi, cpu: 2 } }");
    const user = { ...DOCKER, environment: "host" as const, bubblewrap: { installed: true, starts: true } };
    const host = Object.fromEntries(deploymentMatrix(user).map((row) => [row.guarantee, row]));
    expect(host.memory!.fix).toBe(
      "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> " +
        "(or Delegate=yes in its systemd service)",
    );
    expect(host.processes!.detail).toContain("RLIMIT_NPROC (per user) as a backstop");
    expect(deploymentMatrix({ ...user, cgroup: { version: null, reason: "v1 only", v2Mounted: false } })[4]!.fix).toContain(
      "systemd.unified_cgroup_hierarchy=1",
    );
    expect(host.sessions).toMatchObject({ mechanism: "none", fix: "run the host as root (it mounts each session's bounded tmpfs)" });
    const notInstalled = deploymentMatrix({ ...user, bubblewrap: { installed: false, starts: false } });
    expect(notInstalled[0]!.fix).toMatch(/^apt-get install bubblewrap/);
  });

  it("holds over every environment (fast-check): nine rows; a fix wherever not ok, never 'see above' nor a weaker profile", () => {
    fc.assert(
      fc.property(factsArb, (facts) => {
        const matrix = deploymentMatrix(facts);
        expect(matrix.map((row) => row.guarantee)).toEqual(GUARANTEES);
        for (const row of matrix) {
          if (!row.ok) expect(row.fix, row.guarantee).toBeDefined();
          if (row.ok) expect(row.mechanism).not.toBe("none");
          const fix = row.fix ?? "";
          expect(fix).not.toMatch(/see the|above/i);
          // Advice that gives security away is named only to warn against it.
          const warnings = [
            "do not add --security-opt seccomp=unconfined or --privileged",
            "(keep them: no Unconfined profile, no privileged: true)",
          ];
          expect(warnings.reduce((text, warning) => text.replace(warning, ""), fix)).not.toMatch(
            /seccomp=unconfined|--privileged|privileged: true|Unconfined profile|CAP_SYS_ADMIN to the/,
          );
          if (facts.platform === "linux" && facts.environment !== "host") expect(fix).not.toMatch(/^apt-get|sysctl/);
        }
        if (facts.platform !== "linux") return;
        const [fileSystem, , , , memory, processes, cpu] = matrix;
        expect(fileSystem!.mechanism).toBe(facts.bubblewrap.starts ? "bubblewrap" : facts.landlock.abi !== null ? "landlock" : "none");
        // The resource rows say what the limit plan enforces with (limits.ts): one source of truth.
        const plan: CgroupPlan =
          facts.cgroup.version === null
            ? { version: null, reason: facts.cgroup.reason }
            : facts.cgroup.version === "v2"
              ? { version: "v2", parent: "/cg", controllers: facts.cgroup.controllers as never, enable: [] }
              : { version: "v1", parents: Object.fromEntries(facts.cgroup.controllers.map((c) => [c, `/cg/${c}`])) };
        const support = supportOn(facts.bubblewrap.starts, plan, { rlimits: facts.rlimits, watchdog: facts.watchdog, root: facts.root });
        const named = (enforcer: string | null) => (enforcer === null ? "none" : enforcer.replace(/^cgroup-/, "cgroup "));
        expect([memory!.mechanism, processes!.mechanism, cpu!.mechanism]).toEqual([
          named(support.limits.memoryBytes.enforcedBy),
          named(support.limits.processes.enforcedBy),
          named(support.limits.cpuTimeMs.enforcedBy),
        ]);
      }),
      { seed: 4242, numRuns: 300 },
    );
  });

  it("another platform: every guarantee missing, with the one fix", () => {
    const matrix = deploymentMatrix({ ...ROOT_VM, platform: "darwin" });
    expect(new Set(matrix.map((row) => `${row.mechanism} ${row.ok} ${row.fix}`))).toEqual(
      new Set(["none false run guests on Linux (a VM or a container), or accept unconfined runs (sandbox: false)"]),
    );
  });
});

describe("the environment and the facts, read from a machine", () => {
  it("tells Kubernetes, Podman, Docker and other containers from a host", () => {
    const none = { kubernetes: false, containerenv: false, dockerenv: false, initCgroup: "0::/init.scope" };
    expect(environmentOf(none)).toBe("host");
    expect(environmentOf({ ...none, dockerenv: true })).toBe("docker");
    expect(environmentOf({ ...none, dockerenv: true, containerenv: true })).toBe("podman");
    expect(environmentOf({ ...none, dockerenv: true, kubernetes: true })).toBe("kubernetes");
    expect(environmentOf({ ...none, initCgroup: "0::/system.slice/containerd.service/abc" })).toBe("container");
    expect(environmentOf({ ...none, initCgroup: "0::/kubepods/burstable/pod1/abc" })).toBe("kubernetes");
  });

  it("takes the sandbox's checks, CAP_SYS_ADMIN from CapEff, the container's signs and the cgroup plan", () => {
    const machine: MachineView = {
      platform: "linux",
      arch: "x64",
      root: true,
      bwrap: "/usr/bin/bwrap",
      bwrapVersion: () => undefined,
      startProblem: () => Promise.resolve(undefined),
      proc: (path) =>
        ({
          "/proc/self/status": "Name:\tnode\nCapEff:\t0000000000200000",
          "/proc/1/cgroup": "0::/",
          "/proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw",
        })[path],
    };
    const checks: Check[] = [
      { name: "sandbox starts", ok: false, detail: "bwrap: No permissions to create new namespace" },
      { name: "user namespaces", ok: false, detail: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000" },
      { name: "seccomp", ok: true, detail: "" },
    ];
    const facts = deploymentFacts(machine, checks, {
      exists: (path) => path === "/.dockerenv" || path === "/usr/bin/systemd-run",
      env: {},
      cgroupPlan: () => ({ version: null, reason: "read-only" }),
      tools: () => ({ rlimits: true, watchdog: true, root: true }),
      landlock: () => ({ abi: 6, via: "test" }),
    });
    expect(facts).toEqual({
      platform: "linux",
      root: true,
      capSysAdmin: true,
      environment: "docker",
      bubblewrap: { installed: true, starts: false, problem: "bwrap: No permissions to create new namespace" },
      userns: { problem: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000" },
      landlock: { abi: 6 },
      seccomp: true,
      cgroup: { version: null, reason: "read-only", v2Mounted: true },
      rlimits: true,
      watchdog: true,
      systemdRun: true,
    });
    const without = deploymentFacts({ ...machine, proc: () => undefined }, [], {
      exists: () => false,
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1" },
      cgroupPlan: () => ({ version: "v1", parents: { memory: "/m", pids: "/p" } }),
      tools: () => ({ rlimits: false, watchdog: false, root: false }),
      landlock: () => ({ abi: null, reason: "no helper" }),
    });
    expect(without).toMatchObject({
      capSysAdmin: false,
      environment: "kubernetes",
      bubblewrap: { installed: true, starts: false },
      landlock: { abi: null, reason: "no helper" },
      cgroup: { version: "v1", controllers: ["memory", "pids"] },
      systemdRun: false,
    });
    expect(without.userns).toBeUndefined();
  });
});
