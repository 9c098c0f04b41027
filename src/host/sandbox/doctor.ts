/**
 * `ears doctor`'s findings about the sandbox: for this machine, what confinement a run gets and why,
 * and for each missing piece the one line that fixes it. The checks read the machine through a small
 * {@link MachineView} so each verdict (and each fix) is tested in-process.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { hostCgroupPlan, type CgroupPlan, type Controller } from "../limits/cgroup.js";
import { hostTools, type HostTools } from "../limits/limits.js";
import { environmentOf, type DeploymentFacts } from "./deployment.js";
import { landlockAbi, type LandlockProbe } from "./landlock-probe.js";
import { standardBinDirs } from "./bubblewrap.js";
import { locateSandbox, sandboxStartProblem } from "./index.js";
import { seccompArch } from "./seccomp.js";

/** One finding. */
export interface Check {
  /** What was checked, e.g. "bubblewrap". */
  name: string;
  ok: boolean;
  /** What was found (a version, a path, a value). */
  detail: string;
  /** The one line that fixes it, when it is not ok. */
  fix?: string;
}

/** What the checks read of the machine. */
export interface MachineView {
  platform: NodeJS.Platform;
  arch: string;
  /** Whether this process runs as root. */
  root: boolean;
  /** The bwrap a run would use (on PATH or in /usr/local/bin, /usr/bin, /bin), or undefined. */
  bwrap: string | undefined;
  /** When there is none to use: why the one installed cannot be used (it is not executable), or undefined (none installed). */
  bwrapUnusable?: string;
  /** `bwrap --version`'s output, or undefined. */
  bwrapVersion(bwrap: string): string | undefined;
  /** Why a throw-away sandbox does not start, or undefined when it does. */
  startProblem(bwrap: string): Promise<string | undefined>;
  /** A small /proc file's text, trimmed, or undefined. */
  proc(path: string): string | undefined;
}

/** This machine; `found` is where its bwrap is (tests give it as data: the real lookup is tested in plan.test.ts). */
export function thisMachine(found: ReturnType<typeof locateSandbox> = locateSandbox()): MachineView {
  return {
    platform: process.platform,
    arch: process.arch,
    root: process.getuid?.() === 0,
    bwrap: "bwrap" in found ? found.bwrap : undefined,
    bwrapUnusable: "unusable" in found ? found.unusable : undefined,
    bwrapVersion(bwrap) {
      try {
        return execFileSync(bwrap, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 5000 }).trim();
      } catch {
        return undefined;
      }
    },
    startProblem: (bwrap) => sandboxStartProblem(bwrap),
    proc(path) {
      try {
        return readFileSync(path, "utf8").trim();
      } catch {
        return undefined;
      }
    },
  };
}

/** The sandbox's findings, in the order a person reads them; `confined` when runs are confined. */
export async function diagnoseSandbox(machine: MachineView = thisMachine()): Promise<{ confined: boolean; checks: Check[] }> {
  const checks: Check[] = [];
  if (machine.platform !== "linux") {
    checks.push({
      name: "platform",
      ok: false,
      detail: `${machine.platform}: no OS sandbox is supported here yet (only Linux, with bubblewrap)`,
      fix: "run guests on Linux, or accept unconfined runs (sandbox: false / --no-sandbox)",
    });
    return { confined: false, checks };
  }
  checks.push({ name: "platform", ok: true, detail: `linux ${machine.arch}` });
  if (machine.bwrap === undefined && machine.bwrapUnusable !== undefined) {
    checks.push({
      name: "bubblewrap",
      ok: false,
      detail: `${machine.bwrapUnusable} (every run is refused until it is fixed)`,
      fix: "apt-get install --reinstall bubblewrap (Debian, Ubuntu) or dnf reinstall bubblewrap (Fedora, RHEL)",
    });
  } else if (machine.bwrap === undefined) {
    checks.push({
      name: "bubblewrap",
      ok: false,
      detail: `not installed (no bwrap on PATH, nor in ${standardBinDirs().join(", ")})`,
      fix: "apt-get install bubblewrap (Debian, Ubuntu) or dnf install bubblewrap (Fedora, RHEL)",
    });
  } else {
    checks.push({ name: "bubblewrap", ok: true, detail: `${machine.bwrap} (${machine.bwrapVersion(machine.bwrap) ?? "version unknown"})` });
  }
  const userns = userNamespaces(machine);
  checks.push(userns);
  let starts = false;
  if (machine.bwrap !== undefined) {
    const problem = await machine.startProblem(machine.bwrap);
    starts = problem === undefined;
    checks.push(
      starts
        ? { name: "sandbox starts", ok: true, detail: "a throw-away sandbox with every namespace started" }
        : {
            name: "sandbox starts",
            ok: false,
            detail: problem!,
            fix:
              userns.fix ??
              "bubblewrap could not make its namespaces here (the detail says which call failed): let this user create " +
                "user namespaces, or confine with Landlock, which needs none (the deployment matrix gives the fix for this environment)",
          },
    );
  }
  const arch = seccompArch(machine.arch);
  // No status to read is no evidence of seccomp (`undefined?.match()` is not null).
  const seccompKernel = /^Seccomp:\s*\d+/m.test(machine.proc("/proc/self/status") ?? "");
  checks.push(
    arch !== undefined && seccompKernel
      ? {
          name: "seccomp",
          ok: true,
          detail: `filter for ${arch}: setuid/setgid bits, user namespaces, socket families and kernel-facing calls refused`,
        }
      : {
          name: "seccomp",
          ok: false,
          detail: arch === undefined ? `no filter for ${machine.arch} (only x64 and arm64)` : "the kernel has no seccomp",
          fix:
            arch === undefined
              ? "runs are confined without the filter; use an x64 or arm64 machine for it"
              : "use a kernel built with CONFIG_SECCOMP_FILTER",
        },
  );
  checks.push(
    machine.root
      ? { name: "host user", ok: true, detail: "root: the guest is uid 0 without capabilities (docs/host.md: what a root host implies)" }
      : { name: "host user", ok: true, detail: "not root: the guest has this user's rights on what it is shown, no more" },
  );
  return { confined: starts, checks };
}

