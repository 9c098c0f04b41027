/**
 * A run's cgroup (src/host/limits/cgroup.ts, RunCgroup) on a cgroup file system given as data
 * (fake-cgroup-files.ts): which directories it makes and where, which limits it writes, what it reads
 * back, which processes it kills and which directories it removes. Nothing here reaches the machine's
 * cgroups or processes, so these tests run under Stryker (vitest.mutate.config.ts); the spawned proof
 * is limits.test.ts. Nothing of src/ is called while the suite is collected.
 */
import { basename, dirname, join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { enableControllers, HOST_LEAF, isRunCgroupDir, RunCgroup, type CgroupPlan } from "../../../src/host/limits/cgroup.js";
import { addProcesses, fakeCgroupFiles } from "./fake-cgroup-files.js";

const V2_PARENT = "/sys/fs/cgroup/app.slice/ears.scope";
const V1_PARENTS = { memory: "/sys/fs/cgroup/memory/host", pids: "/sys/fs/cgroup/pids", cpu: "/sys/fs/cgroup/cpuacct" };
const v2 = (enable: ("memory" | "pids" | "cpu")[] = []): Exclude<CgroupPlan, { version: null }> => ({
  version: "v2",
  parent: V2_PARENT,
  controllers: ["memory", "pids", "cpu"],
  enable,
});
const v1: Exclude<CgroupPlan, { version: null }> = { version: "v1", parents: V1_PARENTS };
const runName = () => new RegExp(`^ears-${process.pid}-\\d+-[0-9a-z]*$`);

describe("creating a run's cgroup", () => {
  it("v2: one directory named for this host under the parent, the limits written, swap off where the kernel has it", () => {
    const fake = fakeCgroupFiles({ dirs: [V2_PARENT], knobs: ["memory.swap.max"] });
    const cgroup = RunCgroup.create(v2(), { memoryBytes: 4096, processes: 7 }, fake);
    expect(cgroup.version).toBe("v2");
    const [dir, ...others] = cgroup.directories;
    expect(others).toStrictEqual([]);
    expect(dirname(dir!)).toBe(V2_PARENT);
    expect(basename(dir!)).toMatch(runName());
    expect(cgroup.dirs).toStrictEqual({ memory: dir, pids: dir, cpu: dir });
    expect(fake.written).toStrictEqual([`${dir}/memory.max <- 4096`, `${dir}/memory.swap.max <- 0`, `${dir}/pids.max <- 7`]);
    expect(cgroup.joins).toStrictEqual([{ file: `${dir}/cgroup.procs`, as: "process" }]);
    expect(["memory", "pids", "cpu"].map((c) => cgroup.has(c as "memory"))).toStrictEqual([true, true, true]);
  });

  it("v2: controllers switched on first when the plan says so; no swap knob, no swap write; no limits, nothing written", () => {
    const fake = fakeCgroupFiles({ dirs: [V2_PARENT] });
    const cgroup = RunCgroup.create(v2(["pids", "cpu"]), { memoryBytes: 10 }, fake);
    const [dir] = cgroup.directories;
    expect(fake.written).toStrictEqual([`${V2_PARENT}/cgroup.subtree_control <- +pids +cpu`, `${dir}/memory.max <- 10`]);
    const bare = fakeCgroupFiles({ dirs: [V2_PARENT], knobs: ["memory.swap.max"] });
    const accounting = RunCgroup.create({ version: "v2", parent: V2_PARENT, controllers: ["memory", "pids"], enable: [] }, {}, bare);
    expect(bare.written).toStrictEqual([]);
    expect(accounting.has("cpu")).toBe(false);
    expect(accounting.has("memory")).toBe(true);
  });

  it("v1: a directory per hierarchy with the same name, memory and memory+swap limits, the pids limit, joined through tasks", () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS), knobs: ["memory.memsw.limit_in_bytes"] });
    const cgroup = RunCgroup.create(v1, { memoryBytes: 4096, processes: 7 }, fake);
    expect(cgroup.version).toBe("v1");
    const name = basename(cgroup.dirs.memory!);
    expect(name).toMatch(runName());
    expect(cgroup.dirs).toStrictEqual({
      memory: join(V1_PARENTS.memory, name),
      pids: join(V1_PARENTS.pids, name),
      cpu: join(V1_PARENTS.cpu, name),
    });
    expect(fake.written).toStrictEqual([
      `${cgroup.dirs.memory}/memory.limit_in_bytes <- 4096`,
      `${cgroup.dirs.memory}/memory.memsw.limit_in_bytes <- 4096`,
      `${cgroup.dirs.pids}/pids.max <- 7`,
    ]);
    expect(cgroup.joins).toStrictEqual(cgroup.directories.map((dir) => ({ file: `${dir}/tasks`, as: "thread" })));
  });

  it("v1 with only some hierarchies: limits without their controller are not written; each run gets a new name", () => {
    const fake = fakeCgroupFiles({ dirs: [V1_PARENTS.cpu] });
    const cgroup = RunCgroup.create({ version: "v1", parents: { cpu: V1_PARENTS.cpu } }, { memoryBytes: 1, processes: 1 }, fake);
    expect(fake.written).toStrictEqual([]);
    expect(cgroup.has("memory")).toBe(false);
    expect(cgroup.has("pids")).toBe(false);
    const again = RunCgroup.create({ version: "v1", parents: { cpu: V1_PARENTS.cpu } }, {}, fake);
    expect(again.directories).not.toStrictEqual(cgroup.directories);
  });

  it("leaves nothing behind when a directory cannot be made or a limit cannot be written, and says why", () => {
    const noPids = fakeCgroupFiles({ dirs: [V1_PARENTS.memory, V1_PARENTS.cpu] });
    expect(() => RunCgroup.create(v1, {}, noPids)).toThrow(/ENOENT/);
    expect([...noPids.dirs].sort()).toStrictEqual([V1_PARENTS.cpu, V1_PARENTS.memory]);
    const refusing = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS), refuse: (path) => path.endsWith("/pids.max") });
    expect(() => RunCgroup.create(v1, { processes: 3 }, refusing)).toThrow(/EACCES/);
    expect([...refusing.dirs].sort()).toStrictEqual(Object.values(V1_PARENTS).sort());
    // Removed in the reverse order of making.
    const name = basename(refusing.removed[0]!);
    expect(refusing.removed).toStrictEqual([V1_PARENTS.cpu, V1_PARENTS.pids, V1_PARENTS.memory].map((parent) => join(parent, name)));
    const v2Refusing = fakeCgroupFiles({ dirs: [V2_PARENT], refuse: (path) => path.endsWith("/memory.max") });
    expect(() => RunCgroup.create(v2(), { memoryBytes: 3 }, v2Refusing)).toThrow(/EACCES/);
    expect([...v2Refusing.dirs]).toStrictEqual([V2_PARENT]);
  });
});

