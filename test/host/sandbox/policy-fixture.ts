/**
 * The machine the in-process policy tests share: a file system with node on PATH, a project, /tmp and two
 * homes, given as data (FakeFileSystem), and short ways to plan a launch on it and read the plan. Defines
 * functions only: nothing of src/ runs while a suite is collected (Stryker's "static" mutants, CONTRIBUTING).
 */
import { sandboxPolicy, type Launch, type SandboxPolicy } from "../../../src/host/sandbox/policy.js";
import type { SandboxOptions } from "../../../src/host/sandbox/types.js";
import { FakeFileSystem } from "./fake-file-system.js";

export const NODE = { kind: "file" as const, executable: true };
export const places = { homes: ["/root", "/home/alice"], temporaryRoots: ["/tmp"] };
export const base = () => new FakeFileSystem({ "/usr/bin/node": NODE, "/work/proj/": "", "/tmp/": "", "/root/": "", "/home/alice/": "" });
export const launch = (cwd: string, args: string[] = [], more: Partial<Launch> = {}): Launch => ({
  command: "node",
  args,
  cwd,
  env: { PATH: "/usr/bin" },
  ...more,
});
export const policy = (fs: FakeFileSystem, l: Launch, options: SandboxOptions = {}) => sandboxPolicy(l, options, fs, places);
export const shown = (p: SandboxPolicy) => p.binds.map((b) => `${b.source} -> ${b.target}${b.writable ? " (rw)" : ""}`);
export const masked = (p: SandboxPolicy) => p.masks.map((m) => m.path);
