/**
 * Where a code tool keeps a paused run's token while it waits for a person (docs/frameworks.md,
 * "Approvals"): on the host, by its `resumeId`, never in the model's context. {@link memoryStore} for one
 * process, {@link fileStore} for another process of the same machine (a worker that restarts); any object
 * with `get`, `set` and `delete` (a database table) works too.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** A paused run's token by its resume id. */
export interface ApprovalStore {
  /** The token stored under `id`, or undefined. */
  get(id: string): Promise<string | undefined>;
  set(id: string, token: string): Promise<void>;
  /** Removes `id`; a missing one is not an error. */
  delete(id: string): Promise<void>;
}

/** A store in this process's memory (the default): lost with the process. */
export function memoryStore(): ApprovalStore {
  const tokens = new Map<string, string>();
  return {
    get: async (id) => tokens.get(id),
    set: async (id, token) => void tokens.set(id, token),
    delete: async (id) => void tokens.delete(id),
  };
}

/**
 * A store in a directory (made 0700 when missing), for the processes of one machine: one file (0600) per
 * token, named by the SHA-256 of its id, written whole to a temporary name and renamed into place, so a
 * reader never sees half a token.
 */
export function fileStore(dir: string): ApprovalStore {
  if (typeof dir !== "string" || dir === "") throw new TypeError("fileStore: dir must be a non-empty path of a directory");
  const path = (id: string) => join(dir, `${createHash("sha256").update(id).digest("hex")}.token`);
  let made: Promise<unknown> | undefined;
  return {
    async get(id) {
      try {
        return await readFile(path(id), "utf8");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
    },
    async set(id, token) {
      made ??= mkdir(dir, { recursive: true, mode: 0o700 });
      await made;
      const temporary = join(dir, `.${randomBytes(8).toString("hex")}.tmp`);
      await writeFile(temporary, token, { mode: 0o600, flag: "wx" });
      await rename(temporary, path(id));
    },
    async delete(id) {
      await rm(path(id), { force: true });
    },
  };
}

/** @internal Whether `value` has a store's three functions. */
export function isStore(value: unknown): value is ApprovalStore {
  const v = value as Partial<ApprovalStore> | null;
  return (
    typeof v === "object" && v !== null && typeof v.get === "function" && typeof v.set === "function" && typeof v.delete === "function"
  );
}
