#!/usr/bin/env node
// The OS packages the tests use for real: bubblewrap (the sandbox), Debian's chromium (the timeline page in
// a browser), openssh-server (sshd, with ssh and ssh-keygen: the remote runner tests) and redis-server (redisLedger). Installed with
// a browser), openssh-server (sshd, with ssh and ssh-keygen: the remote runner tests) and tmux (a real terminal
// for the approval question). Installed with
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
].filter(
  ({ command }) =>
    !(onPath(command) || (command === "sshd" && existsSync("/usr/sbin/sshd")) || (command === "setpriv" && existsSync("/usr/bin/setpriv"))),
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
