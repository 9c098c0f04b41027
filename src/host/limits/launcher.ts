/**
 * The launcher: the one small shell every guest starts through when there is something to do before the
 * guest's first instruction. It joins the run's cgroups with its own pid (so everything it execs and forks
 * is inside from the start, with no race), closes the descriptors the host inherited without
 * close-on-exec ("only 0, 1, 2"), applies rlimits (CPU, data, processes, file size), then execs the guest (or bubblewrap). Built
 * by a pure function from data; the one impure piece, finding the leaked descriptors, is separate.
 */
import { accessSync, constants, readdirSync, readFileSync, statSync } from "node:fs";

/** The launcher's exit status when it could not prepare the run; the guest never ran. */
export const LAUNCHER_FAILED = 125;
/** Every line the launcher writes on stderr starts with this, so the host can tell it from the guest. */
export const LAUNCHER_MARK = "ears-launcher:";

/** What the launcher must do before it execs `command`. */
export interface LaunchSteps {
  command: string;
  args: readonly string[];
  /** Descriptors (>= 3) to close: inherited by the host without close-on-exec. */
  closeFds: readonly number[];
  /** Descriptors the child is given on purpose (extra stdio entries, e.g. bubblewrap's seccomp program on 3); never closed. */
  keepFds: readonly number[];
  /** The cgroup files the launcher writes itself into, in order, before it execs anything. */
  cgroupJoins: readonly CgroupJoin[];
  /** Per-process rlimits, each set soft and hard (the guest cannot raise them again). */
  rlimits: Rlimits;
  /**
   * The environment the guest is given. The shells set PWD (both) and SHLVL (bash, at every exec): the
   * launcher puts both back as they were here, so the guest's environment is exactly this one. `null`:
   * the command sets the guest's environment itself (bubblewrap's --clearenv), so the launcher need not,
   * and bash saves an exec of env.
   */
  env: Readonly<Record<string, string | undefined>> | null;
  /** The shells this machine has: a POSIX sh (dash takes single-digit descriptors only) and bash (any), and `env`. */
  shells: Shells;
}

/**
 * One cgroup to join. `"thread"`: a cgroup v1 `tasks` file, given `0` (the writing thread). The launcher
 * is a single-threaded shell, so moving its one thread moves the process; and the kernel moves the
 * current thread without taking the global threadgroup lock, whose first writer waits for an RCU grace
 * period (10-16 ms measured here, per run). `"process"`: a `cgroup.procs` file, given the shell's pid (v2
 * has no `tasks` file; see BENCHMARKS.md for what that costs).
 */
export interface CgroupJoin {
  file: string;
  as: "thread" | "process";
}

/**
 * The rlimits the launcher sets before it execs anything, so they hold under every confinement (bubblewrap,
 * Landlock, none) and for everything the guest starts. Each is optional; a value is rounded up to the unit
 * the shell's `ulimit` takes.
 */
export interface Rlimits {
  /** RLIMIT_CPU in whole seconds (SIGXCPU at it, SIGKILL a second later). */
  cpuSeconds?: number;
  /** RLIMIT_DATA in bytes: a process's private writable memory (heap, anonymous mappings); allocation past it fails with ENOMEM. */
  dataBytes?: number;
  /** RLIMIT_NPROC: the processes and threads of the host's real user, machine-wide (fork fails with EAGAIN at it; root is exempt). */
  processes?: number;
  /** RLIMIT_FSIZE in bytes: the largest file a process may write (EFBIG past it; SIGXFSZ to a process that does not ignore it). */
  fileBytes?: number;
}

/** The programs the launcher may use. */
export interface Shells {
  sh?: string;
  bash?: string;
  /** `env`, which bash needs to exec without adding SHLVL. */
  env?: string;
}

/** How to spawn the guest: directly, through the launcher, or not at all (the problem says why). */
export type LaunchCommand = { command: string; args: string[]; wrapped: boolean } | { problem: string };

/** The name the launcher runs under ($0), as `ps` shows it. */
const ARGV0 = "ears-launcher";

