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
}

/**
 * How to confine a guest. `"auto"` (the default): the OS sandbox; unconfined only where there is none
 * to have (bubblewrap not installed, or a platform without one: the report's `sandboxFallback` says
 * which). An installed sandbox that fails to start fails the run with `SandboxUnavailable` and is tried
 * again on the next run: a transient failure never turns confinement off. `true`: required; without an
 * OS sandbox the run fails with `SandboxUnavailable` and the guest is never started. `false`: unconfined.
 * An options object implies `true`.
 */
export type SandboxSetting = "auto" | boolean | SandboxOptions;

/** What confined a run: the mechanism and the policy in effect (all paths absolute, as bound). */
export interface SandboxReport {
  /** The OS mechanism; only "bubblewrap" (Linux) today. */
  mechanism: "bubblewrap";
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
}
