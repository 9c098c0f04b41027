/**
 * The public types of the guest sandbox: what a host asks for (`runGuest({ sandbox })`) and what the
 * report says confined the run. The mechanisms (one module each) are behind `index.ts`.
 */

/** What may reach the guest besides its own working files. Giving this object means "sandbox required". */
export interface SandboxOptions {
  /** More paths the guest may read (and list), read-only; relative paths are taken from `cwd`. */
  readable?: readonly string[];
  /** Paths the guest may read and write; relative paths are taken from `cwd`. Each must exist. */
  writable?: readonly string[];
  /** Share the host's network; default false (the guest has its own network namespace: loopback only, nothing listening). */
  network?: boolean;
  /**
   * Environment variables for the guest besides `PATH`, `HOME`, `LANG`, `PWD` and `TZ` (when the host has it): `"NAME"` passes the
   * host's value (from `env`, default `process.env`; skipped when unset), `"NAME=value"` sets one.
   */
  env?: readonly string[];
  /**
   * Show files that usually hold secrets inside the shown directories (`.env*`, `.npmrc`, `.git/`,
   * `.ssh/`, `*.pem`, `*.key`, … : docs/host.md lists them); default false: they are masked, seen empty.
   */
  showSecrets?: boolean;
  /**
   * Allow a working directory, script directory or `readable`/`writable` path that is `/`, a home
   * directory, the temporary directory's root or an ancestor of one; default false: refused.
   */
  allowBroadPaths?: boolean;
  /**
   * The mechanism to confine with: `"bubblewrap"` (namespaces: the strongest), `"landlock"` (Landlock, seccomp and
   * no_new_privs through this package's helper: where user namespaces cannot be created), or `"auto"` (the
   * default): bubblewrap where it starts, else Landlock where the kernel offers it (ABI 6, Linux 6.12), else
   * the run fails with `SandboxUnavailable` saying what to fix. One named here that cannot start fails the run.
   */
  mechanism?: SandboxMechanism | "auto";
}

/** The OS mechanisms that confine a guest (Linux). */
export type SandboxMechanism = "bubblewrap" | "landlock";

/**
 * How to confine a guest. `"auto"` (the default): the OS sandbox. On Linux that is bubblewrap where it starts,
 * else Landlock (see {@link SandboxOptions.mechanism}); with neither the run fails with `SandboxUnavailable`
 * and the fix, and the guest is never started: on Linux "auto" never runs a guest unconfined. Elsewhere (no
 * OS sandbox is supported yet) "auto" runs unconfined, and the report's `sandboxFallback` says why. A
 * bubblewrap that is slow to start fails that run and is tried again on the next: a transient failure never
 * turns confinement off. `true`: required on every platform. `false`: unconfined, the only way to have that
 * on Linux. An options object implies `true`.
 */
export type SandboxSetting = "auto" | boolean | SandboxOptions;

/** What confined a run: the mechanism and the policy in effect (all paths absolute, as bound). */
export interface SandboxReport {
  /** The OS mechanism: "bubblewrap", or "landlock" where bubblewrap cannot start (see `gaps`). */
  mechanism: SandboxMechanism;
  /** Paths the guest can read, read-only: system directories, the working and script directories, `readable`. */
  readable: string[];
  /** Paths the guest can write: its private `/tmp` (and `HOME` inside it), then each `writable` path. */
  writable: string[];
  /** Paths inside those that the guest sees empty (secrets: see `SandboxOptions.showSecrets`). */
  masked: string[];
  /** True when the seccomp filter is loaded (setuid bits, user namespaces and kernel-facing calls refused). */
  seccomp: boolean;
  /** True when the guest shares the host's network. */
  network: boolean;
  /** Names of the environment variables the guest received. */
  env: string[];
  /**
   * What this mechanism does not do that bubblewrap does, one entry each ("proc: …", "tmp: …"; docs/host.md,
   * "Landlock"); empty for bubblewrap.
   */
  gaps: string[];
}
