/**
 * The code runner's V8 code cache (src/guest/code-cache.ts): made by the build, used by a runner only for exactly
 * the source it was made from, never written by a runner. The runner is started by hand here, as a real child
 * process started the way a Node host starts it (`node code-runner-cached.cjs`, no flags), from the build in dist/ or from
 * a copy of it that a test alters; and through runCode, sandboxed, for the body that tries to poison the cache.
 */
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { runCode } from "../../../src/host/index.js";
import { codeRunner } from "../../../src/host/code/code-launch.js";
import { cachedDataFor, encodeRunnerCache, runnerCacheFile, RUNNER_MAIN_FILE, RUNNER_START_FILE } from "../../../src/guest/code-cache.js";

/** The cache this Node's V8 takes (the build made it, or `node scripts/runner-cache.mjs` run with this Node). */
const RUNNER_CACHE_FILE = runnerCacheFile(process.versions.v8);
import { encodeBodyFrame, NO_MODULES_HINT } from "../../../src/protocol/code-body.js";
import { failOnUnhandledRejections } from "../../helpers/host.js";
import { bwrapPath } from "../../helpers/has-bwrap.js";
import { within } from "../../helpers/spawned-guest.js";

failOnUnhandledRejections();

const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const SPY = join(dirname(new URL(import.meta.url).pathname), "../../helpers/script-spy.mjs");
const invoke = (allowed: string[]) => JSON.stringify({ type: "invoke", protocol: 1, allowed, input: null });

interface Seen {
  filename: string;
  hadCache: boolean;
  rejected: boolean | undefined;
}

/**
 * Starts `runner` as the host does, with scripts/…'s spy preloaded when `spy` (it records each vm.Script made for
 * the runner proper: whether it was given a cache and whether V8 took it), runs `body` with `add` answered, and
 * resolves with the result frame's outcome, stderr and what the spy saw.
 */
async function runBody(runner: string, body: string, spy = false) {
  const dir = mkdtempSync(join(tmpdir(), "ears-runner-cache-test-"));
  scratch.push(dir);
  const seenFile = join(dir, "seen.json");
  const child = spawn(process.execPath, [...(spy ? ["--import", SPY] : []), runner], {
    cwd: dir,
    stdio: ["pipe", "pipe", "pipe"],
    env: spy ? { EARS_SCRIPT_SPY_OUT: seenFile } : {},
  });
  let err = "";
  let held = "";
  let outcome: Record<string, unknown> | undefined;
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => {
    held += chunk.toString();
    for (let end = held.indexOf("\n"); end >= 0; end = held.indexOf("\n")) {
      const frame = JSON.parse(held.slice(0, end)) as { type: string; id: number; arguments: { a: number; b: number }; outcome: never };
      held = held.slice(end + 1);
      if (frame.type === "hello") child.stdin.write(`${encodeBodyFrame(body)}\n${invoke(["add"])}\n`);
      if (frame.type === "request") {
        const structured = { sum: frame.arguments.a + frame.arguments.b };
        child.stdin.write(`${JSON.stringify({ type: "reply", id: frame.id, outcome: { status: "success", content: "", structured } })}\n`);
      }
      if (frame.type === "result") {
        outcome = frame.outcome;
        child.stdin.end();
      }
    }
  });
  const code = await within(new Promise<number | null>((resolve) => child.once("exit", resolve)), "the runner");
  const seen = spy ? (JSON.parse(readFileSync(seenFile, "utf8")) as Seen[]) : [];
  return { outcome, err, code, seen };
}

/** A copy of the built runner (its start script, the runner proper and its cache) in a directory of its own. */
function copiedRunner(): string {
  const dir = mkdtempSync(join(tmpdir(), "ears-runner-copy-"));
  scratch.push(dir);
  for (const file of [RUNNER_START_FILE, RUNNER_MAIN_FILE, RUNNER_CACHE_FILE]) cpSync(join(dirname(codeRunner()), file), join(dir, file));
  return dir;
}

const ADDS = 'let s = 0;\nfor (let i = 0; i < 3; i++) s += (await ears.call("add", { a: i, b: 1 })).structured.sum;\nreturn s;';

