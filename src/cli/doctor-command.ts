/** `ears doctor [--json]`: what confinement a run gets on this machine, why, and how to fix what is missing. */
import {
  deploymentFacts,
  diagnoseSandbox,
  thisMachine,
  type Check,
  type DeploymentLook,
  type MachineView,
} from "../host/sandbox/doctor.js";
import { deploymentMatrix, runLimits, type Environment, type MatrixRow } from "../host/sandbox/deployment.js";
import type { LimitSupport } from "../host/limits/limits.js";
import { DOCTOR_HELP } from "./help.js";
import { ExitStatus } from "./report-output.js";
import { subcommand, UsageError, type Subcommand } from "./usage.js";

const DOCTOR_OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Exit status when runs here would not be confined. */
export const NOT_CONFINED = 1;

/** The findings as text: one line each, `ok` or `no`, with the fix under what is missing; then the verdict. */
export function doctorText(confined: boolean, checks: readonly Check[]): string {
  const width = Math.max(...checks.map((check) => check.name.length));
  const lines = checks.flatMap((check) => [
    `${check.ok ? "ok" : "no"}  ${check.name.padEnd(width)}  ${check.detail}`,
    ...(check.fix === undefined || check.ok ? [] : [`    ${"".padEnd(width)}  fix: ${check.fix}`]),
  ]);
  const verdict = confined
    ? 'Runs here are confined (sandbox: "auto" and true start guests under bubblewrap).'
    : 'Runs here are NOT confined by bubblewrap: sandbox "auto" and true go on under Landlock where the kernel offers it ' +
      "(Linux 6.12+), else fail with SandboxUnavailable; only sandbox: false runs unconfined.";
  return `${lines.join("\n")}\n\n${verdict}\n`;
}

/** What each resource limit is called in the doctor's list. */
const LIMIT_NAMES: Record<keyof LimitSupport["limits"], string> = {
  memoryBytes: "memory (--memory)",
  processes: "processes (--processes)",
  cpuTimeMs: "CPU time (--cpu-time)",
  tmpBytes: "/tmp size (--tmp-size)",
};

/**
 * The resource limits as text: `ok` with what enforces each, or `no` with why and the fix (an rlimit is
 * `ok` with the fix that would make it per tree). See docs/host.md "Resource limits".
 */
export function limitsText(support: LimitSupport): string {
  const width = Math.max(...Object.values(LIMIT_NAMES).map((name) => name.length));
  const lines = (Object.keys(LIMIT_NAMES) as (keyof LimitSupport["limits"])[]).flatMap((name) => {
    const { enforcedBy, note, fix } = support.limits[name];
    const detail = enforcedBy === null ? (note ?? "not enforced") : note === undefined ? enforcedBy : `${enforcedBy} (${note})`;
    return [
      `${enforcedBy === null ? "no" : "ok"}  ${LIMIT_NAMES[name].padEnd(width)}  ${detail}`,
      ...(fix === undefined ? [] : [`    ${"".padEnd(width)}  fix: ${fix}`]),
    ];
  });
  const cgroup = support.cgroup.version === null ? `no cgroup: ${support.cgroup.reason}` : `cgroup ${support.cgroup.version}`;
  return `Resource limits (${cgroup}):\n${lines.join("\n")}\n`;
}

/** Where the host runs, as the matrix's heading says it. */
const ENVIRONMENT_NAMES: Record<Environment, string> = {
  docker: "a Docker container",
  podman: "a Podman container",
  kubernetes: "a Kubernetes pod",
  container: "a container",
  host: "a host (no container detected)",
};

/**
 * The deployment matrix as text: per guarantee, `ok` or `no`, the mechanism and what it gives, with the fix
 * for this environment under each one that is not fully given.
 */
export function matrixText(environment: Environment, rows: readonly MatrixRow[]): string {
  const width = Math.max(...rows.map((row) => row.guarantee.length));
  const mechanismWidth = Math.max(...rows.map((row) => row.mechanism.length));
  const lines = rows.flatMap((row) => [
    `${row.ok ? "ok" : "no"}  ${row.guarantee.padEnd(width)}  ${row.mechanism.padEnd(mechanismWidth)}  ${row.detail}`,
    ...(row.fix === undefined ? [] : [`    ${"".padEnd(width)}  fix: ${row.fix}`]),
  ]);
  return `Deployment matrix, in ${ENVIRONMENT_NAMES[environment]}:\n${lines.join("\n")}\n`;
}

/**
 * Runs `ears doctor` (the words after "doctor"); resolves with 0 when runs are confined, else 1. `--json`
 * writes one object: the checks, the limits' support and the deployment matrix with its environment.
 */
export function doctorCommand(machine?: MachineView, look?: DeploymentLook): Subcommand {
  return subcommand("doctor", DOCTOR_OPTIONS, DOCTOR_HELP, async ({ values, positionals, sawSeparator }, io) => {
    if (positionals.length > 0 || sawSeparator) throw new UsageError("ears doctor takes no arguments (see ears doctor --help)");
    const view = machine ?? thisMachine();
    const { confined, checks } = await diagnoseSandbox(view);
    const facts = deploymentFacts(view, checks, look);
    // The limits of this machine's runs, planned as a run plans them: its mechanism (bubblewrap, else Landlock), its cgroup, its tools.
    const limits = runLimits(facts);
    const matrix = deploymentMatrix(facts);
    // The sandbox's own failure gets the fix for this environment (a container's differs from a host's).
    const fileSystem = matrix.find((row) => row.guarantee === "file system");
    const shown = checks.map((check) =>
      check.name === "sandbox starts" && !check.ok && facts.userns === undefined && fileSystem?.fix !== undefined
        ? { ...check, fix: fileSystem.fix }
        : check,
    );
    io.stdout.write(
      values.json
        ? `${JSON.stringify({ confined, checks: shown, limits, environment: facts.environment, matrix })}\n`
        : `${doctorText(confined, shown)}\n${matrixText(facts.environment, matrix)}\n${limitsText(limits)}`,
    );
    return confined ? ExitStatus.Success : NOT_CONFINED;
  });
}