describe("reading a run's counters", () => {
  it("v2: CPU from cpu.stat (µs), memory now and at peak, OOM kills from memory.events, tasks now and at peak, processes now", () => {
    const fake = fakeCgroupFiles({ dirs: [V2_PARENT] });
    const cgroup = RunCgroup.create(v2(), {}, fake);
    const [dir] = cgroup.directories;
    expect(cgroup.read()).toStrictEqual({});
    fake.files.set(`${dir}/cpu.stat`, "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
    fake.files.set(`${dir}/memory.current`, "4096\n");
    fake.files.set(`${dir}/memory.peak`, "1048576\n");
    fake.files.set(`${dir}/memory.events`, "low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\n");
    fake.files.set(`${dir}/pids.current`, "3\n");
    fake.files.set(`${dir}/pids.peak`, "5\n");
    // Processes are cgroup.procs' thread-group leaders; the pids controller counts their threads too.
    fake.files.set(`${dir}/cgroup.procs`, "40\n41\n");
    expect(cgroup.read()).toStrictEqual({
      cpuMs: 2.5,
      memoryBytes: 4096,
      peakMemoryBytes: 1048576,
      oomKills: 2,
      tasks: 3,
      peakTasks: 5,
      processes: 2,
    });
  });

  it("v1: CPU from cpuacct.usage (ns), memory from usage_in_bytes and max_usage_in_bytes, OOM kills from oom_control", () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS) });
    const cgroup = RunCgroup.create(v1, {}, fake);
    const { memory, pids, cpu } = cgroup.dirs;
    fake.files.set(`${cpu}/cpuacct.usage`, "3500000\n");
    fake.files.set(`${memory}/memory.usage_in_bytes`, "100\n");
    fake.files.set(`${memory}/memory.max_usage_in_bytes`, "200\n");
    fake.files.set(`${memory}/memory.oom_control`, "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
    fake.files.set(`${pids}/pids.current`, "2\n");
    fake.files.set(`${pids}/pids.peak`, "9\n");
    // v1 may list a process twice; a hierarchy that has not seen a joining process yet lists fewer.
    fake.files.set(`${pids}/cgroup.procs`, "7\n8\n7\n");
    fake.files.set(`${memory}/cgroup.procs`, "7\n");
    expect(cgroup.read()).toStrictEqual({
      cpuMs: 3.5,
      memoryBytes: 100,
      peakMemoryBytes: 200,
      oomKills: 1,
      tasks: 2,
      peakTasks: 9,
      processes: 2,
    });
    // v2's file names mean nothing on v1.
    fake.files.set(`${cpu}/cpu.stat`, "usage_usec 1\n");
    fake.files.set(`${memory}/memory.peak`, "1\n");
    expect(cgroup.read().cpuMs).toBe(3.5);
    expect(cgroup.read().peakMemoryBytes).toBe(200);
  });

  it("reads only the controllers the cgroup has (v1 with pids alone, v2 with memory alone)", () => {
    const fake = fakeCgroupFiles({ dirs: [V1_PARENTS.pids, V2_PARENT] });
    const pidsOnly = RunCgroup.create({ version: "v1", parents: { pids: V1_PARENTS.pids } }, {}, fake);
    fake.files.set(`${pidsOnly.dirs.pids}/pids.current`, "4");
    expect(pidsOnly.read()).toStrictEqual({ tasks: 4 });
    const memoryOnly = RunCgroup.create({ version: "v2", parent: V2_PARENT, controllers: ["memory"], enable: [] }, {}, fake);
    fake.files.set(`${memoryOnly.dirs.memory}/memory.current`, "8");
    fake.files.set(`${memoryOnly.dirs.memory}/pids.current`, "1");
    fake.files.set(`${memoryOnly.dirs.memory}/cpu.stat`, "usage_usec 1");
    expect(memoryOnly.read()).toStrictEqual({ memoryBytes: 8 });
  });

  it("a counter that is absent or not a number is left out, never guessed", () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS) });
    const cgroup = RunCgroup.create(v1, {}, fake);
    const { memory, pids, cpu } = cgroup.dirs;
    fake.files.set(`${cpu}/cpuacct.usage`, "max\n");
    fake.files.set(`${memory}/memory.usage_in_bytes`, "12 34");
    fake.files.set(`${memory}/memory.max_usage_in_bytes`, "-1");
    fake.files.set(`${pids}/pids.current`, "");
    fake.files.set(`${pids}/pids.peak`, " 7 ");
    expect(cgroup.read()).toStrictEqual({ peakTasks: 7 });
    const only = RunCgroup.create(
      { version: "v2", parent: V2_PARENT, controllers: ["pids"], enable: [] },
      {},
      fakeCgroupFiles({ dirs: [V2_PARENT] }),
    );
    expect(only.read()).toStrictEqual({});
  });
});