describe("the cache file's format", () => {
  const bytes = fc.uint8Array({ maxLength: 300 });
  it("gives back V8's data for exactly the source it was made from, and nothing for any other source", () => {
    fc.assert(
      fc.property(bytes, fc.uint8Array({ minLength: 1, maxLength: 300 }), bytes, (source, data, other) => {
        const file = encodeRunnerCache(source, data);
        expect(cachedDataFor(file, Buffer.from(source))).toEqual(Buffer.from(data));
        if (!Buffer.from(other).equals(Buffer.from(source))) expect(cachedDataFor(file, Buffer.from(other))).toBeUndefined();
      }),
      { seed: 3303, numRuns: 300 },
    );
  });

  it("gives nothing for a source of the same length that differs in one byte (what V8's own check lets through)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (source, at, flip) => {
        const edited = Buffer.from(source);
        const i = at % edited.length;
        edited[i] = edited[i]! ^ flip;
        expect(cachedDataFor(encodeRunnerCache(source, Buffer.from([1, 2, 3])), edited)).toBeUndefined();
      }),
      { seed: 3304, numRuns: 300 },
    );
  });

  it("gives nothing for no file, a cut-off file, a file with no data, or another format", () => {
    const source = Buffer.from("source text");
    const file = encodeRunnerCache(source, Buffer.from("v8 data"));
    expect(cachedDataFor(undefined, source)).toBeUndefined();
    for (let length = 0; length < file.length - "v8 data".length + 1; length++) {
      expect(cachedDataFor(file.subarray(0, length), source)).toBeUndefined();
    }
    const otherMagic = Buffer.from(file);
    otherMagic[0] = otherMagic[0]! ^ 1;
    expect(cachedDataFor(otherMagic, source)).toBeUndefined();
    const otherLength = Buffer.from(file);
    const lengthAt = otherLength.indexOf("\n") + 1;
    otherLength[lengthAt] = otherLength[lengthAt]! ^ 1;
    expect(cachedDataFor(otherLength, source)).toBeUndefined();
  });
});

describe("the runner with its cache", () => {
  it("is started from the build's cache, which this Node takes as the host starts the runner", async () => {
    const { outcome, err, code, seen } = await runBody(codeRunner(), ADDS, true);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(outcome).toMatchObject({ status: "success", structured: 6 });
    expect(seen).toEqual([{ filename: join(dirname(codeRunner()), RUNNER_MAIN_FILE), hadCache: true, rejected: false }]);
  });

  it("runs the source on disk, not the cached one, when the source was edited in place to the same length", async () => {
    const dir = copiedRunner();
    const main = join(dir, RUNNER_MAIN_FILE);
    const source = readFileSync(main, "utf8");
    // A message the runner builds from a literal of its top-level code, which the cache holds compiled.
    const said = "cannot import or require modules";
    expect(NO_MODULES_HINT).toContain(said);
    expect(source.split(said)).toHaveLength(2);
    const edited = said.toUpperCase();
    writeFileSync(main, source.replace(said, edited));
    const { outcome, err, seen } = await runBody(join(dir, RUNNER_START_FILE), 'require("node:fs");', true);
    expect(err).toBe("");
    expect(outcome).toMatchObject({ status: "failure" });
    expect(String(outcome?.content)).toContain(edited);
    expect(seen).toEqual([{ filename: main, hadCache: false, rejected: undefined }]);
  });

  it("runs as it would without a cache when the cache is missing, or holds data V8 refuses", async () => {
    const missing = copiedRunner();
    rmSync(join(missing, RUNNER_CACHE_FILE));
    const garbage = copiedRunner();
    writeFileSync(
      join(garbage, RUNNER_CACHE_FILE),
      encodeRunnerCache(readFileSync(join(garbage, RUNNER_MAIN_FILE)), Buffer.from("not what V8 writes".repeat(40))),
    );
    const [withoutCache, withGarbage] = await Promise.all([
      runBody(join(missing, RUNNER_START_FILE), ADDS, true),
      runBody(join(garbage, RUNNER_START_FILE), ADDS, true),
    ]);
    expect(withoutCache).toMatchObject({ code: 0, err: "", outcome: { status: "success", structured: 6 } });
    expect(withoutCache.seen).toMatchObject([{ hadCache: false }]);
    expect(withGarbage).toMatchObject({ code: 0, err: "", outcome: { status: "success", structured: 6 } });
    expect(withGarbage.seen).toMatchObject([{ hadCache: true, rejected: true }]);
  });
});

