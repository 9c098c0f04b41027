/**
 * A real redis-server for a test: listening on a unix socket in a temp directory of its own (no TCP port,
 * so tests of eight worktrees never collide), no persistence. Started when the test asks, ready once the
 * server says so on stdout, stopped (SIGKILL, then its directory removed) by `stop()`.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Whether redis-server is installed (scripts/system-packages.mjs installs it where it can). */
export const hasRedisServer = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;

export interface RedisServer {
  /** The unix socket the server listens on. */
  socket: string;
  stop(): Promise<void>;
}

export async function startRedisServer(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "ears-redis-"));
  const socket = join(dir, "redis.sock");
  const child = spawn(
    "redis-server",
    ["--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/ready to accept connections/i.test(output)) {
        child.stdout.off("data", onData);
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${output}`)));
  });
  child.stdout.resume();
  return {
    socket,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
