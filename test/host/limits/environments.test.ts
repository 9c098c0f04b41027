/**
 * The limits in each environment a host is deployed in (docs/host.md "Resource limits", "No cgroup here"):
 * a memory bomb ends as MemoryLimit and a process bomb as ProcessLimit, the host lives on (it prints its
 * findings after both) and nothing of the bomb is left, with the host run
 * - as an unprivileged uid (`setpriv` to 65533, no cgroup it may write: rlimits and the watchdog), sandboxed and not;
 * - without user namespaces (`bwrap --unshare-user --disable-userns`, what Docker's default seccomp profile
 *   does) and with /sys/fs/cgroup read-only (as Docker mounts it), as uid 0 without capabilities and as
 *   65533; no bubblewrap can start there, so these runs are `sandbox: false` until the Landlock helper gives
 *   them a sandbox.
 * The root row (cgroup v1) is limits.test.ts. The host runs from a copy of the package in a directory every uid
 * can read, made here: the checkout may be under a 0700 directory.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { goneWithin, killAllWith, uniqueMarker } from "../../helpers/processes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
/**
 * The unprivileged uid, not nobody (65534): RLIMIT_NPROC counts a uid's processes machine-wide, and another test
 * file that may run beside this one (test/deploy/environments.test.ts) runs its bombs as 65534; sharing a uid, each
 * file's bombs ate the other's process limit. No account is needed for a uid setpriv and bwrap switch to.
 */
const UNPRIVILEGED = "65533";
const isRoot = process.getuid?.() === 0;
const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => existsSync(path));
const canSwitch = process.platform === "linux" && isRoot && setpriv !== undefined;
let copy = "";

beforeAll(() => {
  if (!canSwitch) return;
  copy = mkdtempSync(join(tmpdir(), "ears-limits-envs-"));
  chmodSync(copy, 0o755);
  cpSync(join(root, "package.json"), join(copy, "package.json"));
  cpSync(join(root, "dist"), join(copy, "dist"), { recursive: true });
  mkdirSync(join(copy, "fixtures"), { mode: 0o755 });
  for (const dir of ["hostile", "limits"]) cpSync(join(root, "fixtures", dir), join(copy, "fixtures", dir), { recursive: true });
});

afterAll(() => {
  if (copy !== "") rmSync(copy, { recursive: true, force: true });
});

interface Findings {
  uid: number;
  memory: { code: string | null; limits: Record<string, { enforcedBy: string | null }> };
  bomb: { code: string | null; message: string | null; limits: Record<string, { enforcedBy: string | null }> };
  fits: { code: string | null; outcome: unknown; limits: Record<string, { enforcedBy: string | null }> };
}

/** Runs the bombs' host under `prefix` (the environment), and returns its findings. */
async function hostIn(prefix: string[], sandbox: boolean): Promise<Findings> {
  const marker = uniqueMarker();
  try {
    const result = spawnSync(
      prefix[0]!,
      [...prefix.slice(1), process.execPath, join(copy, "fixtures/limits/bombs-host.mjs"), String(sandbox), marker],
      {
        cwd: copy,
        encoding: "utf8",
        timeout: 240_000,
      },
    );
    expect(result.status, `${result.stderr}\n${result.stdout}`).toBe(0);
    const findings = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as Findings;
    // The host is gone; nothing the bomb started outlived it.
    expect(await goneWithin(marker, 10_000)).toEqual([]);
    return findings;
  } finally {
    killAllWith(marker);
  }
}

const asUnprivileged = () => [setpriv!, "--reuid", UNPRIVILEGED, "--regid", UNPRIVILEGED, "--clear-groups"];
const noUserns = (uid: string) => [
  ...(uid === "0" ? [] : asUnprivileged()),
  bwrapPath!,
  "--unshare-user",
  "--disable-userns",
  "--uid",
  uid,
  "--gid",
  uid,
  "--die-with-parent",
  "--bind",
  "/",
  "/",
  // Read-only, as Docker mounts it in a container that is not privileged: no cgroup to write.
  "--ro-bind",
  "/sys/fs/cgroup",
  "/sys/fs/cgroup",
  "--dev",
  "/dev",
  "--proc",
  "/proc",
  "--",
];

