/**
 * The public types of the guest sandbox: what a host asks for (`runGuest({ sandbox })`) and what the
 * report says confined the run. The mechanisms (one module each) are behind `index.ts`.
 */
import type { SandboxPolicy } from "./policy.js";

/** What may reach the guest besides its own working files. Giving this object means "sandbox required". */
export interface SandboxOptions {
  /** More paths the guest may read (and list), read-only; relative paths are taken from `cwd`. */
  readable?: readonly string[];
  /** Paths the guest may read and write; relative paths are taken from `cwd`. Each must exist. */
  writable?: readonly string[];
  /** Share the host's network; default false (the guest has its own network namespace: loopback only, nothing listening). */
  network?: boolean;
  /**
   * Environment variables for the guest besides `PATH`, `HOME`, `LANG` and `TZ`: `"NAME"` passes the
   * host's value (from `env`, default `process.env`; skipped when unset), `"NAME=value"` sets one.
   */
  env?: readonly string[];
}

/**
 * How to confine a guest. `"auto"` (the default): the OS sandbox when the platform has one that can
 * start here, else unconfined (the report's `sandboxFallback` says why). `true`: required; without an OS
 * sandbox the run fails with `SandboxUnavailable` and the guest is never started. `false`: unconfined.
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
  /** True when the guest shares the host's network. */
  network: boolean;
  /** Names of the environment variables the guest received. */
  env: string[];
}

/**
 * One OS sandbox mechanism (one module each: bubblewrap.ts on Linux; a sandbox-exec module for macOS
 * would be another). Internal: chosen by platform in index.ts.
 */
export interface SandboxMechanism {
  /** Why it cannot confine a guest here, or undefined when it can. Called once per process. */
  probe(): Promise<string | undefined>;
  /** The command line that runs `policy` confined. Throws when it cannot be prepared. */
  command(policy: SandboxPolicy): { command: string; args: string[]; report: SandboxReport };
}
