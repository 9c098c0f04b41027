/**
 * A bounded directory in-process (src/host/workspace/bounded-dir.ts): the bounds it asks the kernel for, the
 * mount and umount command lines, what a failure says, the fallback, shared propagation, the watchdog's cover,
 * and removal. The machine is reached only through a {@link MountSystem} of stand-ins: shell scripts in a
 * temporary directory that record what they were asked (and fail when told to), and a cover that records
 * which directories it was given. Nothing is mounted: that the kernel enforces the bounds (ENOSPC in a body)
 * is work-dir.attack.test.ts's, on a root host, in `npm test` only. This file runs under Stryker.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  bindMount,
  boundOptions,
  filesFor,
  hostMounts,
  makeBoundedDir,
  mountBounded,
  unmountBounded,
  type MountSystem,
} from "../../../src/host/workspace/bounded-dir.js";

const KiB = 1024;
const MiB = 1024 * KiB;

describe("a bounded directory's bounds", () => {
  it("allows one file per 4 KiB of its bytes, never fewer than 1024 nor more than 1,048,576", () => {
    expect(filesFor(0)).toBe(1024);
    expect(filesFor(4096 * 1024 - 1)).toBe(1024);
    expect(filesFor(4096 * 1025 + 4095)).toBe(1025);
    expect(filesFor(256 * MiB)).toBe(65536);
    expect(filesFor(4096 * 2 ** 20)).toBe(2 ** 20);
    expect(filesFor(4096 * 2 ** 20 + 4096)).toBe(2 ** 20);
  });

  it("asks tmpfs for whole KiB (at least one), the file bound, mode 0700, nosuid and nodev", () => {
    expect(boundOptions({ bytes: 8 * MiB, files: 2048 })).toBe("size=8192k,nr_inodes=2048,mode=0700,nosuid,nodev");
    expect(boundOptions({ bytes: 2047, files: 1024 })).toBe("size=1k,nr_inodes=1024,mode=0700,nosuid,nodev");
    expect(boundOptions({ bytes: 100, files: 1024 })).toBe("size=1k,nr_inodes=1024,mode=0700,nosuid,nodev");
  });
});

describe.runIf(process.platform === "linux")("a bounded directory through stand-in mount programs", () => {
  let bin: string;
  /** Each call of a stand-in: its program's name, then its arguments; and HOME as it saw it (unset: none was passed). */
  const calls = () => {
    const log = join(bin, "calls");
    return existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n") : [];
  };
  /** Makes the stand-in `name` fail, writing `stderr` (empty: nothing) and exiting 32, or succeed again (undefined). */
  const failing = (name: "mount" | "umount", stderr: string | undefined) => {
    const flag = join(bin, `${name}.fails`);
    if (stderr === undefined) rmSync(flag, { force: true });
    else writeFileSync(flag, stderr);
  };
  let covered: string[];
  let forgotten: string[];
  let system: MountSystem;

  beforeAll(() => {
    bin = mkdtempSync(join(tmpdir(), "ears-bounded-test-bin-"));
    for (const name of ["mount", "umount"]) {
      const script = join(bin, name);
      writeFileSync(
        script,
        [
          "#!/bin/sh",
          `echo "${name} $* (HOME=\${HOME-unset})" >> '${join(bin, "calls")}'`,
          `if [ -f '${join(bin, `${name}.fails`)}' ]; then cat '${join(bin, `${name}.fails`)}' >&2; exit 32; fi`,
          "",
        ].join("\n"),
      );
      chmodSync(script, 0o755);
    }
  });
  afterAll(() => rmSync(bin, { recursive: true, force: true }));
  beforeEach(() => {
    rmSync(join(bin, "calls"), { force: true });
    failing("mount", undefined);
    failing("umount", undefined);
    covered = [];
    forgotten = [];
    system = {
      tools: () => ({ mount: join(bin, "mount"), umount: join(bin, "umount") }),
      cover: (dir) => {
        covered.push(dir);
        return () => forgotten.push(dir);
      },
    };
  });
  /** The directories this test made (each was covered) that are still there. */
  const leftovers = () => covered.filter((dir) => existsSync(dir));

  it("mounts a tmpfs of the bound on a fresh 0700 directory, with `work` (0700) inside, covered until removed", async () => {
    const made = await makeBoundedDir("ears-bounded-test-a-", { bytes: 8 * MiB, files: 2048 }, false, false, system);
    expect(made.dir.startsWith(join(tmpdir(), "ears-bounded-test-a-"))).toBe(true);
    expect(made).toMatchObject({ work: join(made.dir, "work"), bounded: true, shared: false });
    expect(statSync(made.dir).mode & 0o777).toBe(0o700);
    expect(statSync(made.work).mode & 0o777).toBe(0o700);
    expect(calls()).toEqual([`mount -t tmpfs -o size=8192k,nr_inodes=2048,mode=0700,nosuid,nodev ears-bounded ${made.dir} (HOME=unset)`]);
    expect(covered).toEqual([made.dir]);
    expect(forgotten).toEqual([]);
    const removing = made.remove();
    expect(made.remove()).toBe(removing);
    await removing;
    await made.remove();
    // Detached before anything is removed, once; then gone, and no longer covered.
    expect(calls().slice(1)).toEqual([`umount -l ${made.dir} (HOME=unset)`]);
    expect(existsSync(made.dir)).toBe(false);
    expect(forgotten).toEqual([made.dir]);
  });

  it("makes the mount's propagation shared when asked: private first, then shared", async () => {
    const made = await makeBoundedDir("ears-bounded-test-b-", { bytes: 4 * MiB, files: 1024 }, false, true, system);
    expect(made).toMatchObject({ bounded: true, shared: true });
    const options = "size=4096k,nr_inodes=1024,mode=0700,nosuid,nodev";
    expect(calls()).toEqual([`mount -t tmpfs -o ${options} ears-bounded --make-private --make-shared ${made.dir} (HOME=unset)`]);
    await made.remove();
    expect(calls()[1]).toBe(`umount -l ${made.dir} (HOME=unset)`);
  });

  it("without a bound: nothing is mounted, unless shared is asked for (then the directory is bound onto itself)", async () => {
    const plain = await makeBoundedDir("ears-bounded-test-c-", undefined, false, false, system);
    expect(plain).toMatchObject({ bounded: false, shared: false });
    expect(existsSync(plain.work)).toBe(true);
    await plain.remove();
    expect(calls()).toEqual([]);
    expect(existsSync(plain.dir)).toBe(false);
    expect(forgotten).toEqual([plain.dir]);

    const shared = await makeBoundedDir("ears-bounded-test-c-", undefined, false, true, system);
    expect(shared).toMatchObject({ bounded: false, shared: true });
    expect(calls()).toEqual([`mount --bind ${shared.dir} --make-private --make-shared ${shared.dir} (HOME=unset)`]);
    await shared.remove();
    expect(calls()[1]).toBe(`umount -l ${shared.dir} (HOME=unset)`);
    expect(leftovers()).toEqual([]);
  });

  it("where the host cannot mount: throws why, with nothing left behind, unless it may fall back to a plain directory", async () => {
    failing("mount", "mount: only root can use --types option\nsecond line\n");
    await expect(makeBoundedDir("ears-bounded-test-d-", { bytes: MiB, files: 1024 }, false, false, system)).rejects.toThrow(
      new RegExp(
        "^could not mount a bounded tmpfs on " +
          `${join(tmpdir(), "ears-bounded-test-d-")}\\w+ \\(mount: only root can use --types option\\); ` +
          "the host needs CAP_SYS_ADMIN \\(run it as root\\)$",
      ),
    );
    // Removal is under way when it throws; the directory it made goes, and its cover with it.
    await new Promise((settle) => setTimeout(settle, 50));
    expect(covered).toHaveLength(1);
    expect(leftovers()).toEqual([]);
    expect(forgotten).toEqual(covered);
    expect(calls().filter((call) => call.startsWith("umount"))).toEqual([]);

    const plain = await makeBoundedDir("ears-bounded-test-d-", { bytes: MiB, files: 1024 }, true, true, system);
    expect(plain).toMatchObject({ bounded: false, shared: false });
    expect(existsSync(plain.work)).toBe(true);
    await plain.remove();
    // Nothing was mounted, so nothing is unmounted.
    expect(calls().filter((call) => call.startsWith("umount"))).toEqual([]);
    expect(leftovers()).toEqual([]);

    const unshared = await makeBoundedDir("ears-bounded-test-d-", undefined, false, true, system);
    expect(unshared).toMatchObject({ bounded: false, shared: false });
    await unshared.remove();
    expect(calls().filter((call) => call.startsWith("umount"))).toEqual([]);
  });

  it("says what mount said (its first line), or how it failed when it said nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ears-bounded-test-e-"));
    try {
      failing("mount", "\n  mount: permission denied\nmore\n");
      expect(await mountBounded(dir, { bytes: MiB, files: 1024 }, false, system)).toBe(
        `could not mount a bounded tmpfs on ${dir} (mount: permission denied); the host needs CAP_SYS_ADMIN (run it as root)`,
      );
      failing("mount", "");
      expect(await mountBounded(dir, { bytes: MiB, files: 1024 }, false, system)).toMatch(
        new RegExp(`^could not mount a bounded tmpfs on ${dir} \\(Command failed: ${join(bin, "mount")} -t tmpfs `),
      );
      failing("mount", undefined);
      expect(await mountBounded(dir, { bytes: MiB, files: 1024 }, false, system)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("says why when the mount program cannot be started at all (not a stray null)", async () => {
    const gone: MountSystem = { ...system, tools: () => ({ mount: join(bin, "gone-mount"), umount: join(bin, "gone-umount") }) };
    const dir = mkdtempSync(join(tmpdir(), "ears-bounded-test-h-"));
    try {
      expect(await mountBounded(dir, { bytes: MiB, files: 1024 }, false, gone)).toBe(
        `could not mount a bounded tmpfs on ${dir} (spawn ${join(bin, "gone-mount")} ENOENT); ` +
          "the host needs CAP_SYS_ADMIN (run it as root)",
      );
      expect(await bindMount("/a", "/b", gone)).toBe(`could not bind /a onto /b (spawn ${join(bin, "gone-mount")} ENOENT)`);
      expect(await unmountBounded(dir, gone)).toBe(`could not detach ${dir} (spawn ${join(bin, "gone-umount")} ENOENT)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("binds a session's workspace onto a runner's directory without blocking, and says why when it cannot", async () => {
    expect(await bindMount("/from/workspace", "/onto/work", system)).toBeUndefined();
    expect(calls()).toEqual(["mount --bind /from/workspace /onto/work (HOME=unset)"]);
    failing("mount", "mount: /onto/work: mount point does not exist.\n");
    expect(await bindMount("/from/workspace", "/onto/work", system)).toBe(
      "could not bind /from/workspace onto /onto/work (mount: /onto/work: mount point does not exist.)",
    );
    failing("mount", "");
    expect(await bindMount("/from/workspace", "/onto/work", system)).toMatch(
      new RegExp(`^could not bind /from/workspace onto /onto/work \\(Command failed: ${join(bin, "mount")} --bind `),
    );
  });

  it("unmounts lazily and never rejects: says what umount said when it fails", async () => {
    expect(await unmountBounded("/a/bounded/dir", system)).toBeUndefined();
    failing("umount", "umount: /a/bounded/dir: not mounted.\nsecond line\n");
    await expect(unmountBounded("/a/bounded/dir", system)).resolves.toBe(
      "could not detach /a/bounded/dir (umount: /a/bounded/dir: not mounted.)",
    );
    expect(calls()).toEqual(["umount -l /a/bounded/dir (HOME=unset)", "umount -l /a/bounded/dir (HOME=unset)"]);
  });

  it("without mount programs: says so, falls back where it may, and has nothing to bind or unmount", async () => {
    const none: MountSystem = { ...system, tools: () => "mount and umount (util-linux) are not installed" };
    expect(await mountBounded("/x", { bytes: MiB, files: 1024 }, false, none)).toBe("mount and umount (util-linux) are not installed");
    expect(await bindMount("/a", "/b", none)).toBe("mount and umount (util-linux) are not installed");
    await expect(unmountBounded("/x", none)).resolves.toBeUndefined();
    await expect(makeBoundedDir("ears-bounded-test-f-", { bytes: MiB, files: 1024 }, false, false, none)).rejects.toThrow(
      /^mount and umount \(util-linux\) are not installed$/,
    );
    const plain = await makeBoundedDir("ears-bounded-test-f-", { bytes: MiB, files: 1024 }, true, false, none);
    expect(plain).toMatchObject({ bounded: false, shared: false });
    await plain.remove();
    expect(calls()).toEqual([]);
    await new Promise((settle) => setTimeout(settle, 50));
    expect(leftovers()).toEqual([]);
  });

  it("keeps a directory whose detach failed, covered: what is mounted in it (a session's workspace) is not removed", async () => {
    const helper: MountSystem = {
      ...system,
      helper: () => async (request) => (request.verb === "detach" ? "umount -l: a failure the test made" : undefined),
    };
    failing("umount", "umount: target is busy\n");
    for (const [through, mounts] of [
      ["umount", system],
      ["the helper", helper],
    ] as const) {
      const made = await makeBoundedDir("ears-bounded-test-k-", { bytes: MiB, files: 1024 }, false, true, mounts);
      try {
        // Nothing is mounted here: the file stands for a session's, bound onto `work`, which a detach that
        // did not happen leaves in place.
        writeFileSync(join(made.work, "session.txt"), "the session's");
        await made.remove();
        expect(readFileSync(join(made.work, "session.txt"), "utf8"), through).toBe("the session's");
        expect(forgotten, through).toEqual([]);
      } finally {
        rmSync(made.dir, { recursive: true, force: true });
      }
    }
    expect(calls().filter((call) => call.startsWith("umount"))).toHaveLength(1);
  });

  it("a directory already gone when removed is no longer covered (nothing left for the watchdog)", async () => {
    const made = await makeBoundedDir("ears-bounded-test-j-", undefined, false, false, system);
    rmSync(made.dir, { recursive: true });
    await made.remove();
    expect(forgotten).toEqual([made.dir]);
  });

  it("rejects with what mkdtemp throws, having covered and mounted nothing", async () => {
    await expect(makeBoundedDir("no-such-parent/ears-bounded-test-g-", { bytes: MiB, files: 1024 }, true, false, system)).rejects.toThrow(
      /ENOENT/,
    );
    expect(covered).toEqual([]);
    expect(calls()).toEqual([]);
  });

  it.runIf(existsSync("/usr/bin/mount") || existsSync("/bin/mount"))(
    "finds this machine's mount and umount (util-linux), absolute and executable",
    () => {
      const found = hostMounts.tools();
      expect(found).toEqual({
        mount: expect.stringMatching(/^\/(usr\/)?s?bin\/mount$/),
        umount: expect.stringMatching(/^\/(usr\/)?s?bin\/umount$/),
      });
      expect(hostMounts.tools()).toBe(found);
    },
  );
});