describe("a cache per V8", () => {
  it("a runner never reads a cache another V8 made: with only another Node's cache beside it, it compiles as without one", async () => {
    const dir = copiedRunner();
    const ours = readFileSync(join(dir, RUNNER_CACHE_FILE));
    rmSync(join(dir, RUNNER_CACHE_FILE));
    // Our V8's data under another V8's name: were it read, V8 would take it (hadCache true, rejected false).
    writeFileSync(join(dir, runnerCacheFile(`${process.versions.v8}-other`)), ours);
    const { outcome, err, seen } = await runBody(join(dir, RUNNER_START_FILE), ADDS, true);
    expect({ err, outcome }).toMatchObject({ err: "", outcome: { status: "success", structured: 6 } });
    expect(seen).toMatchObject([{ hadCache: false }]);
  });

  it("names a cache by its V8 version, in characters any file system takes", () => {
    expect(runnerCacheFile("13.6.233.17-node.63")).toBe("code-runner.v8-13.6.233.17-node.63.cache");
    expect(runnerCacheFile("1.2/../x y")).toBe("code-runner.v8-1.2_.._x_y.cache");
    expect(runnerCacheFile("a")).not.toBe(runnerCacheFile("b"));
  });
});

describe.runIf(bwrapPath !== undefined && process.getuid?.() === 0)("a body and the cache", () => {
  it("a sandboxed runner takes the cache too: the sandbox shows it beside the runner", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ears-runner-cache-spy-"));
    scratch.push(dir);
    const spy = join(dir, "script-spy.mjs");
    cpSync(SPY, spy);
    const seenFile = join(dir, "seen.json");
    const report = await runCode({
      code: ADDS,
      capabilities: { add: (args) => ({ sum: (args as { a: number; b: number }).a + (args as { a: number; b: number }).b }) },
      // --import is Node's option, not V8's: the cache's flag check is not affected by it.
      env: { NODE_OPTIONS: `--import ${spy}`, EARS_SCRIPT_SPY_OUT: seenFile },
      sandbox: { readable: [dir], writable: [dir], env: ["NODE_OPTIONS", "EARS_SCRIPT_SPY_OUT"] },
    });
    expect(report).toMatchObject({ ok: true, outcome: { structured: 6 } });
    expect(report.sandbox?.mechanism).toBe("bubblewrap");
    expect(JSON.parse(readFileSync(seenFile, "utf8"))).toEqual([
      { filename: join(dirname(codeRunner()), RUNNER_MAIN_FILE), hadCache: true, rejected: false },
    ]);
  });

  it("cannot overwrite the cache every later runner loads: dist/ is read-only in the sandbox", async () => {
    const cache = join(dirname(codeRunner()), RUNNER_CACHE_FILE);
    const before = readFileSync(cache);
    const report = await runCode({
      sandbox: true,
      code: `const fs = process.getBuiltinModule("node:fs");
try { fs.writeFileSync(${JSON.stringify(cache)}, "poisoned"); return "written"; } catch (error) { return String(error.code); }`,
    });
    expect(report.ok).toBe(true);
    expect(report.outcome?.structured).toMatch(/^(EROFS|EACCES|EPERM)$/);
    expect(readFileSync(cache).equals(before)).toBe(true);
  });
});

describe("the runner a host starts", () => {
  it("is the start script under Node, beside the runner proper a Deno or Bun host starts (host-runtimes.test.ts)", () => {
    expect(codeRunner()).toBe(join(dirname(codeRunner()), RUNNER_START_FILE));
    for (const file of [RUNNER_MAIN_FILE, RUNNER_CACHE_FILE])
      expect(readFileSync(join(dirname(codeRunner()), file)).length).toBeGreaterThan(0);
  });
});
