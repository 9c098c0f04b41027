// Spawns fixture guests as real node processes and reads their stdout as frames, for tests about
// process behaviour (EOF, EPIPE, flush, stdout purity, exit status). Children are tracked so afterEach
// can kill any a failing test left behind.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { decodeFrame, encodeFrame, type Frame, type HostFrame } from "../../src/protocol/frames.js";
import { LineSplitter } from "../../src/wires/line-splitter.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Generous bound for anything a child should do "by itself"; only a hang ever reaches it. */
export const SAFETY_MS = 20_000;

const live = new Set<SpawnedGuest>();

/** Kills every child still running (call from afterEach). */
export function killLeftoverChildren(): void {
  for (const guest of live) guest.kill();
  live.clear();
}

/** Fails with a clear message when the fixtures cannot import the package because dist/ is missing. */
export function requireBuild(): void {
  if (!existsSync(`${ROOT}dist/index.js`))
    throw new Error("dist/index.js is missing: run `npm run build:fast` before the spawned-child tests");
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Rejects with `what` when `promise` has not settled within {@link SAFETY_MS}. */
export function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`safety timeout: ${what} did not happen within ${SAFETY_MS} ms`)), SAFETY_MS);
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

export interface SpawnOptions {
  /** "ignore" connects stdin to /dev/null (input already ended at start). */
  stdin?: "pipe" | "ignore";
  env?: Record<string, string>;
  /** Do not read stdout until `startReading()` is called. */
  paused?: boolean;
}

/** A fixture guest running as a child process. */
export class SpawnedGuest {
  readonly child: ChildProcess;
  /** Every complete stdout line, raw. */
  readonly lines: string[] = [];
  /** Raw stdout bytes. */
  readonly stdoutChunks: Buffer[] = [];
  stderr = "";
  /** Why each stdout line that was not a valid frame was refused (raw bytes on the wire). */
  readonly invalid: string[] = [];
  readonly exit: Promise<Exit>;
  private readonly splitter = new LineSplitter(1 << 30);
  private readonly frames: Frame[] = [];
  private taken = 0;
  private stdoutEnded = false;
  private wake: (() => void) | undefined;

  constructor(fixture: string, options: SpawnOptions = {}) {
    const env = { ...process.env, ...options.env };
    delete env.NODE_OPTIONS; // the test runner's loader flags are not the guest's business
    this.child = spawn(process.execPath, [`${ROOT}fixtures/spawned/${fixture}`], {
      cwd: ROOT,
      env,
      stdio: [options.stdin ?? "pipe", "pipe", "pipe"],
    });
    live.add(this);
    this.exit = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })));
    void this.exit.then(() => live.delete(this));
    this.child.stderr!.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    this.child.stdin?.on("error", () => {}); // the child may be gone when the test writes
    this.child.stdout!.on("end", () => {
      try {
        this.splitter.end();
      } catch (error) {
        this.invalid.push(`${(error as Error).message}`);
      }
      this.stdoutEnded = true;
      this.notify();
    });
    if (options.paused) this.child.stdout!.pause();
    else this.startReading();
  }

  /** Reads stdout as it comes; `pace` delays each next chunk by that many milliseconds (a slow host). */
  startReading(pace = 0): void {
    const stdout = this.child.stdout!;
    stdout.on("data", (chunk: Buffer) => {
      this.stdoutChunks.push(chunk);
      try {
        this.splitter.push(chunk, (line) => {
          this.lines.push(line);
          try {
            this.frames.push(decodeFrame(line));
          } catch (error) {
            this.invalid.push(`${(error as Error).message}`);
          }
        });
      } catch (error) {
        this.invalid.push(`${(error as Error).message}`);
      }
      this.notify();
      if (pace > 0) {
        stdout.pause();
        setTimeout(() => stdout.resume(), pace);
      }
    });
    stdout.resume();
  }

  /** The next frame on stdout, or undefined once stdout ended. */
  async nextFrame(): Promise<Frame | undefined> {
    return within(
      (async () => {
        while (this.taken >= this.frames.length && !this.stdoutEnded) await new Promise<void>((resolve) => (this.wake = resolve));
        return this.taken < this.frames.length ? this.frames[this.taken++] : undefined;
      })(),
      "the next stdout frame",
    );
  }

  /** Every remaining frame until stdout ends. */
  async restFrames(): Promise<Frame[]> {
    const rest: Frame[] = [];
    for (let frame = await this.nextFrame(); frame !== undefined; frame = await this.nextFrame()) rest.push(frame);
    return rest;
  }

  send(frame: HostFrame): void {
    this.child.stdin!.write(`${encodeFrame(frame)}\n`);
  }

  /** Waits for the child to exit on its own. */
  exited(): Promise<Exit> {
    return within(this.exit, "the child's exit");
  }

  /** stderr split into lines, without the final empty one. */
  stderrLines(): string[] {
    return this.stderr.split("\n").filter((line, i, all) => line !== "" || i < all.length - 1);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
