/**
 * A real OpenSSH server for the remote runner tests (bench/lib/sshd.mjs starts it), with what the tests
 * add: a remote runner through it (the far end runs this worktree's build, `node dist/cli/main.js runner`),
 * the processes its connections run, and cutting those connections.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startSshd as startServer, type SshOptions, type SshServer } from "../../bench/lib/sshd.mjs";
import type { RemoteRunner } from "../../src/host/api/types.js";
import { processTable } from "./processes.js";

export { sshdPath } from "../../bench/lib/sshd.mjs";

export const root = fileURLToPath(new URL("../../", import.meta.url));
/** The CLI of this worktree's build, as the far end runs it. */
export const cliPath = join(root, "dist/cli/main.js");

export interface Sshd extends SshServer {
  /** A remote runner through ssh: `ears runner` with `runnerArgs` on the far end, after the shell words `before`. */
  runner(options?: SshOptions & { runnerArgs?: readonly string[]; before?: readonly string[] }): RemoteRunner;
  /** Every live process the server started (its connections and what they run). */
  descendants(): number[];
  /** SIGKILLs the processes of its connections: the connections drop as if the network were cut. */
  cutConnections(): void;
}

/** Starts sshd listening on `count` ports; resolves once it accepts connections. */
export async function startSshd(count = 1): Promise<Sshd> {
  const server = await startServer(count);
  const descendants = () => {
    const table = processTable();
    const tree = [server.pid];
    for (let i = 0; i < tree.length; i++) tree.push(...table.filter((entry) => entry.parent === tree[i]).map((entry) => entry.pid));
    return tree.slice(1);
  };
  const kill = (pids: readonly number[]) => {
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  };
  return {
    ...server,
    runner: ({ runnerArgs = [], before = [], ...options } = {}) => ({
      command: "ssh",
      args: [...server.ssh(options), ...before, process.execPath, cliPath, "runner", ...runnerArgs],
    }),
    descendants,
    cutConnections() {
      const sshds = new Set(
        processTable()
          .filter((entry) => entry.command.startsWith("sshd"))
          .map((entry) => entry.pid),
      );
      kill(descendants().filter((pid) => sshds.has(pid)));
    },
    async stop() {
      kill(descendants());
      await server.stop();
    },
  };
}
