/**
 * A real Docker of the test's own: a dockerd with its data, exec root, socket, pidfile and cgroup parent
 * under a fresh temporary directory (nothing shared with another dockerd on the machine, nor with another
 * worktree's test), no iptables, no bridge; and an image made with `docker import` from a root file system
 * assembled from this machine's files (no registry: there is no network to one). Docker's client is
 * called as /usr/bin/docker with the daemon's API version pinned, so a newer client earlier on PATH cannot
 * ask for an API this daemon lacks.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export const DOCKERD = "/usr/sbin/dockerd";
export const DOCKER = "/usr/bin/docker";

/** Why a dockerd of the test's own cannot be started here, or undefined when it can be tried. */
export function dockerMissing(): string | undefined {
  if (process.platform !== "linux") return "Docker's daemon runs on Linux only";
  if (process.getuid?.() !== 0) return "dockerd needs root (run the suite as root, as CI does)";
  if (!existsSync(DOCKERD) || !existsSync(DOCKER)) return `${DOCKERD} or ${DOCKER} is missing (apt-get install docker.io)`;
  return undefined;
}

/** A running dockerd of the test's own. */
export interface Daemon {
  /** The environment its client needs (DOCKER_HOST, DOCKER_API_VERSION). */
  env: NodeJS.ProcessEnv;
  /** Runs the client; throws with its stderr on a non-zero exit. */
  docker(args: string[], input?: Buffer | string): string;
  /** Stops the daemon and removes everything it made. */
  stop(): Promise<void>;
}

/** Starts a dockerd (overlay2, else vfs) and resolves once its API listens; rejects with its log when it cannot start. */
export async function startDaemon(): Promise<Daemon> {
  const base = mkdtempSync(join(tmpdir(), "ears-dockerd-"));
  const tag = base.slice(base.lastIndexOf("-") + 1).toLowerCase();
  let lastLog = "";
  for (const driver of ["overlay2", "vfs"]) {
    const root = join(base, driver);
    mkdirSync(root);
    const socket = join(root, "docker.sock");
    const child = spawn(
      DOCKERD,
      [
        ...["--data-root", join(root, "data"), "--exec-root", join(root, "exec"), "-H", `unix://${socket}`],
        ...["--pidfile", join(root, "dockerd.pid"), "--storage-driver", driver, `--cgroup-parent=/ears-docker-${tag}`],
        ...["--iptables=false", "--ip6tables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false", "--userland-proxy=false"],
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" } },
    );
    const ready = await new Promise<boolean>((done) => {
      let log = "";
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        log += chunk;
        lastLog = log.slice(-2000);
        if (log.includes("API listen on")) done(true);
      });
      child.once("exit", () => done(false));
      child.once("error", () => done(false));
    });
    if (!ready) {
      await stopChild(child);
      continue;
    }
    // Drained, so a chatty daemon never blocks on a full pipe.
    child.stderr!.resume();
    const env = { ...process.env, DOCKER_HOST: `unix://${socket}`, DOCKER_API_VERSION: "1.41", DOCKER_CONFIG: join(root, "client") };
    const docker = (args: string[], input?: Buffer | string) => {
      const ran = spawnSync(DOCKER, args, { env, input, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" });
      if (ran.status !== 0) throw new Error(`docker ${args.join(" ")} failed (${ran.status}): ${ran.stderr}`);
      return ran.stdout;
    };
    return {
      env,
      docker,
      stop: async () => {
        await stopChild(child);
        // Anything the daemon left mounted under its data root (an overlay of a container that did not end).
        spawnSync("sh", ["-c", `grep -o " ${root}/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l`]);
        rmSync(base, { recursive: true, force: true });
        removeCgroups(`ears-docker-${tag}`);
      },
    };
  }
  rmSync(base, { recursive: true, force: true });
  throw new Error(`dockerd did not start with overlay2 nor vfs: ${lastLog}`);
}

/** The cgroups the daemon made under its own parent, in every hierarchy (v1's controllers, or v2's one), deepest first. */
function removeCgroups(name: string): void {
  const hierarchies = readdirSync("/sys/fs/cgroup", { withFileTypes: true }).filter((entry) => entry.isDirectory());
  const tops = [join("/sys/fs/cgroup", name), ...hierarchies.map((entry) => join("/sys/fs/cgroup", entry.name, name))];
  const remove = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) remove(join(dir, entry.name));
    rmdirSync(dir);
  };
  for (const top of tops) if (existsSync(top)) remove(top);
}

/** SIGTERM, and resolves once it has exited (dockerd stops its own containerd first). */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

/** The shared libraries `ldd` lists for a program (absolute paths as the loader looks them up). */
function libraries(program: string): string[] {
  const listed = execFileSync("ldd", [program], { encoding: "utf8" });
  return [...listed.matchAll(/(\/[^\s]+)/g)].map((match) => match[1]!).filter((path) => !path.includes("vdso"));
}

/**
 * Assembles a root file system: the top-level links of a merged-/usr system as this machine has them
 * (relative), each program with the libraries ldd lists, /etc/passwd and /etc/group with `app` (1000:1000),
 * a world-writable sticky /tmp, and `files` (host path -> path in the image) copied as they are.
 */
export function assembleRoot(programs: readonly string[], files: Readonly<Record<string, string>>): string {
  const root = mkdtempSync(join(tmpdir(), "ears-rootfs-"));
  for (const top of ["bin", "lib", "lib64", "sbin"]) {
    let target: string | undefined;
    try {
      target = readlinkSync(`/${top}`);
    } catch {
      target = undefined;
    }
    if (target !== undefined) execFileSync("ln", ["-s", target.replace(/^\/+/, ""), join(root, top)]);
  }
  for (const dir of ["usr/bin", "usr/lib", "usr/lib64", "etc", "home/app", "proc", "dev", "sys"])
    mkdirSync(join(root, dir), { recursive: true });
  const place = (from: string, to: string) => {
    // Through the image's own links (relative, made above), never the host's.
    const at = join(root, to);
    mkdirSync(dirname(at), { recursive: true });
    cpSync(realpathSync(from), at, { dereference: true });
  };
  for (const program of programs) {
    place(program, program);
    for (const library of libraries(program)) place(library, library);
  }
  writeFileSync(join(root, "etc", "passwd"), "root:x:0:0:root:/root:/usr/sbin/nologin\napp:x:1000:1000:app:/home/app:/usr/sbin/nologin\n");
  writeFileSync(join(root, "etc", "group"), "root:x:0:\napp:x:1000:\n");
  execFileSync("chown", ["1000:1000", join(root, "home", "app")]);
  mkdirSync(join(root, "tmp"));
  chmodSync(join(root, "tmp"), 0o1777);
  for (const [from, to] of Object.entries(files)) {
    mkdirSync(dirname(join(root, to)), { recursive: true });
    cpSync(from, join(root, to), { recursive: true });
  }
  return root;
}

/** Imports a root file system as an image named `name` (a tar stream of it into `docker import`). */
export function importImage(daemon: Daemon, root: string, name: string, changes: readonly string[] = []): void {
  const tar = execFileSync("tar", ["-C", root, "--numeric-owner", "-c", "."], { maxBuffer: 1024 * 1024 * 1024 });
  daemon.docker(["import", ...changes.flatMap((change) => ["--change", change]), "-", name], tar);
}
