/**
 * Runs every conformance vector in wire/vectors/ against the real `serve`:
 * - over the in-memory pair (frame-level vectors; the pair carries frames, not bytes, and has no size cap),
 * - over `streamWire` on in-process streams (every vector: the byte-level framing of stdio), and
 * - in a spawned child on real stdio (every vector, plus exit status and stderr), as a host in any
 *   language would run it.
 * Frames marked `optional` are required here: they are what this reference implementation writes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { PassThrough, type Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Outcome } from "../../src/protocol/outcome.js";
import { serve, type ServeReport } from "../../src/guest/serve.js";
import { createLinkedPair } from "../../src/wires/memory.js";
import { planSandbox, sandboxRequest, spawnConfined, type ConfinedPlan } from "../../src/host/sandbox/index.js";
import { streamWire } from "../../src/wires/stdio.js";
import { vectorProgram } from "../helpers/vectors/vector-program.mjs";
import { needsBytes, vectorSchema, type ExpectedFrame, type Vector } from "../helpers/vectors/vector-format.js";
import { runtimes } from "../helpers/runtimes.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const vectorFolder = `${root}wire/vectors/`;
const guestScript = fileURLToPath(new URL("../helpers/vectors/vector-guest.mjs", import.meta.url));
/** A guard against hangs only (a failing vector should fail, not time out the suite); never a speed check. */
const HANG_GUARD_MS = 10_000;

const vectorFiles = readdirSync(vectorFolder)
  .filter((file) => file.endsWith(".json"))
  .sort();

function loadVector(file: string): Vector {
  const parsed = vectorSchema.safeParse(JSON.parse(readFileSync(`${vectorFolder}${file}`, "utf8")));
  if (!parsed.success) throw new Error(`wire/vectors/${file} is not a valid vector:\n${parsed.error.message}`);
  return parsed.data;
}

/** The host's view of one guest under test, whatever the transport. */
interface GuestUnderTest {
  /** Writes one host frame line (the newline is the transport's business). */
  sendLine(text: string): void;
  /** Writes raw bytes; only byte-level transports have it. */
  sendBytes?(bytes: Buffer): void;
  /** Ends the host's output: the guest sees end of stream. */
  end(): void;
  /** The next line the guest wrote, or undefined once its output ended. */
  nextLine(): Promise<string | undefined>;
  /** How the session ended: "zero" once a result was written, else "nonzero" with the stderr text. */
  finish(): Promise<{ exit: "zero" | "nonzero"; stderr: string }>;
  /** What the guest wrote to stderr so far, for failure messages. */
  stderrSoFar?(): string;
  dispose(): void;
}

function withHangGuard<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`hang guard: ${what} did not happen within ${HANG_GUARD_MS} ms`)), HANG_GUARD_MS);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

/** How an in-process serve ended, in the terms a process has: exit status and its one stderr line. */
function asExit(report: ServeReport): { exit: "zero" | "nonzero"; stderr: string } {
  return report.status === "completed" ? { exit: "zero", stderr: "" } : { exit: "nonzero", stderr: `ears: ${report.error.message}\n` };
}

/**
 * Cuts a guest's output stream into lines strictly: every line must end with `\n` alone, and the
 * stream must not end mid-line. Anything else is recorded as a framing error and fails the vector.
 */
class GuestOutput {
  private readonly lines: string[] = [];
  private pending = "";
  private ended = false;
  private waiting: ((line: string | undefined) => void) | undefined;
  readonly problems: string[] = [];

  constructor(stream: Readable) {
    stream.setEncoding("utf8");
    stream.on("data", (text: string) => {
      const parts = (this.pending + text).split("\n");
      this.pending = parts.pop()!;
      for (const line of parts) {
        if (line.endsWith("\r")) this.problems.push(`a guest line ends with \\r\\n: ${line}`);
        this.push(line);
      }
    });
    stream.on("end", () => {
      if (this.pending !== "") this.problems.push(`the guest's output ended without a final newline: ${this.pending}`);
      this.ended = true;
      this.waiting?.(undefined);
      this.waiting = undefined;
    });
  }

  private push(line: string): void {
    if (this.waiting !== undefined) {
      const waiting = this.waiting;
      this.waiting = undefined;
      waiting(line);
    } else this.lines.push(line);
  }

