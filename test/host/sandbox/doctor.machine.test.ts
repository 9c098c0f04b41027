/**
 * `ears doctor`'s readers of this machine (`thisMachine`): who the host runs as, `bwrap --version`, a
 * throw-away start, small /proc files. The verdicts built on them are tested on machines given as data
 * (doctor.test.ts); here each reader is checked on real files and stand-in programs in a temporary
 * directory (a shell script that prints its arguments, /bin/false), never on anything of the host's.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { thisMachine } from "../../../src/host/sandbox/doctor.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";

describe.runIf(process.platform === "linux")("ears doctor's readers of this machine", () => {
  let dir: string;
  let echoing: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ears-doctor-"));
    // A stand-in bwrap: says what it was asked, with a trailing newline and a line on stderr as the real one may.
    echoing = join(dir, "bwrap");
    writeFileSync(echoing, '#!/bin/sh\necho "stand-in asked: $*"\necho "noise" >&2\n');
    chmodSync(echoing, 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("says this platform and architecture, and whether the host runs as root", () => {
    const machine = thisMachine();
    expect(machine.platform).toBe(process.platform);
    expect(machine.arch).toBe(process.arch);
    expect(machine.root).toBe(process.getuid!() === 0);
  });

  it("takes bwrap from the lookup: the one found, or why the one installed is unusable", () => {
    expect(thisMachine({ bwrap: "/opt/bwrap" })).toMatchObject({ bwrap: "/opt/bwrap", bwrapUnusable: undefined });
    expect(thisMachine({ unusable: "not executable" })).toMatchObject({ bwrap: undefined, bwrapUnusable: "not executable" });
    expect(thisMachine({ missing: "not installed" })).toMatchObject({ bwrap: undefined, bwrapUnusable: undefined });
  });

  it("asks bwrap for --version alone and keeps its output trimmed; a bwrap that fails or is not there has no version", () => {
    const machine = thisMachine();
    expect(machine.bwrapVersion(echoing)).toBe("stand-in asked: --version");
    expect(machine.bwrapVersion("/bin/false")).toBeUndefined();
    expect(machine.bwrapVersion(join(dir, "absent"))).toBeUndefined();
  });

  it.runIf(bwrapPath !== undefined)("reads the real bubblewrap's version", () => {
    expect(thisMachine().bwrapVersion(bwrapPath!)).toMatch(/^bubblewrap \d+\.\d+(\.\d+)?$/);
  });

  it("tries a throw-away start: a bwrap that cannot start one says why", async () => {
    const problem = await thisMachine().startProblem("/bin/false");
    expect(problem).toBe("bubblewrap is installed but cannot create a sandbox here (exit code 1); run `ears doctor` for the fix");
    expect(await thisMachine().startProblem(join(dir, "absent"))).toMatch(/^bubblewrap could not be started: /);
  });

  it("reads a small file's text trimmed, and undefined for one that cannot be read", () => {
    const file = join(dir, "max_user_namespaces");
    writeFileSync(file, "  15000\n\n");
    expect(thisMachine().proc(file)).toBe("15000");
    expect(thisMachine().proc(join(dir, "absent"))).toBeUndefined();
    expect(thisMachine().proc(dir)).toBeUndefined();
  });
});
