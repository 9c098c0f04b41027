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
    // Landlock ABI 3 or 5: the helper refuses to confine below ABI 6 (scoping), so runs are refused, and the matrix
    // says none, not the file system alone; /tmp is not bounded per file either (no run to bound).
    for (const abi of [3, 5]) {
      const old = deploymentMatrix({ ...DOCKER, landlock: { abi } });
      expect(old.slice(0, 4).map((row) => row.mechanism)).toEqual(["none", "none", "none", "none"]);
      expect(old[0]!.detail).toMatch(new RegExp(`^Landlock ABI ${abi} is below the 6 a run needs; no sandbox`));
      expect(old[7]).toMatchObject({ guarantee: "/tmp", mechanism: "none" });
    }
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
        const [fileSystem, , , , memory, processes, cpu, tmp] = matrix;
        // The mechanism a run gets: bubblewrap where it starts, else Landlock at the helper's floor (ABI 6), else none.
        expect(fileSystem!.mechanism).toBe(
          facts.bubblewrap.starts ? "bubblewrap" : facts.landlock.abi !== null && facts.landlock.abi >= 6 ? "landlock" : "none",
        );
        // The resource rows say what the limit plan enforces with (limits.ts): one source of truth.
        const plan: CgroupPlan =
          facts.cgroup.version === null
            ? { version: null, reason: facts.cgroup.reason }
            : facts.cgroup.version === "v2"
              ? { version: "v2", parent: "/cg", controllers: facts.cgroup.controllers as never, enable: [] }
              : { version: "v1", parents: Object.fromEntries(facts.cgroup.controllers.map((c) => [c, `/cg/${c}`])) };
        const confinement = facts.bubblewrap.starts
          ? "bubblewrap"
          : facts.landlock.abi !== null && facts.landlock.abi >= 6
            ? "landlock"
            : "none";
        const support = supportOn(confinement, plan, { rlimits: facts.rlimits, watchdog: facts.watchdog, root: facts.root });
        const named = (enforcer: string | null) => (enforcer === null ? "none" : enforcer.replace(/^cgroup-/, "cgroup "));
        expect([memory!.mechanism, processes!.mechanism, cpu!.mechanism]).toEqual([
          named(support.limits.memoryBytes.enforcedBy),
          named(support.limits.processes.enforcedBy),
          named(support.limits.cpuTimeMs.enforcedBy),
        ]);
        expect(tmp!.mechanism).toBe(named(support.limits.tmpBytes.enforcedBy).replace(/^bubblewrap$/, "bubblewrap tmpfs"));
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