/**
 * The command line that runs `steps`. With nothing to do (no cgroup, no descriptor to close, no rlimit)
 * the guest is spawned directly, at no cost. Descriptors in `keepFds` are never closed.
 */
export function launcherCommand(steps: LaunchSteps): LaunchCommand {
  const close = [...new Set(steps.closeFds)]
    .filter((fd) => Number.isSafeInteger(fd) && fd >= 3 && !steps.keepFds.includes(fd))
    .sort((a, b) => a - b);
  const { cpuSeconds, dataBytes, processes, fileBytes } = steps.rlimits;
  const noRlimit = cpuSeconds === undefined && dataBytes === undefined && processes === undefined && fileBytes === undefined;
  if (close.length === 0 && steps.cgroupJoins.length === 0 && noRlimit) {
    return { command: steps.command, args: [...steps.args], wrapped: false };
  }
  // dash's redirections take one digit; bash takes any descriptor.
  const high = close.find((fd) => fd >= 10);
  const shell = high !== undefined ? steps.shells.bash : (steps.shells.sh ?? steps.shells.bash);
  if (shell === undefined) {
    return {
      problem: `the launcher needs ${high === undefined ? "/bin/sh" : `bash (to close descriptor ${high})`}, which this machine lacks`,
    };
  }
  const bash = shell === steps.shells.bash;
  const exact = steps.env !== null;
  if (bash && exact && steps.shells.env === undefined)
    return { problem: "the launcher needs env (to start the guest from bash unchanged), which this machine lacks" };
  // env would take a command with "=" in its name for a variable.
  if (bash && exact && steps.command.includes("="))
    return { problem: `the launcher cannot start ${JSON.stringify(steps.command)} through env (its path has "=")` };
  const lines: string[] = [];
  const restore: string[] = [];
  // Each file is a positional parameter, so no path is ever parsed by the shell. echo is the shell's own:
  // the write comes from the shell's thread, which "0" names.
  for (const entry of steps.cgroupJoins) {
    const who = entry.as === "thread" ? "0" : "$$";
    lines.push(
      `echo ${who} > "$1" || { echo "${LAUNCHER_MARK} could not join the run's cgroup ($1)" >&2; exit ${LAUNCHER_FAILED}; }; shift`,
    );
  }
  if (close.length > 0) lines.push(`exec ${close.map((fd) => `${fd}<&-`).join(" ")}`);
  if (cpuSeconds !== undefined) {
    const seconds = Math.max(1, Math.ceil(cpuSeconds));
    // Soft limit: SIGXCPU, which ends the guest with a signal of its own; the hard one, a second later, SIGKILL.
    lines.push(
      `{ ulimit -S -t ${seconds} && ulimit -H -t ${seconds + 1}; } || ` +
        `{ echo "${LAUNCHER_MARK} could not set RLIMIT_CPU" >&2; exit ${LAUNCHER_FAILED}; }`,
    );
  }
  // ulimit -d takes KiB; -f takes 512-byte blocks in dash and in bash --posix alike.
  if (dataBytes !== undefined) lines.push(rlimitLine(["-d"], Math.ceil(dataBytes / 1024), "RLIMIT_DATA"));
  if (fileBytes !== undefined) lines.push(rlimitLine(["-f"], Math.ceil(fileBytes / 512), "RLIMIT_FSIZE"));
  // bash names RLIMIT_NPROC -u, dash -p (bash's -p is the pipe size, which cannot be set: that try fails).
  if (processes !== undefined) lines.push(rlimitLine(["-u", "-p"], Math.ceil(processes), "RLIMIT_NPROC"));
  const { PWD: pwd, SHLVL: shlvl } = steps.env ?? {};
  if (!exact) {
    // The command replaces the environment: nothing to put back.
  } else if (pwd === undefined) lines.push("unset PWD");
  else {
    lines.push('export PWD="$1"; shift');
    restore.push(pwd);
  }
  if (!bash || !exact) lines.push('exec "$@"');
  else if (shlvl === undefined) lines.push(`exec ${steps.shells.env} -u SHLVL "$@"`);
  else {
    lines.push(`exec ${steps.shells.env} "SHLVL=$1" "\${@:2}"`);
    restore.push(shlvl);
  }
  // bash reads no startup file: not $BASH_ENV (--posix), not ~/.bashrc, which it sources when stdin is a
  // socket, as Node's stdio pipes are (its "run by rshd" guess; --norc).
  const options = bash ? ["--norc", "--posix", "-c"] : ["-c"];
  return {
    command: shell,
    args: [...options, lines.join("\n"), ARGV0, ...steps.cgroupJoins.map((entry) => entry.file), ...restore, steps.command, ...steps.args],
    wrapped: true,
  };
}

