/**
 * The launcher (src/host/limits/launcher.ts): its command line as data (fast-check), then the same
 * command lines run for real by the machine's shells: the pid joins each cgroup.procs file before the
 * guest's first instruction, leaked descriptors are closed and kept ones are not, a failed join never
 * runs the guest, and the host's own scan finds exactly the descriptors it inherited without close-on-exec.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  LAUNCHER_FAILED,
  LAUNCHER_MARK,
  findShells,
  launcherCommand,
  leakedDescriptors,
  machineShells,
  type LaunchSteps,
} from "../../../src/host/limits/launcher.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const shells = { sh: "/bin/sh", bash: "/bin/bash", env: "/usr/bin/env" };
const base: LaunchSteps = {
  command: "/usr/bin/env",
  args: ["a b", "$HOME", "'"],
  closeFds: [],
  keepFds: [],
  cgroupJoins: [],
  rlimits: {},
  env: {},
  shells,
};
const fdArb = fc.integer({ min: 3, max: 60 });

/** The script a wrapped command runs (its -c argument), and the words after it. */
function wrapped(steps: LaunchSteps): { shell: string; script: string; rest: string[] } {
  const command = launcherCommand(steps);
  if ("problem" in command || !command.wrapped) throw new Error(`not wrapped: ${JSON.stringify(command)}`);
  const at = command.args.indexOf("-c");
  // bash reads no startup file (--norc, --posix), whatever the environment or stdin.
  expect(command.args.slice(0, at)).toEqual(command.command === shells.bash ? ["--norc", "--posix"] : []);
  return { shell: command.command, script: command.args[at + 1]!, rest: command.args.slice(at + 2) };
}

describe("the launcher's command line", () => {
  it("spawns the guest directly when there is nothing to do", () => {
    expect(launcherCommand(base)).toEqual({ command: base.command, args: base.args, wrapped: false });
    // Kept descriptors alone are nothing to do either.
    expect(launcherCommand({ ...base, closeFds: [3], keepFds: [3] })).toMatchObject({ wrapped: false });
  });

  it("closes every leaked descriptor but the kept ones, joins every cgroup and passes the command intact (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fdArb, { maxLength: 8 }),
        fc.uniqueArray(fdArb, { maxLength: 3 }),
        fc.array(
          fc.record({
            file: fc.string({ minLength: 1 }).map((s) => `/sys/fs/cgroup/x/${s}/tasks`),
            as: fc.constantFrom("thread" as const, "process" as const),
          }),
          { maxLength: 3 },
        ),
        fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        (closeFds, keepFds, cgroupJoins, cpuSeconds) => {
          const steps = { ...base, closeFds, keepFds, cgroupJoins, rlimits: cpuSeconds === undefined ? {} : { cpuSeconds } };
          const toClose = closeFds.filter((fd) => !keepFds.includes(fd));
          if (toClose.length === 0 && cgroupJoins.length === 0 && cpuSeconds === undefined) {
            expect(launcherCommand(steps)).toMatchObject({ wrapped: false });
            return;
          }
          const { shell, script, rest } = wrapped(steps);
          expect(shell).toBe(toClose.some((fd) => fd >= 10) ? shells.bash : shells.sh);
          // Paths and the command are positional parameters: never part of the script.
          expect(rest).toEqual(["ears-launcher", ...cgroupJoins.map((entry) => entry.file), base.command, ...base.args]);
          // Each join in order: the thread ("0") or the process ($$), as asked.
          const written = [...script.matchAll(/echo (0|\$\$) > "\$1"/g)].map((match) => (match[1] === "0" ? "thread" : "process"));
          expect(written).toEqual(cgroupJoins.map((entry) => entry.as));
          const closed = [...script.matchAll(/(\d+)<&-/g)].map((match) => Number(match[1]));
          expect(closed.sort((a, b) => a - b)).toEqual([...toClose].sort((a, b) => a - b));
          for (const fd of keepFds) expect(closed).not.toContain(fd);
          expect(script.includes(`ulimit -S -t ${cpuSeconds}`)).toBe(cpuSeconds !== undefined);
          // The guest is exec'd last, with its environment as given (env {} here: no SHLVL from bash).
          expect(script).toMatch(shell === shells.bash ? /\nexec \/usr\/bin\/env -u SHLVL "\$@"$/ : /\nexec "\$@"$/);
        },
      ),
      { seed: 18 },
    );
  });

  it("says what is missing when no shell can do it", () => {
    expect(launcherCommand({ ...base, closeFds: [40], shells: { sh: "/bin/sh" } })).toEqual({
      problem: "the launcher needs bash (to close descriptor 40), which this machine lacks",
    });
    expect(launcherCommand({ ...base, cgroupJoins: [{ file: "/x/cgroup.procs", as: "process" }], shells: {} })).toMatchObject({
      problem: expect.stringContaining("/bin/sh"),
    });
    // Below 10, bash does when sh is missing.
    expect(wrapped({ ...base, closeFds: [5], shells: { bash: "/bin/bash", env: "/usr/bin/env" } }).shell).toBe("/bin/bash");
    expect(launcherCommand({ ...base, closeFds: [40], shells: { bash: "/bin/bash" } })).toMatchObject({
      problem: expect.stringContaining("env"),
    });
  });
});