describe("killing what is in a run's cgroup, and removing it", () => {
  const pidArb = fc.oneof(fc.integer({ min: -3, max: 99_999 }), fc.constantFrom(0, 1, process.pid));

  it("kills exactly the processes listed in each of its cgroup.procs, never 0, 1, negatives or this host (fast-check)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(pidArb, { maxLength: 8 }), fc.uniqueArray(pidArb, { maxLength: 8 }), (inMemory, inPids) => {
        const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS) });
        const cgroup = RunCgroup.create(v1, {}, fake);
        addProcesses(fake, cgroup.dirs.memory!, inMemory);
        addProcesses(fake, cgroup.dirs.pids!, inPids);
        // The host's own cgroup holds processes too (this host among them): never touched.
        addProcesses(fake, V1_PARENTS.pids, [process.pid, 4242]);
        cgroup.killAll();
        const expected = [...inMemory, ...inPids].filter((pid) => pid > 1 && pid !== process.pid);
        expect([...fake.killed].sort((a, b) => a - b)).toStrictEqual([...expected].sort((a, b) => a - b));
      }),
      { seed: 2424 },
    );
  });

  it("reads cgroup.procs by words and ignores those that are not pids", () => {
    const fake = fakeCgroupFiles({ dirs: [V2_PARENT] });
    const cgroup = RunCgroup.create(v2(), {}, fake);
    fake.files.set(`${cgroup.directories[0]}/cgroup.procs`, "\n  12\tx -5 13 2.5\n\n14");
    cgroup.killAll();
    expect(fake.killed).toStrictEqual([12, 13, 14]);
  });

  it("v2 with cgroup.kill: one write kills them all; v1 never uses it (it has none), and v2 without it kills each pid", () => {
    const withKill = fakeCgroupFiles({ dirs: [V2_PARENT], knobs: ["cgroup.kill"] });
    const cgroup = RunCgroup.create(v2(), {}, withKill);
    addProcesses(withKill, cgroup.directories[0]!, [10, 11]);
    cgroup.killAll();
    expect(withKill.written).toStrictEqual([`${cgroup.directories[0]}/cgroup.kill <- 1`]);
    expect(withKill.killed).toStrictEqual([]);
    const v1Fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS), knobs: ["cgroup.kill"] });
    const old = RunCgroup.create(v1, {}, v1Fake);
    addProcesses(v1Fake, old.dirs.pids!, [20]);
    old.killAll();
    expect(v1Fake.written).toStrictEqual([]);
    expect(v1Fake.killed).toStrictEqual([20]);
    const without = fakeCgroupFiles({ dirs: [V2_PARENT] });
    const plain = RunCgroup.create(v2(), {}, without);
    addProcesses(without, plain.directories[0]!, [30]);
    plain.killAll();
    expect(without.killed).toStrictEqual([30]);
  });

  it("removes every directory once its processes are killed; a process still dying is waited for", async () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS), dying: [50] });
    const cgroup = RunCgroup.create(v1, {}, fake);
    addProcesses(fake, cgroup.dirs.pids!, [50, 51]);
    addProcesses(fake, cgroup.dirs.memory!, [50]);
    expect(await cgroup.remove(5000)).toBe(true);
    expect([...fake.dirs].sort()).toStrictEqual(Object.values(V1_PARENTS).sort());
    expect(fake.killed.filter((pid) => pid === 50).length).toBeGreaterThanOrEqual(2);
    // Gone already: nothing to do, and still true.
    expect(await cgroup.remove(0)).toBe(true);
  });

  it("a directory the kernel keeps busy past the deadline: false, and the others are removed", async () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS) });
    const cgroup = RunCgroup.create(v1, {}, fake);
    // A pid this host may not kill (its own) keeps the pids cgroup busy.
    addProcesses(fake, cgroup.dirs.pids!, [process.pid]);
    expect(await cgroup.remove(30)).toBe(false);
    expect(fake.dirs.has(cgroup.dirs.pids!)).toBe(true);
    expect(fake.dirs.has(cgroup.dirs.memory!)).toBe(false);
    expect(fake.removed.filter((dir) => dir === cgroup.dirs.pids).length).toBeGreaterThanOrEqual(2);
  });

  it("never kills in, nor removes, a directory that is not a run's cgroup of this host, even if its table is changed", async () => {
    const fake = fakeCgroupFiles({ dirs: Object.values(V1_PARENTS) });
    const cgroup = RunCgroup.create(v1, {}, fake);
    const own = cgroup.dirs.memory!;
    addProcesses(fake, own, [60]);
    addProcesses(fake, V1_PARENTS.pids, [61, process.pid]);
    cgroup.dirs.pids = V1_PARENTS.pids;
    cgroup.killAll();
    expect(fake.killed).toStrictEqual([60]);
    expect(await cgroup.remove(0)).toBe(false);
    expect(fake.removed).not.toContain(V1_PARENTS.pids);
    expect(fake.dirs.has(V1_PARENTS.pids)).toBe(true);
    expect(fake.dirs.has(own)).toBe(false);
  });
});

