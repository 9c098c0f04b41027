/** Finding processes from outside by a marker in their command line (Linux /proc), for the "nothing outlives the run" tests. */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterEach } from "vitest";

let counter = 0;

/** A number unique to this test process and call, usable as `sleep`'s argument (a long sleep: 300 s and a bit). */
export function uniqueMarker(): string {
  counter += 1;
  return `300.${process.pid}${String(counter).padStart(3, "0")}`;
}

/**
 * Live processes (zombies excluded: they are dead, only not yet reaped by a parent) whose command line
 * has `marker` as one of its words.
 */
export function liveWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const words = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (!words.includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Polls until no live process carries `marker`, at most `withinMs`; resolves with those still alive (empty: all gone). */
export async function goneWithin(marker: string, withinMs: number): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const alive = liveWith(marker);
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGKILLs whatever still carries `marker` (cleanup after a failing test, so nothing leaks into the next). */
export function killAllWith(marker: string): void {
  for (const pid of liveWith(marker)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** Live (not zombie) processes: pid, parent and command line (its words joined by spaces). */
export function processTable(): { pid: number; parent: number; command: string }[] {
  const table = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, parent] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z") continue;
      table.push({
        pid: Number(entry),
        parent: Number(parent),
        command: readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " "),
      });
    } catch {
      // Gone meanwhile.
    }
  }
  return table;
}

/** `pid` and every live process below it (empty when `pid` is gone). */
export function treeOf(pid: number): number[] {
  const table = processTable();
  const tree = table.some((entry) => entry.pid === pid) ? [pid] : [];
  for (let i = 0; i < tree.length; i++) tree.push(...table.filter((entry) => entry.parent === tree[i]).map((entry) => entry.pid));
  return tree;
}

/** The live child of `parent` whose command line contains `marker`, if there is one. */
export function childWith(parent: number, marker: string): number | undefined {
  return processTable().find((entry) => entry.parent === parent && entry.command.includes(marker))?.pid;
}

/** Polls until none of `pids` is alive, at most `withinMs`; resolves with those still alive (empty: all gone). */
export async function pidsGoneWithin(pids: readonly number[], withinMs: number): Promise<number[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const live = new Set(processTable().map((entry) => entry.pid));
    const alive = pids.filter((pid) => live.has(pid));
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Live processes whose environment holds `entry` ("NAME=value") or whose command line has it as two
 * words (bubblewrap's `--setenv NAME value`): a run pool's runners and their sandboxes, found by a marker
 * the pool's `env` (or `sandbox.env`) gives them.
 */
export function liveWithEnvironment(entry: string): number[] {
  const [name, value] = [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)];
  const found: number[] = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      const words = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      const set = words.findIndex((word, at) => word === name && words[at + 1] === value && words[at - 1] === "--setenv");
      if (!environment.includes(entry) && set < 0) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") found.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Polls until `count()` is at least `atLeast`, at most `withinMs`; resolves with the last count. */
export async function countReaches(count: () => number, atLeast: number, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const now = count();
    if (now >= atLeast || Date.now() >= deadline) return now;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Markers for one test file: each call gives a new one, and whatever still carries any of them is
 * SIGKILLed after each test (so a failing test leaks nothing into the next).
 */
export function markersKilledAfterEach(): () => string {
  const markers: string[] = [];
  afterEach(() => {
    for (const marker of markers.splice(0)) killAllWith(marker);
  });
  return () => {
    const marker = uniqueMarker();
    markers.push(marker);
    return marker;
  };
}

/** Polls until none of `paths` exists, at most `withinMs`; resolves with those still there (empty: all gone). */
export async function goneFromDisk(paths: string[], withinMs: number): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = paths.filter((path) => existsSync(path));
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether a process with this pid is still there (a zombie counts: it has not been reaped). */
export function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A runCode body that starts three `sleep` children carrying `marker`, waits until each has started, and returns 3. */
export function threeChildrenBody(marker: string): string {
  return `
    const { spawn } = process.getBuiltinModule("node:child_process");
    const children = [1, 2, 3].map(() => spawn("sleep", ["30", ${JSON.stringify(marker)}], { stdio: "ignore" }));
    const started = (child) => new Promise((resolve, reject) => { child.on("spawn", resolve); child.on("error", reject); });
    await Promise.all(children.map(started));
    return children.length;`;
}

/** Whether `pid` is a live process: in /proc and not a zombie (dead, only not yet reaped). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Waits until `check` holds, looking every 20 ms, for at most `ms` (a bound, not a timing assertion); the last look's answer. */
export async function until(check: () => boolean, ms = 30_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}
