/**
 * `ears doctor`'s deployment matrix: for this host, each guarantee a run gets (file system, network, host
 * sockets, signals and /proc, memory, processes, CPU, /tmp, sessions), the mechanism that gives it, and
 * where one is missing the exact fix for the environment detected (a Docker or Podman container, a
 * Kubernetes pod, a non-root host, a plain root host). Pure: the facts come in as data ({@link DeploymentFacts},
 * gathered by `deploymentFacts` in doctor.ts), the matrix goes out, so every environment is tested without one.
 * What confines a run and what bounds it are decided as a run decides them: the mechanism as `planSandbox` picks it
 * (bubblewrap where it starts, else Landlock at the helper's ABI), the limits by `limitPlan` (limits.ts).
 */
import type { Controller } from "../limits/cgroup.js";
import { supportWith, type Confinement, type LimitSupport } from "../limits/limits.js";
import { LANDLOCK_ABI_MIN } from "./landlock.js";

/** Where the host runs, as far as the fixes differ. */
export type Environment = "docker" | "podman" | "kubernetes" | "container" | "host";

/** What the matrix is decided from. */
export interface DeploymentFacts {
  platform: NodeJS.Platform;
  /** Whether the host runs as uid 0, and whether it holds CAP_SYS_ADMIN (a sessions' tmpfs is mounted with it). */
  root: boolean;
  capSysAdmin: boolean;
  environment: Environment;
  /** bubblewrap: installed or not, and whether a throw-away sandbox started (else why not). */
  bubblewrap: { installed: boolean; starts: boolean; problem?: string };
  /** What blocks user namespaces here, with its own fix (a sysctl, AppArmor), when something does. */
  userns?: { problem: string; fix: string };
  /** The Landlock ABI the kernel offers through the helper (null: unknown or none, with why). */
  landlock: { abi: number } | { abi: null; reason: string };
  /** Whether the kernel has seccomp and the project has a filter for this architecture. */
  seccomp: boolean;
  /** The cgroup runs get, or why none; and whether cgroup v2 is mounted at all (delegation is then possible). */
  cgroup: { version: "v1" | "v2"; controllers: readonly Controller[] } | { version: null; reason: string; v2Mounted: boolean };
  /** The launcher's rlimits and the /proc watchdog (Linux with a shell). */
  rlimits: boolean;
  watchdog: boolean;
  /** Whether `systemd-run` is on this machine (delegation for a non-root host). */
  systemdRun: boolean;
}

/** What can give a guarantee. */
export type Mechanism =
  "bubblewrap" | "landlock" | "cgroup v1" | "cgroup v2" | "rlimit" | "watchdog" | "rlimit+watchdog" | "bubblewrap tmpfs" | "none";

/** One guarantee of the matrix. */
export interface MatrixRow {
  guarantee: "file system" | "network" | "host sockets" | "signals and /proc" | "memory" | "processes" | "CPU" | "/tmp" | "sessions";
  mechanism: Mechanism;
  /** Whether the guarantee holds here in full (a fallback that holds in part is not ok, and has a fix). */
  ok: boolean;
  /** What the mechanism gives, or why there is none. */
  detail: string;
  /** The exact change for this environment that gives it, when it is not ok. */
  fix?: string;
}

/**
 * How a default run is confined here, as `planSandbox` decides it: bubblewrap where it starts, else Landlock where the
 * helper's self-test passes (ABI {@link LANDLOCK_ABI_MIN} or later: the helper refuses less), else none (the run is
 * refused; only `sandbox: false` runs unconfined).
 */
export function runConfinement(facts: DeploymentFacts): Confinement {
  if (facts.platform !== "linux") return "none";
  if (facts.bubblewrap.starts) return "bubblewrap";
  return facts.landlock.abi !== null && facts.landlock.abi >= LANDLOCK_ABI_MIN ? "landlock" : "none";
}

/** What enforces each resource limit of a default run here: {@link supportWith}, the limit plan a run uses. */
export function runLimits(facts: DeploymentFacts): LimitSupport {
  return supportWith(runConfinement(facts), facts.cgroup, { rlimits: facts.rlimits, watchdog: facts.watchdog, root: facts.root });
}

