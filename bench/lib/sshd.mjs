// A real OpenSSH server on 127.0.0.1 for the remote runner tests (test/helpers/sshd.ts) and benchmark
// (bench/scenarios/remote-runs.mjs): `sshd -D` on free ports, with its own host key, client key,
// authorized_keys, known_hosts and configuration in a temporary directory. Nothing of the machine's SSH
// configuration is read or touched (the client runs with `-F /dev/null`).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/** sshd, when installed (Debian's openssh-server; scripts/system-packages.mjs installs it). */
export const sshdPath = ["/usr/sbin/sshd", "/usr/bin/sshd"].find((path) => existsSync(path));

/** A free TCP port on 127.0.0.1 (asked of the kernel; free when this returns). */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(() => resolve()));
  return port;
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Starts sshd listening on `count` ports; resolves once it accepts connections on each. */
export async function startSshd(count = 1) {
  if (sshdPath === undefined) throw new Error("sshd is not installed: apt-get install openssh-server");
  const dir = mkdtempSync(join(tmpdir(), "ears-sshd-"));
  const key = (name) => execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", join(dir, name)]);
  key("host_key");
  key("client_key");
  writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")));
  const ports = [];
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
  const server = spawn(sshdPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  server.stderr.setEncoding("utf8").on("data", (text) => (log += text));
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
  return {
    ports,
    dir,
    pid: server.pid,
    /** The ssh command line's arguments up to and including user@host. */
    ssh: ({ port = ports[0], knownHosts = join(dir, "known_hosts"), extra = [] } = {}) => [
      ...["-F", "/dev/null", "-i", join(dir, "client_key"), "-o", `UserKnownHostsFile=${knownHosts}`],
      ...["-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", ...extra],
      ...["-T", "-p", String(port), `${user}@127.0.0.1`],
    ],
    /** SIGKILLs the server (its connections are the caller's to end first) and removes its directory. */
    async stop() {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
