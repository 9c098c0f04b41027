/**
 * The mount helper (native/ears-mount.c): one long-lived process per host that makes the bounded directories'
 * mounts, binds and detaches on request. Each mount through mount(8) or umount(8) costs a fork of the host
 * (Node forks the whole process) and an exec of util-linux's programs, several milliseconds on a small VM; a
 * request to the helper is a write and a line read back on its pipes. A pooled session's run waits for its
 * workspace's bind (code/pool-session.ts), so that fork was on its path (BENCHMARKS.md, "Pooled sessions").
 *
 * The helper is started with the first request and kept, unreferenced (it never keeps the host alive), in a
 * process group of its own (a terminal's Ctrl-C for the host must not end it first); it ends when the host
 * closes its stdin or dies (the kernel closes the pipe, and its parent-death signal). Requests go one at a
 * time in order, so the replies are matched to them by order. A helper that dies fails the requests under way
 * (their mounts may or may not have happened, as a mount(8) that timed out) and the next request starts another.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** How long one request may take before it counts as failing (as mount(8)'s own deadline). */
export const REQUEST_TIMEOUT_MS = 10_000;

/** One mount request: see native/ears-mount.c. */
export type MountRequest =
  | { verb: "tmpfs"; dir: string; data: string; shared: boolean }
  | { verb: "self-bind"; dir: string }
  | { verb: "bind"; source: string; target: string }
  | { verb: "detach"; dir: string }
  | { verb: "read-only"; dir: string }
  | { verb: "writable"; dir: string };

/** Makes mounts: resolves with undefined when done, else why not (the helper's words: "STEP: MESSAGE"). Never rejects. */
export type Mounter = (request: MountRequest) => Promise<string | undefined>;

/** The helper's file name for a Node architecture, or undefined where none is built. */
export function mountHelperName(arch: string = process.arch): string | undefined {
  return arch === "x64" || arch === "arm64" ? `ears-mount-linux-${arch}` : undefined;
}

/** The request's bytes: a verb byte and NUL-ended fields. A field with a NUL byte cannot be sent (undefined). */
export function encodeRequest(request: MountRequest): Buffer | undefined {
  const [verb, fields] =
    request.verb === "tmpfs"
      ? ["t", [request.dir, request.data, request.shared ? "1" : "0"]]
      : request.verb === "self-bind"
        ? ["s", [request.dir]]
        : request.verb === "bind"
          ? ["b", [request.source, request.target]]
          : [{ detach: "u", "read-only": "r", writable: "w" }[request.verb], [request.dir]];
  if (fields.some((field) => field === "" || field.includes("\0"))) return undefined;
  return Buffer.concat([Buffer.from(verb), ...fields.map((field) => Buffer.from(`${field}\0`))]);
}

/**
 * The helper in this package's dist/native/ (this module may be bundled into dist/host or dist/chunks, or run
 * from src/ by the tests), or undefined where there is none (not Linux, another architecture, a build made
 * with EARS_SKIP_NATIVE=1): then the mounts go through mount(8) and umount(8) as before.
 */
export function findMountHelper(arch: string = process.arch): string | undefined {
  const name = mountHelperName(arch);
  if (process.platform !== "linux" || name === undefined) return undefined;
  const here = dirname(fileURLToPath(import.meta.url));
  return [join(here, "../native", name), join(here, "../../../dist/native", name)].find((path) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A request sent and not answered yet. */
interface Pending {
  settle(answer: string | undefined): void;
}

/** One helper process and the requests it has not answered. */
export class MountHelper {
  private child: ChildProcess | undefined;
  private readonly pending: Pending[] = [];
  private buffered = "";

  /** How long a request may go unanswered before the helper is given up (counted from when it is sent). */
  timeoutMs = REQUEST_TIMEOUT_MS;

  /** `path`: the helper program. */
  constructor(private readonly path: string) {}

  /** Sends `request`; resolves with undefined once it is done, else why not. Never rejects. */
  readonly request: Mounter = (request) => {
    const bytes = encodeRequest(request);
    if (bytes === undefined) return Promise.resolve("the mount helper takes no empty path nor one with a NUL byte");
    const child = this.running();
    if (typeof child === "string") return Promise.resolve(child);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // No answer in time: the helper is stuck (a mount hanging in the kernel). Its later replies would be
        // matched to the wrong requests, so it is given up: the requests under way fail, the next starts another.
        this.lost(child, `the mount helper did not answer within ${this.timeoutMs} ms`);
      }, this.timeoutMs);
      // Referenced: a host waiting for a mount stays up for it (the helper's pipes are unreferenced).
      this.pending.push({
        settle: (answer) => {
          clearTimeout(timer);
          resolve(answer);
        },
      });
      child.stdin!.write(bytes);
    });
  };

  /** The helper, started if it is not running; or why it cannot be. */
  private running(): ChildProcess | string {
    if (this.child !== undefined) return this.child;
    let child: ChildProcess;
    try {
      child = spawn(this.path, [], { stdio: ["pipe", "pipe", "ignore"], env: {}, detached: true });
    } catch (error) {
      return `the mount helper could not be started (${(error as Error).message})`;
    }
    const gone = (why: string) => this.lost(child, why);
    child.on("error", (error) => gone(`the mount helper failed (${error.message})`));
    child.on("exit", (code, signal) => gone(`the mount helper ended (${signal ?? `exit code ${String(code)}`})`));
    child.stdin!.on("error", () => {}); // its exit says why
    child.stdout!.setEncoding("utf8").on("data", (text: string) => this.read(text));
    // It never keeps the host alive by itself; a request under way does, by its timer.
    child.unref();
    for (const stream of [child.stdin, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
    this.child = child;
    return child;
  }

  private read(text: string): void {
    this.buffered += text;
    for (let end = this.buffered.indexOf("\n"); end >= 0; end = this.buffered.indexOf("\n")) {
      const line = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 1);
      const answered = this.pending.shift();
      if (answered === undefined) continue; // not reached: the helper answers only what it was asked
      answered.settle(line === "ok" ? undefined : line.replace(/^error /, ""));
    }
  }

  /** The helper `child` is gone or given up: every request under way fails with `why`; the next starts another. */
  private lost(child: ChildProcess, why: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.buffered = "";
    child.kill("SIGKILL");
    for (const waiting of this.pending.splice(0)) waiting.settle(why);
  }
}
