/**
 * A real OpenSSH server for the remote runner tests: `sshd -D` on 127.0.0.1, on free ports, with its own
 * host key, client key, authorized_keys, known_hosts and configuration in a temporary directory. Nothing
 * of the machine's SSH configuration is read or touched (the client runs with `-F /dev/null`). The far end
 * runs this worktree's build: `node dist/cli/main.js runner`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RemoteRunner } from "../../src/host/types.js";
import { processTable } from "./processes.js";

export const root = fileURLToPath(new URL("../../", import.meta.url));
/** The CLI of this worktree's build, as the far end runs it. */
export const cliPath = join(root, "dist/cli/main.js");

/** sshd and ssh-keygen, when installed (Debian's openssh-server; scripts/system-packages.mjs installs it). */
export const sshdPath: string | undefined = ["/usr/sbin/sshd", "/usr/bin/sshd"].find((path) => existsSync(path));

export interface SshOptions {
  port?: number;
  /** The client's known_hosts file (default one that knows the server's host key). */
  knownHosts?: string;
  /** More ssh options, before -T. */
  extra?: readonly string[];
}

export interface Sshd {
  /** The ports it listens on. */
  ports: number[];
  dir: string;
  pid: number;
  /** The ssh command line to `port` (default the first), up to and including the user@host. */
  ssh(options?: SshOptions): string[];
  /** A remote runner through ssh: `ears runner` with `runnerArgs` on the far end, after the shell words `before`. */
  runner(options?: SshOptions & { runnerArgs?: readonly string[]; before?: readonly string[] }): RemoteRunner;
  /** Every live process the server started (its connections and what they run). */
  descendants(): number[];
  /** SIGKILLs the processes of its connections: the connections drop as if the network were cut. */
  cutConnections(): void;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (asked of the kernel; free when this returns). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Starts sshd listening on `count` ports; resolves once it accepts connections. */
export async function startSshd(count = 1): Promise<Sshd> {
  if (sshdPath === undefined) throw new Error("sshd is not installed: apt-get install openssh-server");
  const dir = mkdtempSync(join(tmpdir(), "ears-sshd-"));
  const key = (name: string) => execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", join(dir, name)]);
  key("host_key");
  key("client_key");
  writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")));
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const hostKey = readFileSync(join(dir, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
  writeFileSync(join(dir, "known_hosts"), ports.map((port) => `[127.0.0.1]:${port} ${hostKey}\n`).join(""));
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "ListenAddress 127.0.0.1",
      "PidFile none",
      "PermitRootLogin prohibit-password",
      // The keys live in a temporary directory, which sshd's ownership checks would refuse.
      "StrictModes no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "UseDNS no",
      "LogLevel ERROR",
      "",
    ].join("\n"),
  );
  // sshd's privilege separation directory (the package makes it at boot through systemd's tmpfiles).
  if (!existsSync("/run/sshd") && process.getuid?.() === 0) mkdirSync("/run/sshd", { mode: 0o755 });
  const args = ["-D", "-e", "-f", join(dir, "sshd_config"), ...ports.flatMap((port) => ["-p", String(port)])];
  const server: ChildProcess = spawn(sshdPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  server.stderr?.setEncoding("utf8").on("data", (text: string) => (log += text));
  const deadline = Date.now() + 10_000;
  for (const port of ports) {
    while (!(await accepts(port))) {
      if (server.exitCode !== null || Date.now() > deadline) {
        server.kill("SIGKILL");
        throw new Error(`sshd did not start: ${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const user = userInfo().username;
  const ssh = ({ port = ports[0]!, knownHosts = join(dir, "known_hosts"), extra = [] }: SshOptions = {}) => [
    "-F",
    "/dev/null",
    "-i",
    join(dir, "client_key"),
    "-o",
    `UserKnownHostsFile=${knownHosts}`,
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "BatchMode=yes",
    "-o",
    "IdentitiesOnly=yes",
    ...extra,
    "-T",
    "-p",
    String(port),
    `${user}@127.0.0.1`,
  ];
  const descendants = () => {
    const table = processTable();
    const tree = [server.pid!];
    for (let i = 0; i < tree.length; i++) tree.push(...table.filter((entry) => entry.parent === tree[i]).map((entry) => entry.pid));
    return tree.slice(1);
  };
  return {
    ports,
    dir,
    pid: server.pid!,
    ssh,
    runner: ({ runnerArgs = [], before = [], ...options } = {}) => ({
      command: "ssh",
      args: [...ssh(options), ...before, process.execPath, cliPath, "runner", ...runnerArgs],
    }),
    descendants,
    cutConnections() {
      const table = processTable();
      for (const pid of descendants()) {
        if (!table.find((entry) => entry.pid === pid)?.command.startsWith("sshd")) continue;
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
    },
    async stop() {
      for (const pid of descendants()) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