/**
 * The launcher's line that sets an rlimit, soft and hard, to `value` (at least 1) by the first of `flags` the
 * shell takes. A hard limit already lower (the host's own, e.g. a container's `--ulimit`) cannot be raised
 * and needs not be: it stands. Anything else the shell cannot set stops the launcher.
 */
function rlimitLine(flags: readonly string[], value: number, name: string): string {
  const count = Math.max(1, value);
  const set = flags.map((flag) => `ulimit ${flag} ${count} 2>/dev/null`).join(" || ");
  const hard = flags.map((flag) => `ulimit -H ${flag} 2>/dev/null`).join(" || ");
  return (
    `{ ${set} || { h=$(${hard}); [ "$h" != unlimited ] && [ "$h" -le ${count} ]; }; } || ` +
    `{ echo "${LAUNCHER_MARK} could not set ${name}" >&2; exit ${LAUNCHER_FAILED}; }`
  );
}

/** O_CLOEXEC in /proc/self/fdinfo's octal `flags`. */
const O_CLOEXEC = 0o2000000;

/** How {@link leakedDescriptors} reads a process's descriptors (this process's /proc by default; data in tests). */
export interface DescriptorTable {
  /** The open descriptors' names (/proc/self/fd), or undefined when they cannot be listed. */
  list(): string[] | undefined;
  /** A descriptor's /proc/self/fdinfo text, or undefined when it is gone. */
  info(fd: number): string | undefined;
}

/** This process's /proc/self/fd and fdinfo. */
function ownDescriptors(): DescriptorTable {
  return {
    list() {
      try {
        return readdirSync("/proc/self/fd");
      } catch {
        return undefined;
      }
    },
    info(fd) {
      try {
        return readFileSync(`/proc/self/fdinfo/${fd}`, "utf8");
      } catch {
        // Closed meanwhile (the directory listing's own descriptor, among others).
        return undefined;
      }
    },
  };
}

/**
 * This process's descriptors from 3 up that a child would inherit: open without close-on-exec (Linux
 * /proc/self/fdinfo; none elsewhere). Node opens its own with close-on-exec; these come from whoever
 * started the host (`ears exec … 40</`, a harness's pipe). `table`: this process's by default.
 */
export function leakedDescriptors(table: DescriptorTable = ownDescriptors()): number[] {
  const leaked: number[] = [];
  for (const entry of table.list() ?? []) {
    const fd = Number(entry);
    if (!Number.isSafeInteger(fd) || fd < 3) continue;
    const flags = /^flags:\s*([0-7]+)$/m.exec(table.info(fd) ?? "");
    if (flags !== null && (parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) leaked.push(fd);
  }
  return leaked.sort((a, b) => a - b);
}

let shells: Shells | undefined;

/** The shells (and env) at their usual places, looked up once. */
export function machineShells(): Shells {
  return (shells ??= findShells(isExecutableFile));
}

/** The first of each program's usual places that `executable` accepts. */
export function findShells(executable: (path: string) => boolean): Shells {
  const found: Shells = {};
  const sh = ["/bin/sh", "/usr/bin/sh"].find(executable);
  const bash = ["/bin/bash", "/usr/bin/bash"].find(executable);
  const env = ["/usr/bin/env", "/bin/env"].find(executable);
  if (sh !== undefined) found.sh = sh;
  if (bash !== undefined) found.bash = bash;
  if (env !== undefined) found.env = env;
  return found;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