describe.runIf(canSwitch)("limits in each environment: bombs end as MemoryLimit and ProcessLimit, the host unharmed", () => {
  const environments: { name: string; prefix: () => string[]; sandbox: boolean; uid: number; processes: string }[] = [
    { name: "non-root (setpriv 65533), unconfined", prefix: asUnprivileged, sandbox: false, uid: 65533, processes: "rlimit+watchdog" },
    ...(bwrapPath === undefined
      ? []
      : [
          { name: "non-root (setpriv 65533), sandboxed", prefix: asUnprivileged, sandbox: true, uid: 65533, processes: "rlimit+watchdog" },
          // uid 0 in a user namespace is the kernel's root user still: exempt from RLIMIT_NPROC, so the watchdog alone.
          {
            name: "no user namespaces, uid 0 without capabilities",
            prefix: () => noUserns("0"),
            sandbox: false,
            uid: 0,
            processes: "watchdog",
          },
          {
            name: "no user namespaces, non-root",
            prefix: () => noUserns(UNPRIVILEGED),
            sandbox: false,
            uid: 65533,
            processes: "rlimit+watchdog",
          },
        ]),
  ];
  for (const environment of environments) {
    it(environment.name, async () => {
      const found = await hostIn(environment.prefix(), environment.sandbox);
      expect(found.uid).toBe(environment.uid);
      expect(found.memory.code, JSON.stringify(found.memory)).toBe("MemoryLimit");
      expect(found.memory.limits.memoryBytes!.enforcedBy).toBe("rlimit+watchdog");
      expect(found.bomb.code, JSON.stringify(found.bomb)).toBe("ProcessLimit");
      expect(found.bomb.limits.processes!.enforcedBy).toBe(environment.processes);
      expect(found.fits.outcome, JSON.stringify(found.fits)).toBe(32);
      // Nothing a run asked for or got by default goes unnamed: each limit with a value has its mechanism.
      expect(found.fits.limits.memoryBytes!.enforcedBy).toBe("rlimit+watchdog");
      expect(found.fits.limits.tmpBytes!.enforcedBy).toBe(environment.sandbox ? "bubblewrap" : null);
    });
  }
});

interface DoctorJson {
  confined: boolean;
  environment: string;
  matrix: { guarantee: string; mechanism: string; ok: boolean; detail: string; fix?: string }[];
}

/** `ears doctor --json` from the copy, under `prefix`; its exit status and output. */
function doctorIn(prefix: string[]): { status: number | null; json: DoctorJson } {
  const command = [...prefix, process.execPath, join(copy, "dist/cli/main.js"), "doctor", "--json"];
  const result = spawnSync(command[0]!, command.slice(1), { cwd: copy, encoding: "utf8", timeout: 60_000 });
  expect(result.stdout, result.stderr).not.toBe("");
  return { status: result.status, json: JSON.parse(result.stdout) as DoctorJson };
}

describe.runIf(canSwitch && bwrapPath !== undefined)("ears doctor's deployment matrix, run for real in each environment", () => {
  const rows = (json: DoctorJson) => Object.fromEntries(json.matrix.map((row) => [row.guarantee, row]));

  it("as root: bubblewrap confines, the cgroup (or, without one, the fallback) bounds; exit 0", () => {
    const { status, json } = doctorIn([]);
    expect(status).toBe(0);
    const found = rows(json);
    expect(json.matrix.map((row) => row.guarantee)).toEqual([
      "file system",
      "network",
      "host sockets",
      "signals and /proc",
      "memory",
      "processes",
      "CPU",
      "/tmp",
      "sessions",
    ]);
    expect(found["file system"]).toMatchObject({ mechanism: "bubblewrap", ok: true });
    expect(found.memory!.mechanism).toMatch(/^cgroup v[12]$|^rlimit\+watchdog$/);
    expect(found.sessions).toMatchObject({ mechanism: "bubblewrap tmpfs", ok: true });
  });

  it("as non-root: confined by bubblewrap, memory and processes by rlimits and the watchdog with the delegation fix", () => {
    const { status, json } = doctorIn(asUnprivileged());
    expect(status).toBe(0);
    const found = rows(json);
    expect(found["file system"]).toMatchObject({ mechanism: "bubblewrap", ok: true });
    expect(found.memory).toMatchObject({ mechanism: "rlimit+watchdog", ok: false, fix: expect.any(String) });
    expect(found.processes).toMatchObject({ mechanism: "rlimit+watchdog" });
    expect(found.sessions).toMatchObject({ mechanism: "none", ok: false, fix: expect.any(String) });
  });

  for (const uid of ["0", UNPRIVILEGED]) {
    it(`without user namespaces (uid ${uid}): Landlock confines; each missing guarantee has its fix, none "see above"; exit 1`, () => {
      const { status, json } = doctorIn(noUserns(uid));
      // Not every guarantee holds here (no PID namespace, no cgroup): exit 1.
      expect(status).toBe(1);
      const found = rows(json);
      // bubblewrap cannot start; the Landlock helper confines (its self-test gives the ABI).
      expect(found["file system"]).toMatchObject({ mechanism: "landlock", ok: true });
      expect(found.memory!.mechanism).toBe("rlimit+watchdog");
      expect(found.processes!.mechanism).toBe(uid === "0" ? "watchdog" : "rlimit+watchdog");
      for (const row of json.matrix) {
        if (!row.ok) expect(row.fix, row.guarantee).toBeDefined();
        expect(row.fix ?? "").not.toMatch(/see the|above/);
      }
    });
  }
});
