/**
 * `ears doctor` says what a run here gets, and a run here gets it: in each environment the suite simulates (the
 * rows of docs/deploy.md's table, and the same without user namespaces with /sys/fs/cgroup read-only, as Docker
 * mounts it), the doctor's `--json` and a real default run (runCode, `sandbox: "auto"`) from the same install, under
 * the same prefix, name the same mechanism for the sandbox and for every resource limit; the matrix's rows say the
 * same in its words. The doctor plans the limits with the run's own `limitPlan` and the mechanism `planSandbox`
 * would pick, so a disagreement here is a second decision that crept in.
 */
import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bwrapPath } from "../helpers/has-bwrap.js";
import { makeApp } from "./app.js";
import { ENVIRONMENTS, NOBODY } from "./environments.js";

const root = process.platform === "linux" && process.getuid?.() === 0;

/** Without user namespaces, with the cgroup hierarchies read-only (Docker's ordinary container): no cgroup to write. */
const readOnlyCgroups = (uid: number) => [
  ...(uid === 0 ? [] : ["setpriv", "--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups"]),
  ...["bwrap", "--unshare-user", "--disable-userns", "--uid", String(uid), "--gid", String(uid)],
  ...["--bind", "/", "/", "--ro-bind", "/sys/fs/cgroup", "/sys/fs/cgroup", "--dev", "/dev", "--proc", "/proc", "--"],
];

const TABLE: Record<string, readonly string[]> = {
  ...ENVIRONMENTS,
  "no user namespaces, cgroups read-only (uid 0, no capabilities)": readOnlyCgroups(0),
  "no user namespaces, cgroups read-only (non-root)": readOnlyCgroups(NOBODY),
};

/**
 * A deployment's default run: what confined it and what enforced each limit. CPU time has no default (Infinity: its
 * report says nothing enforces it), so the run asks for one; the doctor says what would enforce each limit asked for.
 */
const HOST = `import { runCode } from "@posoco/ears/host";
const report = await runCode({ code: "return 6 * 7", limits: { cpuTimeMs: 60000 } });
const limits = Object.fromEntries(Object.entries(report.limits ?? {}).map(([name, state]) => [name, state.enforcedBy]));
process.stdout.write(JSON.stringify({ outcome: report.outcome?.structured ?? null, failure: report.failure ?? null,
  mechanism: report.sandbox?.mechanism ?? null, limits }) + "\\n");
`;

interface DoctorJson {
  limits: { limits: Record<string, { enforcedBy: string | null }> };
  matrix: { guarantee: string; mechanism: string }[];
}

/** Runs `argv` under the environment's prefix from the install; resolves with its stdout (any exit status). */
function runIn(
  app: string,
  prefix: readonly string[],
  argv: readonly string[],
): Promise<{ code: number | null; out: string; err: string }> {
  const [command, ...args] = [...prefix, process.execPath, ...argv];
  return new Promise((done, fail) => {
    const child = spawn(command!, args, { cwd: app, stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH, LANG: "C.UTF-8" } });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, out, err }));
  });
}

describe.skipIf(!(root && bwrapPath !== undefined))("ears doctor agrees with a real run, in every simulated environment", () => {
  let app: string;
  beforeAll(() => {
    app = makeApp();
    writeFileSync(join(app, "limits-host.mjs"), HOST, { mode: 0o644 });
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  /** The matrix's word for a limit's enforcer. */
  const named = (enforcer: string | null, tmp = false) =>
    enforcer === null ? "none" : tmp && enforcer === "bubblewrap" ? "bubblewrap tmpfs" : enforcer.replace(/^cgroup-/, "cgroup ");

  for (const [environment, prefix] of Object.entries(TABLE)) {
    it(`${environment}: the sandbox's mechanism and each limit's, as the doctor says them, are the run's`, async () => {
      const doctor = await runIn(app, prefix, [join(app, "node_modules/@posoco/ears/dist/cli/main.js"), "doctor", "--json"]);
      expect(doctor.out, doctor.err).not.toBe("");
      const said = JSON.parse(doctor.out) as DoctorJson;
      const host = await runIn(app, prefix, [join(app, "limits-host.mjs")]);
      expect(host.code, host.err).toBe(0);
      const ran = JSON.parse(host.out) as {
        outcome: unknown;
        failure: unknown;
        mechanism: string | null;
        limits: Record<string, string | null>;
      };
      expect(ran.failure, host.err).toBeNull();
      expect(ran.outcome).toBe(42);
      const rows = Object.fromEntries(said.matrix.map((row) => [row.guarantee, row.mechanism]));
      expect(rows["file system"]).toBe(ran.mechanism);
      const doctorLimits = Object.fromEntries(Object.entries(said.limits.limits).map(([name, state]) => [name, state.enforcedBy]));
      expect(doctorLimits).toEqual(ran.limits);
      expect([rows.memory, rows.processes, rows.CPU, rows["/tmp"]]).toEqual([
        named(ran.limits.memoryBytes!),
        named(ran.limits.processes!),
        named(ran.limits.cpuTimeMs!),
        named(ran.limits.tmpBytes!, true),
      ]);
    }, 120_000);
  }
});