/* eslint-disable max-len -- the inline snapshots pin the matrix's lines word for word, as a person reads and copies them */
describe("the matrix, word for word, per environment (what a person reads and copies)", () => {
  const text = (facts: DeploymentFacts) =>
    deploymentMatrix(facts).map((row) => [row.guarantee, row.mechanism, row.ok, row.detail, row.fix ?? null]);
  const landlock = { ...DOCKER, landlock: { abi: 7 } };
  const user = { ...DOCKER, environment: "host" as const, bubblewrap: { installed: true, starts: true }, seccomp: false };

  it("Docker, no Landlock helper", () => {
    expect(text(DOCKER)).toMatchInlineSnapshot(`
      [
        [
          "file system",
          "none",
          false,
          "no sandbox: bubblewrap does not start (bwrap: No permissions to create new namespace); Landlock: unknown",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
        [
          "network",
          "none",
          false,
          "no sandbox: bubblewrap does not start (bwrap: No permissions to create new namespace); Landlock: unknown",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
        [
          "host sockets",
          "none",
          false,
          "no sandbox: bubblewrap does not start (bwrap: No permissions to create new namespace); Landlock: unknown",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
        [
          "signals and /proc",
          "none",
          false,
          "no sandbox: bubblewrap does not start (bwrap: No permissions to create new namespace); Landlock: unknown",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
        [
          "memory",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "processes",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "CPU",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "/tmp",
          "none",
          false,
          "no sandbox, so no private /tmp: bubblewrap does not start (bwrap: No permissions to create new namespace); Landlock: unknown",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
        [
          "sessions",
          "none",
          false,
          "createSession is refused: sessions run under bubblewrap, which does not start here",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
      ]
    `);
  });

  it("Docker with Landlock ABI 7", () => {
    expect(text(landlock)).toMatchInlineSnapshot(`
      [
        [
          "file system",
          "landlock",
          true,
          "reads and writes only where the policy says (Landlock ABI 7)",
          null,
        ],
        [
          "network",
          "landlock",
          true,
          "TCP bind and connect refused unless granted; other socket families refused by seccomp",
          null,
        ],
        [
          "host sockets",
          "landlock",
          true,
          "abstract unix sockets scoped; socket(AF_UNIX) refused by seccomp (Landlock does not mediate pathname connect)",
          null,
        ],
        [
          "signals and /proc",
          "landlock",
          false,
          "signals to processes outside the run refused; /proc still lists them (no PID namespace)",
          "a PID namespace needs user namespaces, which the container's seccomp profile refuses; keep the profile (this is the one gap)",
        ],
        [
          "memory",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "processes",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "CPU",
          "rlimit+watchdog",
          false,
          "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
          "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it (moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)",
        ],
        [
          "/tmp",
          "rlimit",
          false,
          "no private /tmp without a mount namespace: RLIMIT_FSIZE bounds each file, not the total",
          "bound the container's own /tmp: docker run --tmpfs /tmp:rw,size=256m (podman run the same)",
        ],
        [
          "sessions",
          "none",
          false,
          "createSession is refused: sessions run under bubblewrap, which does not start here",
          "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
        ],
      ]
    `);
  });

  it("Podman, Kubernetes and another container, Landlock ABI 6, rlimits only", () => {
    const base = { ...landlock, landlock: { abi: 6 }, watchdog: false };
    expect([
      text({ ...base, environment: "podman" }),
      text({ ...base, environment: "kubernetes" }),
      text({ ...base, environment: "container" }),
    ]).toMatchInlineSnapshot(`
      [
        [
          [
            "file system",
            "landlock",
            true,
            "reads and writes only where the policy says (Landlock ABI 6)",
            null,
          ],
          [
            "network",
            "landlock",
            true,
            "TCP bind and connect refused unless granted; other socket families refused by seccomp",
            null,
          ],
          [
            "host sockets",
            "landlock",
            true,
            "abstract unix sockets scoped; socket(AF_UNIX) refused by seccomp (Landlock does not mediate pathname connect)",
            null,
          ],
          [
            "signals and /proc",
            "landlock",
            false,
            "signals to processes outside the run refused; /proc still lists them (no PID namespace)",
            "a PID namespace needs user namespaces, which the container's seccomp profile refuses; keep the profile (this is the one gap)",
          ],
          [
            "memory",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "podman run --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2: the container's own cgroup, delegated)",
          ],
          [
            "processes",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
            "podman run --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2: the container's own cgroup, delegated)",
          ],
          [
            "CPU",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
            "podman run --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2: the container's own cgroup, delegated)",
          ],
          [
            "/tmp",
            "rlimit",
            false,
            "no private /tmp without a mount namespace: RLIMIT_FSIZE bounds each file, not the total",
            "bound the container's own /tmp: docker run --tmpfs /tmp:rw,size=256m (podman run the same)",
          ],
          [
            "sessions",
            "none",
            false,
            "createSession is refused: sessions run under bubblewrap, which does not start here",
            "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; Docker's and Podman's default seccomp profiles allow it, so keep them: do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces",
          ],
        ],
        [
          [
            "file system",
            "landlock",
            true,
            "reads and writes only where the policy says (Landlock ABI 6)",
            null,
          ],
          [
            "network",
            "landlock",
            true,
            "TCP bind and connect refused unless granted; other socket families refused by seccomp",
            null,
          ],
          [
            "host sockets",
            "landlock",
            true,
            "abstract unix sockets scoped; socket(AF_UNIX) refused by seccomp (Landlock does not mediate pathname connect)",
            null,
          ],
          [
            "signals and /proc",
            "landlock",
            false,
            "signals to processes outside the run refused; /proc still lists them (no PID namespace)",
            "a PID namespace needs user namespaces, which the container's seccomp profile refuses; keep the profile (this is the one gap)",
          ],
          [
            "memory",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "the pod's cgroup is not delegated to it; bound the container itself: resources: { limits: { memory: 2Gi, cpu: 2 } } (and the kubelet's podPidsLimit)",
          ],
          [
            "processes",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
            "the pod's cgroup is not delegated to it; bound the container itself: resources: { limits: { memory: 2Gi, cpu: 2 } } (and the kubelet's podPidsLimit)",
          ],
          [
            "CPU",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
            "the pod's cgroup is not delegated to it; bound the container itself: resources: { limits: { memory: 2Gi, cpu: 2 } } (and the kubelet's podPidsLimit)",
          ],
          [
            "/tmp",
            "rlimit",
            false,
            "no private /tmp without a mount namespace: RLIMIT_FSIZE bounds each file, not the total",
            "bound the pod's /tmp: an emptyDir { medium: Memory, sizeLimit: 256Mi } volume mounted at /tmp",
          ],
          [
            "sessions",
            "none",
            false,
            "createSession is refused: sessions run under bubblewrap, which does not start here",
            "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; it works under securityContext: { seccompProfile: { type: RuntimeDefault }, allowPrivilegeEscalation: false, runAsNonRoot: true } (keep them: no Unconfined profile, no privileged: true)",
          ],
        ],
        [
          [
            "file system",
            "landlock",
            true,
            "reads and writes only where the policy says (Landlock ABI 6)",
            null,
          ],
          [
            "network",
            "landlock",
            true,
            "TCP bind and connect refused unless granted; other socket families refused by seccomp",
            null,
          ],
          [
            "host sockets",
            "landlock",
            true,
            "abstract unix sockets scoped; socket(AF_UNIX) refused by seccomp (Landlock does not mediate pathname connect)",
            null,
          ],
          [
            "signals and /proc",
            "landlock",
            false,
            "signals to processes outside the run refused; /proc still lists them (no PID namespace)",
            "a PID namespace needs user namespaces, which the container's seccomp profile refuses; keep the profile (this is the one gap)",
          ],
          [
            "memory",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "bound the container itself with its runtime's memory, pids and CPU limits",
          ],
          [
            "processes",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
            "bound the container itself with its runtime's memory, pids and CPU limits",
          ],
          [
            "CPU",
            "rlimit",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
            "bound the container itself with its runtime's memory, pids and CPU limits",
          ],
          [
            "/tmp",
            "rlimit",
            false,
            "no private /tmp without a mount namespace: RLIMIT_FSIZE bounds each file, not the total",
            "bound the container's own /tmp with a sized tmpfs",
          ],
          [
            "sessions",
            "none",
            false,
            "createSession is refused: sessions run under bubblewrap, which does not start here",
            "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper; keep the container's seccomp profile",
          ],
        ],
      ]
    `);
  });

  it("a non-root host: delegated scope, no systemd, cgroup v1 only; a root host without cgroups; bubblewrap missing or refused", () => {
    expect([
      text(user),
      text({ ...user, systemdRun: false }).slice(4, 5),
      text({ ...user, root: true, capSysAdmin: false, cgroup: { version: null, reason: "read-only", v2Mounted: true } }),
      text({ ...user, bubblewrap: { installed: false, starts: false } }).slice(0, 1),
      text({
        ...user,
        bubblewrap: { installed: true, starts: false },
        userns: { problem: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000" },
      }).slice(0, 1),
      text({ ...user, bubblewrap: { installed: true, starts: false } }).slice(0, 1),
      text({ ...user, rlimits: false, watchdog: false }).slice(4, 7),
      text({ ...user, cgroup: { version: "v2", controllers: ["memory", "pids", "cpu"] } }).slice(4, 7),
    ]).toMatchInlineSnapshot(`
      [
        [
          [
            "file system",
            "bubblewrap",
            true,
            "only the runtime, the body and its directory are visible; secrets masked",
            null,
          ],
          [
            "network",
            "bubblewrap",
            true,
            "a network namespace of its own: no network unless granted",
            null,
          ],
          [
            "host sockets",
            "bubblewrap",
            true,
            "no host unix socket is visible or reachable (mount and network namespaces)",
            null,
          ],
          [
            "signals and /proc",
            "bubblewrap",
            true,
            "a PID namespace: no other process can be seen in /proc or signalled",
            null,
          ],
          [
            "memory",
            "rlimit+watchdog",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
          [
            "processes",
            "rlimit+watchdog",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop; not exact per tree",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
          [
            "CPU",
            "rlimit+watchdog",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
          [
            "/tmp",
            "bubblewrap tmpfs",
            true,
            "a private tmpfs of limits.tmpBytes",
            null,
          ],
          [
            "sessions",
            "none",
            false,
            "createSession is refused: mounting the workspace's tmpfs needs CAP_SYS_ADMIN",
            "run the host as root (it mounts each session's bounded tmpfs)",
          ],
        ],
        [
          [
            "memory",
            "rlimit+watchdog",
            false,
            "no cgroup (the host may not write its cgroup v2 /sys/fs/cgroup): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "give the host a delegated cgroup v2 subtree (systemd's Delegate=yes, or chown of a cgroup directory and its files)",
          ],
        ],
        [
          [
            "file system",
            "bubblewrap",
            true,
            "only the runtime, the body and its directory are visible; secrets masked",
            null,
          ],
          [
            "network",
            "bubblewrap",
            true,
            "a network namespace of its own: no network unless granted",
            null,
          ],
          [
            "host sockets",
            "bubblewrap",
            true,
            "no host unix socket is visible or reachable (mount and network namespaces)",
            null,
          ],
          [
            "signals and /proc",
            "bubblewrap",
            true,
            "a PID namespace: no other process can be seen in /proc or signalled",
            null,
          ],
          [
            "memory",
            "rlimit+watchdog",
            false,
            "no cgroup (read-only): RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms; not exact per tree",
            "mount the cgroup v1 memory, pids and cpuacct hierarchies writable, or boot with cgroup v2",
          ],
          [
            "processes",
            "watchdog",
            false,
            "no cgroup (read-only): the tree's threads sampled every 100 ms (root is exempt from RLIMIT_NPROC); not exact per tree",
            "mount the cgroup v1 memory, pids and cpuacct hierarchies writable, or boot with cgroup v2",
          ],
          [
            "CPU",
            "rlimit+watchdog",
            false,
            "no cgroup (read-only): RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms; not exact per tree",
            "mount the cgroup v1 memory, pids and cpuacct hierarchies writable, or boot with cgroup v2",
          ],
          [
            "/tmp",
            "bubblewrap tmpfs",
            true,
            "a private tmpfs of limits.tmpBytes",
            null,
          ],
          [
            "sessions",
            "none",
            false,
            "createSession is refused: mounting the workspace's tmpfs needs CAP_SYS_ADMIN",
            "run the host as root (it mounts each session's bounded tmpfs)",
          ],
        ],
        [
          [
            "file system",
            "none",
            false,
            "no sandbox: bubblewrap is not installed; Landlock: unknown",
            "apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora, RHEL)",
          ],
        ],
        [
          [
            "file system",
            "none",
            false,
            "no sandbox: bubblewrap does not start (user.max_user_namespaces is 0); Landlock: unknown",
            "sysctl -w user.max_user_namespaces=15000",
          ],
        ],
        [
          [
            "file system",
            "none",
            false,
            "no sandbox: bubblewrap does not start (unknown reason); Landlock: unknown",
            "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): use an ears build with the Landlock helper, or let this user create user namespaces for bubblewrap",
          ],
        ],
        [
          [
            "memory",
            "none",
            false,
            "not enforced: the host may not write its cgroup v2 /sys/fs/cgroup",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
          [
            "processes",
            "none",
            false,
            "not enforced: the host may not write its cgroup v2 /sys/fs/cgroup",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
          [
            "CPU",
            "none",
            false,
            "not enforced: the host may not write its cgroup v2 /sys/fs/cgroup",
            "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> (or Delegate=yes in its systemd service)",
          ],
        ],
        [
          [
            "memory",
            "cgroup v2",
            true,
            "the run's own cgroup (memory)",
            null,
          ],
          [
            "processes",
            "cgroup v2",
            true,
            "the run's own cgroup (pids)",
            null,
          ],
          [
            "CPU",
            "cgroup v2",
            true,
            "the run's own cgroup (cpu)",
            null,
          ],
        ],
      ]
    `);
  });
});

/* eslint-enable max-len */

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
