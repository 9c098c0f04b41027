/**
 * A pooled session's run reported before its processes are gone (issue 44 item 5): the workspace is sealed
 * (its tmpfs made read-only) at the result, so what the run left running cannot change it after the report;
 * made writable again once they are gone, before the session's next run or operation. Where it cannot be
 * sealed (a file open for writing), or the survey finds something to clean, the run ends only when they are
 * gone, as before. On a root Linux host (sessions mount), with a host process standing in for what the body
 * left: it keeps a directory of the workspace as its working directory and writes when told.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunReport } from "../../../src/host/api/types.js";
import { createSession, type Session } from "../../../src/host/index.js";
import { findMountHelper } from "../../../src/host/workspace/mount-helper.js";
import { sealSession, sessionRun, sessionSettled } from "../../../src/host/workspace/index.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";

failOnUnhandledRejections();

/** Requests to make writable again fail while this is above 0 (one fewer each time). */
const failing = vi.hoisted(() => ({ writable: 0, asked: [] as string[] }));
vi.mock("../../../src/host/workspace/bounded-dir.js", async (original) => {
  const real = await original<typeof import("../../../src/host/workspace/bounded-dir.js")>();
  return {
    ...real,
    sealBounded: (dir: string, readOnly: boolean) => {
      failing.asked.push(readOnly ? "read-only" : "writable");
      if (!readOnly && failing.writable > 0) {
        failing.writable--;
        return Promise.resolve("mount -o remount,rw: a failure the test made");
      }
      return real.sealBounded(dir, readOnly);
    },
  };
});

const canRun = process.platform === "linux" && process.getuid?.() === 0 && findMountHelper() !== undefined;
const sessions: Session[] = [];
const writers: ChildProcessWithoutNullStreams[] = [];
const gates: (() => void)[] = [];
const durables: string[] = [];
afterEach(async () => {
  for (const writer of writers.splice(0)) writer.kill("SIGKILL");
  // A test that failed before ending its run's processes: ended now, or closing its session would wait for them.
  for (const end of gates.splice(0)) end();
  await Promise.all(sessions.splice(0).map((session) => session.close()));
  for (const dir of durables.splice(0)) rmSync(dir, { recursive: true, force: true });
  failing.writable = 0;
  failing.asked.length = 0;
});
const session = async () => {
  const made = await createSession({ mechanism: "mount" });
  sessions.push(made);
  return made;
};

/** A report for the stand-in run: the session passes it through. */
const REPORT = { ok: true } as unknown as RunReport;

/**
 * A host process in `dir` that answers each line: "write NAME" appends to NAME (a new file or not) and says
 * "ok" or the error's code; "hold NAME" opens NAME for appending and keeps it open; "release" closes it.
 */
function writer(dir: string): (line: string) => Promise<string> {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `const fs = require("node:fs"); let held; require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const [verb, name] = line.split(" ");
  try {
    if (verb === "write") fs.appendFileSync(name, "x");
    else if (verb === "hold") held = fs.openSync(name, "a");
    else fs.closeSync(held);
    console.log("ok");
  } catch (error) { console.log(error.code); }
});`,
    ],
    { cwd: dir },
  );
  writers.push(child);
  const answers: ((line: string) => void)[] = [];
  let buffered = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    buffered += text;
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      answers.shift()?.(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
    }
  });
  return (line) =>
    new Promise((answer) => {
      answers.push(answer);
      child.stdin.write(`${line}\n`);
    });
}

/** A promise and its resolve: the end of the stand-in run's processes, at a moment the test chooses. */
function gate(): { gone: Promise<void>; end: () => void; ended: () => boolean } {
  let end!: () => void;
  let done = false;
  const gone = new Promise<void>((resolve) => (end = resolve)).then(() => {
    done = true;
  });
  gates.push(end);
  return { gone, end, ended: () => done };
}