/** Whether this user may create the user namespace bubblewrap needs, and the fix when not. */
function userNamespaces(machine: MachineView): Check {
  const max = machine.proc("/proc/sys/user/max_user_namespaces");
  if (max === "0") {
    return { name: "user namespaces", ok: false, detail: "user.max_user_namespaces is 0", fix: "sysctl -w user.max_user_namespaces=15000" };
  }
  if (machine.root) return { name: "user namespaces", ok: true, detail: "root: bubblewrap needs none of its own" };
  if (machine.proc("/proc/sys/kernel/unprivileged_userns_clone") === "0") {
    return {
      name: "user namespaces",
      ok: false,
      detail: "kernel.unprivileged_userns_clone is 0",
      fix: "sysctl -w kernel.unprivileged_userns_clone=1",
    };
  }
  if (machine.proc("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") === "1") {
    return {
      name: "user namespaces",
      ok: false,
      detail: "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04 and later)",
      fix:
        "give bwrap an AppArmor profile that allows userns (e.g. /etc/apparmor.d/bwrap), " +
        "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
    };
  }
  return { name: "user namespaces", ok: true, detail: `allowed (max ${max ?? "unknown"})` };
}

/** What the deployment matrix reads of the machine besides the sandbox's checks (the real machine by default; data in tests). */
export interface DeploymentLook {
  /** Whether a file exists (/.dockerenv, /run/.containerenv, systemd-run). */
  exists(path: string): boolean;
  /** The host's environment (KUBERNETES_SERVICE_HOST). */
  env: Readonly<Record<string, string | undefined>>;
  cgroupPlan(): CgroupPlan;
  tools(): HostTools;
  landlock(): LandlockProbe;
}

/** This machine. */
export function thisDeployment(): DeploymentLook {
  return { exists: existsSync, env: process.env, cgroupPlan: hostCgroupPlan, tools: hostTools, landlock: landlockAbi };
}

/** CAP_SYS_ADMIN's bit in /proc/self/status's CapEff. */
const CAP_SYS_ADMIN = 21n;

/** The facts of the deployment matrix, from the sandbox's checks, the machine view and the look. */
export function deploymentFacts(machine: MachineView, checks: readonly Check[], look: DeploymentLook = thisDeployment()): DeploymentFacts {
  const check = (name: string) => checks.find((found) => found.name === name);
  const starts = check("sandbox starts");
  const userns = check("user namespaces");
  const status = machine.proc("/proc/self/status") ?? "";
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  const plan = look.cgroupPlan();
  const tools = look.tools();
  const landlock = look.landlock();
  const facts: DeploymentFacts = {
    platform: machine.platform,
    root: machine.root,
    capSysAdmin: capEff !== undefined && ((BigInt(`0x${capEff}`) >> CAP_SYS_ADMIN) & 1n) === 1n,
    environment: environmentOf({
      kubernetes: look.env.KUBERNETES_SERVICE_HOST !== undefined,
      containerenv: look.exists("/run/.containerenv"),
      dockerenv: look.exists("/.dockerenv"),
      initCgroup: machine.proc("/proc/1/cgroup") ?? "",
    }),
    bubblewrap: {
      installed: machine.bwrap !== undefined,
      starts: starts?.ok === true,
      ...(starts !== undefined && !starts.ok ? { problem: starts.detail } : {}),
    },
    landlock: landlock.abi === null ? { abi: null, reason: landlock.reason } : { abi: landlock.abi },
    seccomp: check("seccomp")?.ok === true,
    cgroup:
      plan.version === null
        ? { version: null, reason: plan.reason, v2Mounted: / - cgroup2 /.test(machine.proc("/proc/self/mountinfo") ?? "") }
        : { version: plan.version, controllers: plan.version === "v2" ? plan.controllers : (Object.keys(plan.parents) as Controller[]) },
    rlimits: tools.rlimits,
    watchdog: tools.watchdog,
    systemdRun: ["/usr/bin/systemd-run", "/bin/systemd-run"].some((path) => look.exists(path)),
  };
  if (userns !== undefined && !userns.ok && userns.fix !== undefined) facts.userns = { problem: userns.detail, fix: userns.fix };
  return facts;
}
