#!/usr/bin/env node
// The OS packages the build and tests use for real: bubblewrap (the sandbox), Debian's chromium (the timeline
// page in a browser), openssh-server (sshd, with ssh and ssh-keygen: the remote runner tests), redis-server
// (redisLedger), gcc and coreutils (the session walk tests), tmux (a real terminal for the approval question),
// util-linux's setpriv (hosts as an unprivileged uid), musl-tools and gcc-aarch64-linux-gnu (the Landlock
// helper's compilers, scripts/build-native.mjs), qemu-user-static (its arm64 build run in the tests) and
// docker.io (dockerd: the deploy recipe's test). Installed with
// apt-get when missing and this process may (root, on a Debian-like system), so the README's test command
// sets up a fresh machine by itself; .ci/run calls this too. Elsewhere it says what is missing and how to
// install it: the sandbox tests then skip, and the browser test fails with the same advice.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

const onPath = (name) => (process.env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, name)));
const wanted = [
  { command: "bwrap", pkg: "bubblewrap", why: "the sandbox tests run guests under bubblewrap" },
  { command: "chromium", pkg: "chromium", why: "the timeline test opens its page in headless Chromium" },
  { command: "sshd", pkg: "openssh-server", why: "the remote runner tests run bodies through a real sshd on 127.0.0.1" },
  { command: "redis-server", pkg: "redis-server", why: "the approval ledger tests claim resumes on a real redis-server" },
  { command: "gcc", pkg: "gcc", why: "the session walk tests compile a renameat2 swap helper" },
  { command: "mkfifo", pkg: "coreutils", why: "the session walk tests plant FIFOs" },
  { command: "tmux", pkg: "tmux", why: "the terminal approval tests ask their question in a real terminal, a tmux pane" },
  {
    command: "setpriv",
    pkg: "util-linux",
    why: "the limits tests run a host as an unprivileged uid (test/host/limits/environments.test.ts)",
  },
  { command: "musl-gcc", pkg: "musl-tools", why: "npm run build compiles the Landlock helper for linux-x64 with it" },
  {
    command: "aarch64-linux-gnu-gcc",
    pkg: "gcc-aarch64-linux-gnu",
    why: "npm run build cross-compiles the Landlock helper for linux-arm64",
  },
  { command: "qemu-aarch64-static", pkg: "qemu-user-static", why: "the helper's tests run the arm64 build under qemu" },
  { command: "dockerd", pkg: "docker.io", why: "test/deploy/docker.test.ts runs the deploy recipe in a dockerd of its own" },
].filter(
  ({ command }) =>
    !(
      onPath(command) ||
      (["sshd", "dockerd", "setpriv"].includes(command) && existsSync(`/usr/sbin/${command}`)) ||
      (command === "setpriv" && existsSync("/usr/bin/setpriv"))
    ),
);
if (wanted.length === 0) process.exit(0);

const canInstall = process.platform === "linux" && process.getuid?.() === 0 && onPath("apt-get");
if (!canInstall) {
  for (const { pkg, why } of wanted) console.error(`system-packages: ${pkg} is not installed (${why}): apt-get install ${pkg}`);
  process.exit(0);
}
const apt = (args) =>
  spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
    .status === 0;
const pkgs = wanted.map(({ pkg }) => pkg);
console.error(`system-packages: installing ${pkgs.join(", ")} with apt-get`);
if (!apt(["install", "-y", ...pkgs]) && !(apt(["update"]) && apt(["install", "-y", ...pkgs]))) {
  console.error(`system-packages: could not install ${pkgs.join(", ")}; the tests that need them will skip or fail saying so`);
}