describe("the launcher's script, word for word", () => {
  const join = (file: string) =>
    `echo ${file === "/a/tasks" ? "0" : "$$"} > "$1" || ` +
    `{ echo "${LAUNCHER_MARK} could not join the run's cgroup ($1)" >&2; exit ${LAUNCHER_FAILED}; }; shift`;
  const rlimit = (soft: number) =>
    `{ ulimit -S -t ${soft} && ulimit -H -t ${soft + 1}; } || ` +
    `{ echo "${LAUNCHER_MARK} could not set RLIMIT_CPU" >&2; exit ${LAUNCHER_FAILED}; }`;
  const steps: LaunchSteps = {
    ...base,
    command: "/g",
    args: ["x"],
    // Duplicates, stdio and non-integers are never closed; kept ones neither.
    closeFds: [12, 4, 4, 2, 0, 1, 3.5, 7, Number.NaN],
    keepFds: [7],
    cgroupJoins: [
      { file: "/a/tasks", as: "thread" },
      { file: "/b/cgroup.procs", as: "process" },
    ],
    rlimits: { cpuSeconds: 2.2 },
    env: { PWD: "/w d", SHLVL: "3", A: "1" },
  };

  it("bash (a descriptor from 10 up): joins in order, closes in order, RLIMIT_CPU rounded up, PWD and SHLVL put back through env", () => {
    expect(launcherCommand(steps)).toEqual({
      command: "/bin/bash",
      args: [
        "--norc",
        "--posix",
        "-c",
        [
          join("/a/tasks"),
          join("/b"),
          "exec 4<&- 12<&-",
          rlimit(3),
          'export PWD="$1"; shift',
          'exec /usr/bin/env "SHLVL=$1" "${@:2}"',
        ].join("\n"),
        "ears-launcher",
        "/a/tasks",
        "/b/cgroup.procs",
        "/w d",
        "3",
        "/g",
        "x",
      ],
      wrapped: true,
    });
  });

  it("sh (descriptors below 10): no PWD is unset, exec runs the command as is; a fraction of a second is one second", () => {
    expect(launcherCommand({ ...steps, closeFds: [9, 3], env: { A: "1" }, rlimits: { cpuSeconds: 0.2 } })).toEqual({
      command: "/bin/sh",
      args: [
        "-c",
        [join("/a/tasks"), join("/b"), "exec 3<&- 9<&-", rlimit(1), "unset PWD", 'exec "$@"'].join("\n"),
        "ears-launcher",
        "/a/tasks",
        "/b/cgroup.procs",
        "/g",
        "x",
      ],
      wrapped: true,
    });
    const pwd = launcherCommand({ ...steps, closeFds: [], cgroupJoins: [], env: { PWD: "/p" }, rlimits: { cpuSeconds: 5 } });
    expect(pwd).toEqual({
      command: "/bin/sh",
      args: ["-c", [rlimit(5), 'export PWD="$1"; shift', 'exec "$@"'].join("\n"), "ears-launcher", "/p", "/g", "x"],
      wrapped: true,
    });
  });

  it("env null (bubblewrap sets the environment): nothing put back, no env program, even through bash", () => {
    expect(launcherCommand({ ...steps, env: null, cgroupJoins: [], rlimits: {}, shells: { bash: "/bin/bash" } })).toEqual({
      command: "/bin/bash",
      args: ["--norc", "--posix", "-c", ["exec 4<&- 12<&-", 'exec "$@"'].join("\n"), "ears-launcher", "/g", "x"],
      wrapped: true,
    });
    // SHLVL alone (no PWD) through bash: PWD unset, SHLVL dropped by env.
    const bashOnly = launcherCommand({ ...steps, env: { PWD: undefined }, cgroupJoins: [], rlimits: {}, closeFds: [10] });
    expect(bashOnly).toMatchObject({
      args: [
        "--norc",
        "--posix",
        "-c",
        ["exec 10<&-", "unset PWD", 'exec /usr/bin/env -u SHLVL "$@"'].join("\n"),
        "ears-launcher",
        "/g",
        "x",
      ],
    });
  });

  it("refuses what it cannot do, and says why", () => {
    expect(launcherCommand({ ...steps, shells: { sh: "/bin/sh", env: "/usr/bin/env" } })).toEqual({
      problem: "the launcher needs bash (to close descriptor 12), which this machine lacks",
    });
    expect(launcherCommand({ ...steps, closeFds: [], shells: {} })).toEqual({
      problem: "the launcher needs /bin/sh, which this machine lacks",
    });
    expect(launcherCommand({ ...steps, shells: { sh: "/bin/sh", bash: "/bin/bash" } })).toEqual({
      problem: "the launcher needs env (to start the guest from bash unchanged), which this machine lacks",
    });
    expect(launcherCommand({ ...steps, command: "/opt/a=b/guest" })).toEqual({
      problem: 'the launcher cannot start "/opt/a=b/guest" through env (its path has "=")',
    });
    // Through sh, or with env null, neither env nor a path without "=" is needed.
    expect(launcherCommand({ ...steps, closeFds: [4], command: "/opt/a=b/guest", shells: { sh: "/bin/sh" } })).toMatchObject({
      wrapped: true,
    });
    expect(launcherCommand({ ...steps, env: null, command: "/opt/a=b/guest", shells: { bash: "/bin/bash" } })).toMatchObject({
      wrapped: true,
    });
  });

  it("each single step makes a wrapped command; none makes a direct one", () => {
    const nothing = { ...steps, closeFds: [], cgroupJoins: [], rlimits: {} };
    expect(launcherCommand(nothing)).toEqual({ command: "/g", args: ["x"], wrapped: false });
    expect(launcherCommand({ ...nothing, closeFds: [3] })).toMatchObject({ wrapped: true });
    expect(launcherCommand({ ...nothing, cgroupJoins: steps.cgroupJoins })).toMatchObject({ wrapped: true });
    expect(launcherCommand({ ...nothing, rlimits: { cpuSeconds: 1 } })).toMatchObject({ wrapped: true });
    expect(launcherCommand({ ...nothing, closeFds: [0, 1, 2, 7] })).toMatchObject({ wrapped: false });
    for (const rlimits of [{ dataBytes: 1 }, { processes: 1 }, { fileBytes: 1 }]) {
      expect(launcherCommand({ ...nothing, rlimits }), JSON.stringify(rlimits)).toMatchObject({ wrapped: true });
    }
  });

  it("sets each rlimit in the shell's units (at least 1), or keeps a lower hard limit, else stops with a marked line", () => {
    const made = launcherCommand({
      ...steps,
      closeFds: [],
      cgroupJoins: [],
      env: null,
      rlimits: { dataBytes: 1025, fileBytes: 0.5, processes: 7 },
    });
    if (!("args" in made)) throw new Error(made.problem);
    const fail = (name: string) => `{ echo "${LAUNCHER_MARK} could not set ${name}" >&2; exit ${LAUNCHER_FAILED}; }`;
    expect(made.args[1]!.split("\n")).toStrictEqual([
      `{ ulimit -d 2 2>/dev/null || { h=$(ulimit -H -d 2>/dev/null); [ "$h" != unlimited ] && [ "$h" -le 2 ]; }; } || ` +
        fail("RLIMIT_DATA"),
      `{ ulimit -f 1 2>/dev/null || { h=$(ulimit -H -f 2>/dev/null); [ "$h" != unlimited ] && [ "$h" -le 1 ]; }; } || ` +
        fail("RLIMIT_FSIZE"),
      `{ ulimit -u 7 2>/dev/null || ulimit -p 7 2>/dev/null || { h=$(ulimit -H -u 2>/dev/null || ulimit -H -p 2>/dev/null); ` +
        `[ "$h" != unlimited ] && [ "$h" -le 7 ]; }; } || ${fail("RLIMIT_NPROC")}`,
      'exec "$@"',
    ]);
  });
});

