/** Sessions for the tests that run code in them: made, and closed after each test with their pools and directories. */
import { afterEach } from "vitest";
import { createRunPool, createSession, type RunPool, type Session } from "../../src/host/index.js";
import { bwrapPath } from "./has-bwrap.js";
import { makeScratchDir, removeScratchDirs } from "./scratch.js";

/** Whether sessions that mount their workspace run here: Linux, root (to mount the bounded tmpfs) and bubblewrap. */
export const canMountSessions = process.platform === "linux" && process.getuid?.() === 0 && bwrapPath !== undefined;

/** A body that writes its input to notes/a.txt in its workspace and returns the workspace's top entries. */
export const WRITE_NOTE = `const fs = process.getBuiltinModule("node:fs");
fs.mkdirSync("notes", { recursive: true });
fs.writeFileSync("notes/a.txt", input);
return fs.readdirSync(".");`;
/** A body that returns notes/a.txt of its workspace, or the error's code where it cannot (ENOENT: not there). */
export const READ_NOTE = `const fs = process.getBuiltinModule("node:fs");
try { return fs.readFileSync("notes/a.txt", "utf8"); } catch (e) { return e.code; }`;

type SessionOptions = NonNullable<Parameters<typeof createSession>[0]>;

/** What {@link sessionFixtures} gives a test file; everything made through it is closed or removed after each test. */
export interface SessionFixtures {
  /** `createSession` with the file's defaults overridden by `options`. */
  session(options?: SessionOptions): Promise<Session>;
  /** A session made otherwise (`openSession`), closed after the test like the others; returns it. */
  closeAfter(session: Session): Session;
  /** A run pool, `{ size: 1 }` unless given options. */
  pool(options?: Parameters<typeof createRunPool>[0]): RunPool;
  /** A fresh directory under the system's temporary directory, removed with all it holds. */
  scratchDir(): string;
}

/**
 * The session set-up of a test file (call it at the file's top level: it registers an `afterEach`). After each
 * test, its run pools are closed first (so no runner still holds a session's workspace), then its sessions (a
 * second close of one the test closed itself is harmless), then its scratch directories, where durable sessions
 * may have kept their files.
 */
export function sessionFixtures(prefix: string, defaults: SessionOptions = {}): SessionFixtures {
  const sessions: Session[] = [];
  const pools: RunPool[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close()));
    await Promise.all(sessions.splice(0).map((session) => session.close()));
    removeScratchDirs(dirs);
  });
  const closeAfter = (session: Session) => {
    sessions.push(session);
    return session;
  };
  return {
    session: async (options = {}) => closeAfter(await createSession({ ...defaults, ...options })),
    closeAfter,
    pool: (options = { size: 1 }) => {
      const made = createRunPool(options);
      pools.push(made);
      return made;
    },
    scratchDir: () => makeScratchDir(prefix, dirs),
  };
}