/** The fix that gives a run a sandbox where it has none, for the environment. */
function sandboxFix(facts: DeploymentFacts): string {
  const landlock =
    "Landlock needs no privilege and no namespace (the kernel's, 6.12 or later with landlock in its LSM list): " +
    "use an ears build with the Landlock helper";
  switch (facts.environment) {
    case "docker":
    case "podman":
      return (
        `${landlock}; Docker's and Podman's default seccomp profiles allow it, so keep them: ` +
        "do not add --security-opt seccomp=unconfined or --privileged to let bubblewrap make user namespaces"
      );
    case "kubernetes":
      return (
        `${landlock}; it works under securityContext: { seccompProfile: { type: RuntimeDefault }, ` +
        "allowPrivilegeEscalation: false, runAsNonRoot: true } (keep them: no Unconfined profile, no privileged: true)"
      );
    case "container":
      return `${landlock}; keep the container's seccomp profile`;
    case "host":
      if (!facts.bubblewrap.installed) return "apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora, RHEL)";
      return facts.userns?.fix ?? `${landlock}, or let this user create user namespaces for bubblewrap`;
  }
}

/** Why a run has no sandbox here. */
function noSandboxWhy(facts: DeploymentFacts): string {
  const bwrap = !facts.bubblewrap.installed
    ? "bubblewrap is not installed"
    : `bubblewrap does not start (${facts.userns?.problem ?? facts.bubblewrap.problem ?? "unknown reason"})`;
  const landlock = facts.landlock.abi === null ? `Landlock: ${facts.landlock.reason}` : `Landlock ABI ${facts.landlock.abi}`;
  return `${bwrap}; ${landlock}`;
}

/** A confinement guarantee: bubblewrap where it starts, else Landlock where the helper and the ABI give it, else none. */
function confinementRow(guarantee: MatrixRow["guarantee"], facts: DeploymentFacts): MatrixRow {
  if (facts.bubblewrap.starts) {
    const detail =
      guarantee === "file system"
        ? "only the runtime, the body and its directory are visible; secrets masked"
        : guarantee === "network"
          ? "a network namespace of its own: no network unless granted"
          : guarantee === "host sockets"
            ? "no host unix socket is visible or reachable (mount and network namespaces)"
            : "a PID namespace: no other process can be seen in /proc or signalled";
    const seccomp = guarantee === "file system" && facts.seccomp ? "; the seccomp filter loaded" : "";
    return { guarantee, mechanism: "bubblewrap", ok: true, detail: `${detail}${seccomp}` };
  }
  const abi = facts.landlock.abi;
  if (runConfinement(facts) === "landlock") {
    const detail =
      guarantee === "file system"
        ? "reads and writes only where the policy says (Landlock ABI " + abi + ")"
        : guarantee === "network"
          ? "TCP bind and connect refused unless granted; other socket families refused by seccomp"
          : guarantee === "host sockets"
            ? "abstract unix sockets scoped; socket(AF_UNIX) refused by seccomp (Landlock does not mediate pathname connect)"
            : "signals to processes outside the run refused; /proc still lists them (no PID namespace)";
    return {
      guarantee,
      mechanism: "landlock",
      ok: guarantee !== "signals and /proc",
      detail,
      ...(guarantee === "signals and /proc" ? { fix: sandboxFixForProc(facts) } : {}),
    };
  }
  const partial = abi !== null ? `Landlock ABI ${abi} is below the ${LANDLOCK_ABI_MIN} a run needs; ` : "";
  return { guarantee, mechanism: "none", ok: false, detail: `${partial}no sandbox: ${noSandboxWhy(facts)}`, fix: sandboxFix(facts) };
}