describe("which directories are a run's cgroup of this host", () => {
  it("exactly those named ears-<this pid>-<sequence>-<random> (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory/a b", "/x"),
        fc.nat(),
        fc.stringMatching(/^[0-9a-z]{0,6}$/),
        fc.integer({ min: 2, max: 4_000_000 }),
        (parent, sequence, random, otherPid) => {
          const own = `${parent}/ears-${process.pid}-${sequence}-${random}`;
          expect(isRunCgroupDir(own)).toBe(true);
          expect(isRunCgroupDir(own, process.pid)).toBe(true);
          expect(isRunCgroupDir(`${parent}/ears-${otherPid}-${sequence}-${random}`)).toBe(otherPid === process.pid);
          expect(isRunCgroupDir(own, otherPid)).toBe(otherPid === process.pid);
          expect(isRunCgroupDir(parent)).toBe(false);
          expect(isRunCgroupDir(`${own}x!`)).toBe(false);
          expect(isRunCgroupDir(`${parent}/x-ears-${process.pid}-${sequence}-${random}`)).toBe(false);
          expect(isRunCgroupDir(`${parent}/ears-${process.pid}-${sequence}`)).toBe(false);
          expect(isRunCgroupDir(`${parent}/ears-${process.pid}-x-${random}`)).toBe(false);
        },
      ),
      { seed: 24 },
    );
    expect(isRunCgroupDir(`/sys/fs/cgroup/${HOST_LEAF}`)).toBe(false);
    expect(isRunCgroupDir(`/sys/fs/cgroup/ears-1${process.pid}-1-a`)).toBe(false);
    expect(isRunCgroupDir(`/sys/fs/cgroup/ears-${process.pid}1-1-a`)).toBe(false);
  });
});