describe.runIf(canRun)("a sealed session's run", () => {
  it("is reported before its processes are gone; nothing they do changes the workspace until they are, then it is writable", async () => {
    const one = await session();
    const ask = writer(one.path);
    expect(await ask("write before")).toBe("ok");
    const { gone, end, ended } = gate();
    const report = await sessionRun(
      one,
      async () => {
        expect(await sealSession(one, gone)).toBe(true);
        return REPORT;
      },
      "test",
    );
    expect(report).toBe(REPORT);
    expect(ended()).toBe(false);
    // Reported, its processes still there: they can neither write, create nor change a mode.
    expect(await ask("write before")).toBe("EROFS");
    expect(await ask("write late")).toBe("EROFS");
    expect(await ask("hold late")).toBe("EROFS");
    expect(readdirSync(one.path)).toEqual(["before"]);
    expect(readFileSync(join(one.path, "before"), "utf8")).toBe("x");
    // The session's next operation waits for them, and then the workspace is writable again.
    const written = one.writeFile("next.txt", "next");
    end();
    await written;
    expect(await ask("write before")).toBe("ok");
    expect(readFileSync(join(one.path, "before"), "utf8")).toBe("xx");
    expect(readdirSync(one.path).sort()).toEqual(["before", "next.txt"]);
  });

  it("a file open for writing keeps it from being sealed: the run ends when its processes are gone, what they wrote kept", async () => {
    const one = await session();
    const ask = writer(one.path);
    expect(await ask("hold log")).toBe("ok");
    const { gone, end, ended } = gate();
    const run = sessionRun(
      one,
      async () => {
        expect(await sealSession(one, gone)).toBe(false);
        // The caller (the run pool) waits for the processes' end now; here the test ends them after a last write.
        expect(await ask("write log")).toBe("ok");
        expect(await ask("release")).toBe("ok");
        end();
        await gone;
        return REPORT;
      },
      "test",
    );
    expect(await run).toBe(REPORT);
    expect(ended()).toBe(true);
    expect(readFileSync(join(one.path, "log"), "utf8")).toBe("x");
    await sessionSettled(one);
    expect(await ask("write log")).toBe("ok");
  });

  it("with something to clean (a link), the clean waits for the processes' end, then removes it", async () => {
    const one = await session();
    const ask = writer(one.path);
    expect(await ask("write kept")).toBe("ok");
    const { gone, end, ended } = gate();
    symlinkSync("/etc/passwd", join(one.path, "link"));
    let sealed!: () => void;
    const sealedNow = new Promise<void>((resolve) => (sealed = resolve));
    const run = sessionRun(
      one,
      async () => {
        expect(await sealSession(one, gone)).toBe(true);
        sealed();
        return REPORT;
      },
      "test",
    );
    // The survey finds the link: the run is not over while the processes are there (the sealed tmpfs cannot be cleaned).
    let over = false;
    void run.then(() => (over = true));
    await sealedNow;
    expect(await ask("write kept")).toBe("EROFS");
    expect(over).toBe(false);
    end();
    expect(await run).toBe(REPORT);
    expect(ended()).toBe(true);
    expect(existsSync(join(one.path, "link"))).toBe(false);
    expect(readdirSync(one.path)).toEqual(["kept"]);
    expect(await ask("write kept")).toBe("ok");
  });

  it("made writable again only on a later try: twice after the end, then before the next operation", async () => {
    const one = await session();
    const ask = writer(one.path);
    failing.writable = 2;
    const { gone, end } = gate();
    await sessionRun(
      one,
      async () => {
        expect(await sealSession(one, gone)).toBe(true);
        return REPORT;
      },
      "test",
    );
    end();
    await sessionSettled(one);
    expect(failing.asked).toEqual(["read-only", "writable", "writable"]);
    expect(await ask("write late")).toBe("EROFS");
    // The next operation tries again first.
    await one.writeFile("next.txt", "next");
    expect(failing.asked).toEqual(["read-only", "writable", "writable", "writable"]);
    expect(await ask("write late")).toBe("ok");
  });

  it("made writable again only by the next run's try, with something to clean: cleaned and written back before that run", async () => {
    const durable = mkdtempSync(join(tmpdir(), "ears-seal-test-durable-"));
    durables.push(durable);
    const one = await createSession({ mechanism: "mount", dir: durable });
    sessions.push(one);
    const ask = writer(one.path);
    failing.writable = 2;
    const { gone, end } = gate();
    const run = sessionRun(
      one,
      async () => {
        // What the run leaves: a file to keep, and a link to remove.
        expect(await ask("write made")).toBe("ok");
        symlinkSync("/etc/passwd", join(one.path, "link"));
        expect(await sealSession(one, gone)).toBe(true);
        return REPORT;
      },
      "test",
    );
    end();
    expect(await run).toBe(REPORT);
    await sessionSettled(one);
    expect(failing.asked).toEqual(["read-only", "writable", "writable"]);
    // Still read-only when it was cleaned: the link could not be removed, and nothing was written back.
    expect(lstatSync(join(one.path, "link")).isSymbolicLink()).toBe(true);
    expect(existsSync(join(durable, "made"))).toBe(false);
    const next = await sessionRun(
      one,
      async () => {
        expect(lstatSync(join(one.path, "link"), { throwIfNoEntry: false })).toBeUndefined();
        expect(readFileSync(join(durable, "made"), "utf8")).toBe("x");
        return REPORT;
      },
      "test",
    );
    expect(next).toBe(REPORT);
    expect(failing.asked).toEqual(["read-only", "writable", "writable", "writable"]);
    expect(await ask("write made")).toBe("ok");
  });

  it("not made writable by the next try either: an operation rejects, a run fails SpawnFailed, saying why; the next tries", async () => {
    const one = await session();
    failing.writable = 4;
    const { gone, end } = gate();
    await sessionRun(
      one,
      async () => {
        expect(await sealSession(one, gone)).toBe(true);
        return REPORT;
      },
      "test",
    );
    end();
    await sessionSettled(one);
    await expect(one.writeFile("next.txt", "next")).rejects.toThrow(
      "session.writeFile: the workspace is read-only since its last run and could not be made writable again " +
        "(mount -o remount,rw: a failure the test made)",
    );
    failing.writable = 2;
    let ran = false;
    const report = await sessionRun(
      one,
      async () => {
        ran = true;
        return REPORT;
      },
      "test",
    );
    expect(ran).toBe(false);
    expect(report).toMatchObject({
      ok: false,
      failure: {
        code: "SpawnFailed",
        message:
          "the session's workspace could not be given to the run, so nothing ran: it is read-only since its last run " +
          "and could not be made writable again (mount -o remount,rw: a failure the test made)",
      },
    });
    // Tried again by the next operation, which then has it writable.
    await one.writeFile("next.txt", "next");
    expect(readFileSync(join(one.path, "next.txt"), "utf8")).toBe("next");
    expect(failing.asked).toEqual(["read-only", ...Array<string>(7).fill("writable")]);
  });
});