/** What bounds /tmp as a whole where no mount namespace can give the run a private one. */
function tmpFix(facts: DeploymentFacts): string {
  switch (facts.environment) {
    case "docker":
    case "podman":
      return "bound the container's own /tmp: docker run --tmpfs /tmp:rw,size=256m (podman run the same)";
    case "kubernetes":
      return "bound the pod's /tmp: an emptyDir { medium: Memory, sizeLimit: 256Mi } volume mounted at /tmp";
    case "container":
      return "bound the container's own /tmp with a sized tmpfs";
    case "host":
      return "let bubblewrap start (a mount namespace gives each run a private /tmp of a size)";
  }
}

/** What hides /proc, which only a PID namespace does. */
function sandboxFixForProc(facts: DeploymentFacts): string {
  return facts.environment === "host"
    ? "let bubblewrap start (a PID namespace hides other processes)"
    : "a PID namespace needs user namespaces, which the container's seccomp profile refuses; keep the profile (this is the one gap)";
}

/** The fix that gives runs a cgroup of their own, for the environment. */
function cgroupFix(facts: DeploymentFacts): string {
  switch (facts.environment) {
    case "docker":
      return (
        "Docker mounts /sys/fs/cgroup read-only in an ordinary container and has no flag to delegate it " +
        "(moby/moby#46763); bound the container itself (docker run --memory 2g --pids-limit 512 --cpus 2), " +
        "or run the host under Podman with --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2)"
      );
    case "podman":
      return "podman run --cgroupns=private --security-opt unmask=/sys/fs/cgroup (cgroup v2: the container's own cgroup, delegated)";
    case "kubernetes":
      return (
        "the pod's cgroup is not delegated to it; bound the container itself: resources: { limits: { memory: 2Gi, cpu: 2 } } " +
        "(and the kubelet's podPidsLimit)"
      );
    case "container":
      return "bound the container itself with its runtime's memory, pids and CPU limits";
    case "host":
      if (facts.root) return "mount the cgroup v1 memory, pids and cpuacct hierarchies writable, or boot with cgroup v2";
      if (facts.cgroup.version === null && !facts.cgroup.v2Mounted) {
        return "cgroup v1 is not delegated to users: run the host as root, or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)";
      }
      return facts.systemdRun
        ? "start the host in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes -- <host command> " +
            "(or Delegate=yes in its systemd service)"
        : "give the host a delegated cgroup v2 subtree (systemd's Delegate=yes, or chown of a cgroup directory and its files)";
  }
}

/** A resource guarantee as the limit plan enforces it: the run's cgroup, else the launcher's rlimits and the watchdog, else none. */
function resourceRow(guarantee: "memory" | "processes" | "CPU", facts: DeploymentFacts, support: LimitSupport): MatrixRow {
  const controller = guarantee === "memory" ? "memory" : guarantee === "processes" ? "pids" : "cpu";
  const { enforcedBy } = support.limits[guarantee === "memory" ? "memoryBytes" : guarantee === "processes" ? "processes" : "cpuTimeMs"];
  if (enforcedBy === "cgroup-v1" || enforcedBy === "cgroup-v2") {
    return {
      guarantee,
      mechanism: enforcedBy === "cgroup-v1" ? "cgroup v1" : "cgroup v2",
      ok: true,
      detail: `the run's own cgroup (${controller})`,
    };
  }
  const { cgroup } = facts;
  const mechanism: Mechanism =
    enforcedBy === "rlimit" || enforcedBy === "watchdog" || enforcedBy === "rlimit+watchdog" ? enforcedBy : "none";
  const why = cgroup.version === null ? cgroup.reason : `the host's cgroup has no ${controller} controller`;
  if (mechanism === "none") return { guarantee, mechanism, ok: false, detail: `not enforced: ${why}`, fix: cgroupFix(facts) };
  const what =
    guarantee === "memory"
      ? "RLIMIT_DATA per process and the tree's resident memory sampled every 100 ms"
      : guarantee === "processes"
        ? facts.root
          ? "the tree's threads sampled every 100 ms (root is exempt from RLIMIT_NPROC)"
          : "the tree's threads sampled every 100 ms, RLIMIT_NPROC (per user) as a backstop"
        : "RLIMIT_CPU per process and the tree's CPU time sampled every 100 ms";
  return { guarantee, mechanism, ok: false, detail: `no cgroup (${why}): ${what}; not exact per tree`, fix: cgroupFix(facts) };
}