describe("switching controllers on when the host's cgroup already has its leaf", () => {
  it("a leaf made by an earlier host is used as it is; any other mkdir failure is thrown", () => {
    const fake = fakeCgroupFiles({ dirs: [V2_PARENT, `${V2_PARENT}/${HOST_LEAF}`] });
    addProcesses(fake, V2_PARENT, [300]);
    let busy = true;
    const fs = {
      ...fake,
      write(path: string, text: string) {
        if (path.endsWith("subtree_control") && busy) {
          busy = false;
          throw Object.assign(new Error("EBUSY"), { code: "EBUSY" });
        }
        fake.write(path, text);
      },
    };
    enableControllers(V2_PARENT, ["memory"], fs);
    expect(fake.written).toStrictEqual([`${V2_PARENT}/${HOST_LEAF}/cgroup.procs <- 300`, `${V2_PARENT}/cgroup.subtree_control <- +memory`]);
    const broken = fakeCgroupFiles({ dirs: [V2_PARENT], refuseMkdir: () => true });
    const busyAlways = {
      ...broken,
      write: () => {
        throw Object.assign(new Error("EBUSY"), { code: "EBUSY" });
      },
    };
    expect(() => enableControllers(V2_PARENT, ["memory"], busyAlways)).toThrow(/EACCES/);
  });
});