describe.runIf(process.platform === "linux")("the launcher, run", () => {
  const dir = mkdtempSync(join(tmpdir(), "ears-launcher-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs steps with extra descriptors open in the launcher (at the given numbers) and returns its result. */
  function run(steps: Partial<LaunchSteps>, open: number[] = []) {
    const command = launcherCommand({ ...base, shells: machineShells(), ...steps });
    if ("problem" in command) throw new Error(command.problem);
    const stdio: (number | "pipe" | "ignore")[] = ["ignore", "pipe", "pipe"];
    for (const fd of open) {
      while (stdio.length < fd) stdio.push("ignore");
      stdio[fd] = openSync(root, "r");
    }
    return spawnSync(command.command, command.args, { stdio, encoding: "utf8", env: { ...steps.env } as NodeJS.ProcessEnv });
  }

  it("writes its own pid (the guest's, after exec) into each cgroup.procs, and 0 into each tasks file, before the guest runs", () => {
    const procs = [join(dir, "a.procs"), join(dir, "b.procs")];
    const tasks = join(dir, "tasks");
    const cgroupJoins = [
      { file: procs[0]!, as: "process" as const },
      { file: tasks, as: "thread" as const },
      { file: procs[1]!, as: "process" as const },
    ];
    const result = run({ command: "/bin/sh", args: ["-c", "echo $$"], cgroupJoins });
    expect(result.status).toBe(0);
    for (const file of procs) expect(readFileSync(file, "utf8").trim()).toBe(result.stdout.trim());
    expect(readFileSync(tasks, "utf8")).toBe("0\n");
  });

  it("closes the leaked descriptors, below 10 and above, and keeps the kept one", () => {
    const result = run({ command: "/bin/ls", args: ["/proc/self/fd"], closeFds: [5, 7, 40], keepFds: [7] }, [5, 7, 40]);
    expect(result.status, result.stderr).toBe(0);
    const fds = result.stdout.split(/\s+/).filter(Boolean).map(Number);
    expect(fds).toContain(7);
    expect(fds).not.toContain(5);
    expect(fds).not.toContain(40);
    // Without the launcher they would all be there: the test sees what it claims to.
    const bare = run(
      { command: "/bin/ls", args: ["/proc/self/fd"], cgroupJoins: [{ file: join(dir, "c.procs"), as: "process" }] },
      [5, 7, 40],
    );
    expect(bare.stdout.split(/\s+/).map(Number)).toEqual(expect.arrayContaining([5, 7, 40]));
  });

  it("never runs the guest when a cgroup cannot be joined: a status and a marked line of its own", () => {
    const proof = join(dir, "ran");
    const result = run({
      command: "/bin/touch",
      args: [proof],
      cgroupJoins: [{ file: join(dir, "missing", "cgroup.procs"), as: "process" }],
    });
    expect(result.status).toBe(LAUNCHER_FAILED);
    expect(result.stderr).toContain(`${LAUNCHER_MARK} could not join the run's cgroup (${join(dir, "missing", "cgroup.procs")})`);
    expect(() => readFileSync(proof)).toThrow();
  });

  it("gives the guest exactly the environment it was given, through sh and through bash", () => {
    for (const env of [{ A: "1" }, { A: "1", PWD: "/x y", SHLVL: "7" }]) {
      for (const closeFds of [[5], [40]]) {
        const result = run({ command: "/usr/bin/env", args: [], closeFds, env }, closeFds);
        expect(result.status, result.stderr).toBe(0);
        expect(result.stdout.trim().split("\n").sort(), `closing ${closeFds[0]}`).toEqual(
          Object.entries(env)
            .map(([k, v]) => `${k}=${v}`)
            .sort(),
        );
      }
    }
  });

  it("when the command sets the environment itself (env null: bubblewrap), bash execs it with no env program between", () => {
    const noEnv = { ...machineShells(), env: join(dir, "no-such-env") };
    const shown = run({ command: "/bin/echo", args: ["ran"], closeFds: [40], env: null, shells: noEnv }, [40]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toBe("ran\n");
    // An exact environment through bash needs env: the same run fails without one, so the test sees what it claims.
    const exact = run({ command: "/bin/echo", args: ["ran"], closeFds: [40], env: {}, shells: noEnv }, [40]);
    expect(exact.status).not.toBe(0);
  });

  it("bash runs no startup file: not $BASH_ENV, which still reaches the guest", () => {
    const sourced = join(dir, "sourced");
    const startup = join(dir, "startup.sh");
    writeFileSync(startup, `touch ${sourced}\n`);
    const result = run({ command: "/usr/bin/env", args: [], closeFds: [40], env: { BASH_ENV: startup } }, [40]);
    expect(result.stdout.trim()).toBe(`BASH_ENV=${startup}`);
    expect(existsSync(sourced)).toBe(false);
  });

  it("sets RLIMIT_CPU for the guest", () => {
    const result = run({ command: "/bin/sh", args: ["-c", "ulimit -S -t; ulimit -H -t"], rlimits: { cpuSeconds: 3 } });
    expect(result.stdout.trim().split("\n")).toEqual(["3", "4"]);
  });

  it("sets RLIMIT_DATA, RLIMIT_FSIZE and RLIMIT_NPROC (soft and hard, rounded up to the shell's units) through sh and through bash", () => {
    const rlimits = { dataBytes: 300 * 1024 * 1024 + 1, fileBytes: 1000, processes: 4321 };
    // Descriptor 40 makes the launcher bash (dash takes single digits only); none, sh.
    for (const open of [[], [40]]) {
      const result = run({ command: "/bin/cat", args: ["/proc/self/limits"], rlimits, closeFds: open }, open);
      expect(result.status, result.stderr).toBe(0);
      const limit = (name: string) => new RegExp(`^${name}\\s+(\\d+)\\s+(\\d+)`, "m").exec(result.stdout)?.slice(1);
      expect(limit("Max data size")).toEqual([String(300 * 1024 * 1024 + 1024), String(300 * 1024 * 1024 + 1024)]);
      expect(limit("Max file size")).toEqual(["1024", "1024"]);
      expect(limit("Max processes")).toEqual(["4321", "4321"]);
    }
  });

  it("a file write past RLIMIT_FSIZE fails inside the guest (EFBIG; Node ignores SIGXFSZ)", () => {
    const file = join(dir, "big");
    const script =
      `try { require("fs").writeFileSync(${JSON.stringify(file)}, Buffer.alloc(4096)); console.log("written") } ` +
      "catch (e) { console.log(e.code) }";
    const result = run({ command: process.execPath, args: ["-e", script], rlimits: { fileBytes: 1024 }, env: {} });
    expect(result.stdout.trim()).toBe("EFBIG");
    expect(statSync(file).size).toBe(1024);
  });

  // A hard limit above the one the launcher's parent set cannot be raised but by root: run as another uid.
  it.runIf(process.getuid?.() === 0 && existsSync("/usr/bin/setpriv"))(
    "a lower hard limit the host already has stands (it cannot be raised, and is stricter), through sh and bash",
    () => {
      for (const open of [[], [40]]) {
        const lowered = launcherCommand({
          ...base,
          shells: machineShells(),
          command: "/bin/cat",
          args: ["/proc/self/limits"],
          closeFds: open,
          rlimits: { dataBytes: 1 << 30, processes: 100_000 },
        });
        if ("problem" in lowered) throw new Error(lowered.problem);
        const stdio: (number | "pipe" | "ignore")[] = ["ignore", "pipe", "pipe"];
        for (const fd of open) {
          while (stdio.length < fd) stdio.push("ignore");
          stdio[fd] = openSync(root, "r");
        }
        const result = spawnSync(
          "/bin/sh",
          [
            "-c",
            'ulimit -d 512000 && ulimit -p 5000 && exec setpriv --reuid 65534 --regid 65534 --clear-groups "$@"',
            "sh",
            lowered.command,
            ...lowered.args,
          ],
          { encoding: "utf8", stdio },
        );
        expect(result.status, result.stderr).toBe(0);
        expect(result.stdout).toMatch(/^Max data size\s+524288000\s+524288000/m);
        expect(result.stdout).toMatch(/^Max processes\s+5000\s+5000/m);
      }
    },
  );
});

describe("finding the shells and the leaked descriptors, as data", () => {
  it("takes the first usual place of each program that is an executable file", () => {
    expect(findShells(() => true)).toStrictEqual({ sh: "/bin/sh", bash: "/bin/bash", env: "/usr/bin/env" });
    expect(findShells((path) => path.startsWith("/usr/"))).toStrictEqual({ sh: "/usr/bin/sh", bash: "/usr/bin/bash", env: "/usr/bin/env" });
    expect(findShells((path) => path === "/bin/env")).toStrictEqual({ env: "/bin/env" });
    expect(findShells(() => false)).toStrictEqual({});
  });

  it("leaked: from 3 up, open without close-on-exec (octal flags), in order; what cannot be read is none", () => {
    const info: Record<number, string> = {
      0: "pos:\t0\nflags:\t02\n",
      2: "flags:\t0100002\n",
      3: "pos:\t0\nflags:\t02\nmnt_id:\t1\n",
      4: "pos:\t0\nflags:\t0100000\n",
      10: "flags: 02\n",
      12: "pos:\t0\nflags:\t02100002\nmnt_id:\t1\n",
      40: "flags:\t00\nino:\t5\n",
      41: "noflags:\t0\n",
      42: "xflags:\t0\n",
    };
    const table = { list: () => ["40", "0", "2", "3", "4", "x", "10", "12", "41", "42", "99", "1.5"], info: (fd: number) => info[fd] };
    expect(leakedDescriptors(table)).toStrictEqual([3, 4, 10, 40]);
    expect(leakedDescriptors({ list: () => undefined, info: () => "flags:\t0\n" })).toStrictEqual([]);
  });
});

describe.runIf(["/bin/sh", "/bin/bash", "/usr/bin/env"].every((path) => existsSync(path)))("the machine's shells", () => {
  it("are found at their usual places, once", () => {
    const found = machineShells();
    expect(found).toStrictEqual({ sh: "/bin/sh", bash: "/bin/bash", env: "/usr/bin/env" });
    expect(machineShells()).toBe(found);
  });
});

describe.runIf(process.platform === "linux")("finding leaked descriptors", () => {
  it("in this process: exactly the descriptors from 3 up that a child inherits (what a shell started now has open)", () => {
    const child = spawnSync("/bin/sh", ["-c", "ls /proc/$$/fd"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const inherited = child.stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .filter((fd) => fd >= 3)
      .sort((a, b) => a - b);
    expect(leakedDescriptors()).toEqual(inherited);
  });

  it("finds the descriptors a process inherited without close-on-exec, and none of Node's own", () => {
    const script = `import("${join(root, "src/host/limits/launcher.ts")}").then((m) => console.log(JSON.stringify(m.leakedDescriptors())))`;
    const clean = spawnSync(process.execPath, ["--import", "tsx", "-e", script], { encoding: "utf8", cwd: root });
    expect(clean.stderr).toBe("");
    // Whatever started this test run may have leaked descriptors into it (and so into the child): those
    // count, Node's own (its event loop, its pipes, tsx's) never do.
    const inherited = JSON.parse(clean.stdout) as number[];
    expect(inherited).not.toContain(40);
    expect(inherited).not.toContain(41);
    // As a shell starts a host with descriptors of its own (Node itself marks its low ones close-on-exec at start).
    const leaky = spawnSync("/bin/bash", ["-c", 'exec "$0" --import tsx -e "$1" 40</ 41<package.json', process.execPath, script], {
      encoding: "utf8",
      cwd: root,
    });
    expect(JSON.parse(leaky.stdout)).toEqual([...inherited, 40, 41].sort((a, b) => a - b));
  });
});