/** /tmp, as the limit plan bounds it: bubblewrap's sized tmpfs; under Landlock RLIMIT_FSIZE per file; else none. */
function tmpRow(facts: DeploymentFacts, support: LimitSupport): MatrixRow {
  const guarantee = "/tmp";
  const { enforcedBy } = support.limits.tmpBytes;
  if (enforcedBy === "bubblewrap")
    return { guarantee, mechanism: "bubblewrap tmpfs", ok: true, detail: "a private tmpfs of limits.tmpBytes" };
  if (enforcedBy === "rlimit") {
    return {
      guarantee,
      mechanism: "rlimit",
      ok: false,
      detail: "no private /tmp without a mount namespace: RLIMIT_FSIZE bounds each file, not the total",
      fix: tmpFix(facts),
    };
  }
  return {
    guarantee,
    mechanism: "none",
    ok: false,
    detail: `no sandbox, so no private /tmp: ${noSandboxWhy(facts)}`,
    fix: sandboxFix(facts),
  };
}

/** Sessions: a bounded tmpfs workspace mounted by the host (CAP_SYS_ADMIN) and used inside bubblewrap. */
function sessionsRow(facts: DeploymentFacts): MatrixRow {
  const guarantee = "sessions";
  if (facts.bubblewrap.starts && facts.capSysAdmin) {
    return {
      guarantee,
      mechanism: "bubblewrap tmpfs",
      ok: true,
      detail: "a bounded tmpfs workspace, mounted by the host, inside bubblewrap",
    };
  }
  const why = !facts.bubblewrap.starts
    ? "sessions run under bubblewrap, which does not start here"
    : "mounting the workspace's tmpfs needs CAP_SYS_ADMIN";
  const fix = !facts.bubblewrap.starts
    ? sandboxFix(facts)
    : facts.environment === "host"
      ? "run the host as root (it mounts each session's bounded tmpfs)"
      : "sessions need a host that may mount (root with CAP_SYS_ADMIN): run them on a host outside the container, " +
        "not by giving the container CAP_SYS_ADMIN";
  return { guarantee, mechanism: "none", ok: false, detail: `createSession is refused: ${why}`, fix };
}

/** The deployment matrix for a host described by `facts`, in the order a person reads it. */
export function deploymentMatrix(facts: DeploymentFacts): MatrixRow[] {
  if (facts.platform !== "linux") {
    const guarantees: MatrixRow["guarantee"][] = [
      "file system",
      "network",
      "host sockets",
      "signals and /proc",
      "memory",
      "processes",
      "CPU",
      "/tmp",
      "sessions",
    ];
    return guarantees.map((guarantee) => ({
      guarantee,
      mechanism: "none",
      ok: false,
      detail: `${facts.platform}: ears confines and bounds runs on Linux only`,
      fix: "run guests on Linux (a VM or a container), or accept unconfined runs (sandbox: false)",
    }));
  }
  const support = runLimits(facts);
  return [
    confinementRow("file system", facts),
    confinementRow("network", facts),
    confinementRow("host sockets", facts),
    confinementRow("signals and /proc", facts),
    resourceRow("memory", facts, support),
    resourceRow("processes", facts, support),
    resourceRow("CPU", facts, support),
    tmpRow(facts, support),
    sessionsRow(facts),
  ];
}

/**
 * The environment a host runs in, from what a container leaves behind: Kubernetes' service variable, Podman's
 * /run/.containerenv, Docker's /.dockerenv, or a container runtime's name in /proc/1/cgroup.
 */
export function environmentOf(signs: { kubernetes: boolean; containerenv: boolean; dockerenv: boolean; initCgroup: string }): Environment {
  if (signs.kubernetes) return "kubernetes";
  if (signs.containerenv) return "podman";
  if (signs.dockerenv) return "docker";
  if (/\b(docker|containerd|kubepods|libpod|lxc|crio)\b/.test(signs.initCgroup))
    return /kubepods|crio/.test(signs.initCgroup) ? "kubernetes" : "container";
  return "host";
}