  next(): Promise<string | undefined> {
    if (this.lines.length > 0) return Promise.resolve(this.lines.shift());
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

function inMemory(vector: Vector): GuestUnderTest {
  const [guest, host] = createLinkedPair();
  const report = serve({ wire: guest, run: vectorProgram(vector.program, { Outcome }) });
  return {
    // A send the guest can no longer take shows up as a transcript mismatch, so its rejection is not needed.
    sendLine: (text) => void host.send(text).catch(() => {}),
    end: () => host.end(),
    nextLine: () => host.receive(),
    finish: async () => asExit(await report),
    dispose: () => host.close(),
  };
}

function overStreams(vector: Vector): GuestUnderTest & { output: GuestOutput } {
  const input = new PassThrough();
  const output = new PassThrough();
  input.on("error", () => {}); // writes after the guest released its input
  const wire = streamWire({ input, output, maxFrameBytes: vector.guestOptions?.maxFrameBytes });
  const report = serve({ wire, run: vectorProgram(vector.program, { Outcome }) });
  const lines = new GuestOutput(output);
  return {
    output: lines,
    sendLine: (text) => void input.write(`${text}\n`),
    sendBytes: (bytes) => void input.write(bytes),
    end: () => input.end(),
    nextLine: () => lines.next(),
    finish: async () => asExit(await report),
    dispose: () => {
      input.destroy();
      output.destroy();
    },
  };
}

/** runGuest's bubblewrap command for the vector guest: the vectors must pass with the default sandbox on. */
async function sandboxed(file: string): Promise<ConfinedPlan> {
  const plan = await planSandbox(sandboxRequest(true, "vectors"), {
    command: process.execPath,
    args: [guestScript, `${vectorFolder}${file}`],
    cwd: root,
    env: process.env,
  });
  if (plan.kind !== "confined") throw new Error(`no sandbox for the vector guest: ${JSON.stringify(plan)}`);
  return plan;
}

/** The vector guest as a child: under `runtime` (node by default), or as the sandbox's command line. */
function inChild(
  file: string,
  runtime: readonly string[] = [process.execPath],
  sandbox?: ConfinedPlan,
): GuestUnderTest & { output: GuestOutput } {
  const child: ChildProcessWithoutNullStreams =
    sandbox === undefined
      ? spawn(runtime[0]!, [...runtime.slice(1), guestScript, `${vectorFolder}${file}`], { cwd: root })
      : spawnConfined(sandbox, { cwd: root, detached: false });
  child.stdin.on("error", () => {}); // EPIPE once the guest has gone
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const lines = new GuestOutput(child.stdout);
  return {
    output: lines,
    sendLine: (text) => void child.stdin.write(`${text}\n`),
    sendBytes: (bytes) => void child.stdin.write(bytes),
    end: () => child.stdin.end(),
    nextLine: () => lines.next(),
    finish: async () => {
      const code = await withHangGuard(exited, "the guest process exiting on its own");
      return { exit: code === 0 ? "zero" : "nonzero", stderr };
    },
    stderrSoFar: () => stderr,
    dispose: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    },
  };
}

/** Why `line` does not match `expected` (wire/vectors/README.md, "Matching guest frames"), or undefined. */
function mismatch(line: string, expected: ExpectedFrame): string | undefined {
  let actual: unknown;
  try {
    actual = JSON.parse(line);
  } catch {
    return "the guest wrote a line that is not JSON";
  }
  if (!isRecord(actual)) return "the guest wrote JSON that is not an object";
  const got = structuredClone(actual);
  const { optional: _optional, ...want } = structuredClone(expected) as ExpectedFrame & { optional?: boolean };
  if (want.type === "hello") {
    if (got.sdk !== undefined && typeof got.sdk !== "string") return "hello.sdk must be a string";
    delete got.sdk; // informational: not compared
  }
  if (want.type === "log") {
    const problem = takeContent(got, want);
    if (problem !== undefined) return problem;
  }
  if (want.type === "result" && isRecord(got.outcome)) {
    const problem = takeContent(got.outcome, want.outcome);
    if (problem !== undefined) return `outcome ${problem}`;
  }
  return isDeepStrictEqual(got, want) ? undefined : "fields differ";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks `got.content` against `want.contentIncludes` and removes both, so the rest compares exactly. */
function takeContent(got: Record<string, unknown>, want: { content?: string; contentIncludes?: string | string[] }): string | undefined {
  if (want.contentIncludes === undefined) return undefined;
  if (typeof got.content !== "string") return "content must be a string";
  for (const part of [want.contentIncludes].flat()) {
    if (!got.content.includes(part)) return `content does not include ${JSON.stringify(part)}`;
  }
  delete got.content;
  delete want.contentIncludes;
  return undefined;
}

async function run(vector: Vector, guest: GuestUnderTest & { output?: GuestOutput }): Promise<void> {
  const seen: string[] = [];
  const context = () =>
    `${vector.description}\nguest frames so far:\n${seen.map((line) => `  ${line}`).join("\n") || "  (none)"}` +
    (guest.stderrSoFar?.() ? `\nguest stderr:\n${guest.stderrSoFar()}` : "");
  try {
    for (const [index, step] of vector.transcript.entries()) {
      if ("guest" in step) {
        const line = await withHangGuard(guest.nextLine(), `the guest frame of transcript step ${index}`);
        const expected = JSON.stringify(step.guest);
        expect(line, `step ${index}: the guest's output ended, expected ${expected}\n${context()}`).toBeDefined();
        const problem = mismatch(line!, step.guest);
        expect(problem, `step ${index}: expected ${expected}\ngot ${line}\n${context()}`).toBeUndefined();
        seen.push(line!);
      } else if ("host" in step) guest.sendLine(JSON.stringify(step.host));
      else if ("hostLine" in step) guest.sendLine(step.hostLine);
      else if ("hostRaw" in step) guest.sendBytes!(Buffer.from(step.hostRaw, "utf8"));
      else if ("hostHex" in step) guest.sendBytes!(Buffer.from(step.hostHex, "hex"));
      else guest.end();
    }
    const extra = await withHangGuard(guest.nextLine(), "the end of the guest's output");
    expect(extra, `the guest wrote more than the vector expects\n${context()}`).toBeUndefined();
    const { exit, stderr } = await guest.finish();
    expect(exit, `exit status\nstderr: ${stderr}\n${context()}`).toBe(vector.exit);
    if (vector.exit === "zero") expect(stderr, "nothing on stderr after a clean run").toBe("");
    else {
      expect(stderr, "exactly one stderr line, starting with ears:").toMatch(/^ears: [^\n]+\n$/);
      for (const part of vector.stderrIncludes ?? []) expect(stderr).toContain(part);
    }
    expect(guest.output?.problems ?? [], "the guest's output framing").toEqual([]);
  } finally {
    guest.dispose();
  }
}

describe("conformance vectors (wire/vectors)", () => {
  it("are valid vector files, and wire/vectors/README.md lists each one", () => {
    expect(vectorFiles.length).toBeGreaterThan(0);
    const readme = readFileSync(`${vectorFolder}README.md`, "utf8");
    for (const file of vectorFiles) {
      expect(() => loadVector(file)).not.toThrow();
      expect(readme, `README.md does not list ${file}`).toContain(`\`${file}\``);
    }
  });

  it("have a built package to run the child guest against", () => {
    expect(existsSync(`${root}dist/index.js`), "dist/index.js is missing: run `npm run build` first").toBe(true);
  });

  for (const file of vectorFiles) {
    describe(file, () => {
      const vector = loadVector(file);
      if (!needsBytes(vector) && vector.guestOptions?.maxFrameBytes === undefined) {
        it("in memory (createLinkedPair)", () => run(vector, inMemory(vector)));
      }
      it("over streams (streamWire)", () => run(vector, overStreams(vector)));
      it("in a child process on stdio", () => run(vector, inChild(file)));
      it.runIf(process.platform === "linux")("in a child process on stdio, in runGuest's sandbox", async () =>
        run(vector, inChild(file, undefined, await sandboxed(file))),
      );
      // Bun and Deno when installed (test/helpers/runtimes.ts); test/guest/runtimes.test.ts shows them as skipped otherwise.
      for (const runtime of runtimes)
        it(`in a child process on stdio under ${runtime.name}`, () => run(vector, inChild(file, runtime.command)));
    });
  }
});
