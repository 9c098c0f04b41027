/**
 * Resume once (docs/approvals.md, "Resume once"): a ledger records which paused runs were resumed, so a
 * token, or a code tool's pending run, is claimed before anything of its resume runs and a second claim is
 * refused. One ledger per scope the resumes can come from: {@link memoryLedger} for one process,
 * {@link fileLedger} for the processes of one machine, {@link redisLedger} for many hosts sharing a Redis.
 */
import { createHash } from "node:crypto";
import { mkdir, open } from "node:fs/promises";
import { join } from "node:path";

/**
 * Where resumes are claimed. `claim(id)` resolves `true` for the first claim of `id` and `false` for
 * every later one, also when two claims race (the claim must be atomic where the ledger is shared); it
 * rejects when the ledger cannot say (then nothing is resumed).
 */
export interface ApprovalLedger {
  claim(id: string): Promise<boolean>;
}

/**
 * A ledger in this process's memory: a resume in this process is claimed once. Lost with the process, and
 * not seen by another: for a token that may be resumed from another process, use {@link fileLedger} or
 * {@link redisLedger}. Each claim keeps its id (a few dozen bytes) for the life of the ledger.
 */
export function memoryLedger(): ApprovalLedger {
  const claimed = new Set<string>();
  return {
    claim(id) {
      try {
        checkId(id, "memoryLedger");
      } catch (error) {
        return Promise.reject(error);
      }
      if (claimed.has(id)) return Promise.resolve(false);
      claimed.add(id);
      return Promise.resolve(true);
    },
  };
}

/**
 * A ledger in a directory, for the processes of one machine (or one file system that honours exclusive
 * create: a local disk, not NFSv2): each claim creates a file named by the SHA-256 of the id with
 * `O_CREAT | O_EXCL`, which exactly one of any number of racing claims gets. The directory is made (mode
 * 0700) when missing. Claim files are small and never removed by ears: delete old ones (by mtime) once
 * the tokens they name can no longer be presented.
 */
export function fileLedger(dir: string): ApprovalLedger {
  if (typeof dir !== "string" || dir === "") throw new TypeError("fileLedger: dir must be a non-empty path of a directory");
  let made: Promise<unknown> | undefined;
  return {
    async claim(id) {
      checkId(id, "fileLedger");
      made ??= mkdir(dir, { recursive: true, mode: 0o700 });
      await made;
      let handle;
      try {
        handle = await open(join(dir, `${digest(id)}.claim`), "wx", 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw new Error(`fileLedger: cannot claim in ${dir}: ${(error as Error).message}`, { cause: error });
      }
      try {
        await handle.writeFile(`${JSON.stringify({ id, claimedAt: new Date().toISOString(), pid: process.pid })}\n`);
      } finally {
        await handle.close();
      }
      return true;
    },
  };
}

/**
 * What {@link redisLedger} needs of a Redis client: node-redis's `sendCommand` (the `redis` package, v4
 * and later) or ioredis's `call`. Either sends one command and resolves with its reply.
 */
export type RedisLedgerClient =
  { sendCommand(args: string[]): Promise<unknown> } | { call(command: string, ...args: string[]): Promise<unknown> };

/** Options of {@link redisLedger}. */
export interface RedisLedgerOptions {
  /** Prefix of the keys claims are stored under, default "ears:resumed:". */
  prefix?: string;
  /**
   * How long Redis keeps a claim, in milliseconds, default 30 days. A token presented after its claim
   * expired could be resumed again: keep it longer than any token of yours stays where it can be presented.
   */
  ttlMs?: number;
}

/** Default {@link RedisLedgerOptions.ttlMs}: 30 days. */
export const DEFAULT_REDIS_LEDGER_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * A ledger on Redis, for many hosts: each claim is one `SET key value NX PX ttl`, which Redis runs
 * atomically, so exactly one of any number of racing claims (from any host) sets the key. `client` is a
 * connected client of the `redis` package (node-redis) or of `ioredis`; the caller connects and closes it.
 * A reply Redis gives for no claim (an error, a lost connection) rejects: nothing is resumed then.
 *
 * @example
 * import { createClient } from "redis";
 * const client = await createClient({ url: process.env.REDIS_URL }).connect();
 * const ledger = redisLedger(client);
 */
export function redisLedger(client: RedisLedgerClient, options: RedisLedgerOptions = {}): ApprovalLedger {
  if (typeof options !== "object" || options === null) throw new TypeError("redisLedger: options must be an object { prefix?, ttlMs? }");
  const { prefix = "ears:resumed:", ttlMs = DEFAULT_REDIS_LEDGER_TTL_MS } = options;
  if (typeof prefix !== "string") throw new TypeError("redisLedger: options.prefix must be a string");
  if (!(Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
    throw new RangeError(`redisLedger: options.ttlMs must be a positive whole number of milliseconds, got ${String(ttlMs)}`);
  }
  const send = commandOf(client);
  return {
    async claim(id) {
      checkId(id, "redisLedger");
      const value = JSON.stringify({ claimedAt: new Date().toISOString(), pid: process.pid });
      const reply = await send(["SET", `${prefix}${id}`, value, "NX", "PX", String(ttlMs)]);
      if (reply === "OK") return true;
      if (reply === null || reply === undefined) return false;
      throw new Error(`redisLedger: SET NX answered ${JSON.stringify(reply)}, not "OK" or nil`);
    },
  };
}

function commandOf(client: unknown): (args: string[]) => Promise<unknown> {
  const c = client as { sendCommand?: unknown; call?: unknown } | null;
  if (typeof c === "object" && c !== null) {
    if (typeof c.sendCommand === "function") return (args) => (c as { sendCommand(args: string[]): Promise<unknown> }).sendCommand(args);
    if (typeof c.call === "function") {
      return ([command, ...args]) => (c as { call(command: string, ...args: string[]): Promise<unknown> }).call(command!, ...args);
    }
  }
  throw new TypeError("redisLedger: client must be a connected Redis client: node-redis (sendCommand) or ioredis (call)");
}

function checkId(id: unknown, caller: string): void {
  if (typeof id !== "string" || id === "") throw new TypeError(`${caller}: a claim's id must be a non-empty string`);
}

function digest(id: string): string {
  return createHash("sha256").update(id).digest("hex");
}

/** @internal Checks an `approval.ledger` option: an object with a `claim` function. */
export function checkLedger(ledger: unknown, caller: string): ApprovalLedger | undefined {
  if (ledger === undefined) return undefined;
  if (typeof ledger !== "object" || ledger === null || typeof (ledger as { claim?: unknown }).claim !== "function") {
    throw new TypeError(`${caller}: options.approval.ledger must be a ledger (memoryLedger(), fileLedger(dir), redisLedger(client))`);
  }
  return ledger as ApprovalLedger;
}
