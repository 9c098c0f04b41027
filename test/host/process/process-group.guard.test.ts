/**
 * A sandboxed run's signals go to the session inside the sandbox, whose leader is read from /proc's children
 * lists; whatever that read gives, the host never signals group 0 (kill(0) is its own group) or -1 (every
 * process): a Stryker mutant of process-tree.ts that let an empty word through as pid 0 killed the mutation
 * runner's own process group this way. The children list is mocked and `process.kill` only records, so this
 * test signals nothing at all.
 */
import { EventEmitter } from "node:events";
import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it, vi } from "vitest";

const children = vi.hoisted(() => ({ list: [] as number[] | undefined }));
vi.mock("../../../src/host/limits/process-tree.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../../src/host/limits/process-tree.js")>()),
  childrenOf: () => children.list,
}));
const { ProcessGroup } = await import("../../../src/host/process/process-group.js");

afterEach(() => vi.restoreAllMocks());

/** A stand-in for bubblewrap's process: a pid no test process has, and a kill that records. */
const bwrap = (pid: number) => Object.assign(new EventEmitter(), { pid, kill: vi.fn(() => true) }) as unknown as ChildProcess;

describe.runIf(process.platform === "linux")("signalling a sandboxed run", () => {
  it("goes to the sandbox's session when its init is known, else to bubblewrap's group; never to group 0 or -1", () => {
    const sent: [number, string | number | undefined][] = [];
    vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
      sent.push([pid, signal]);
      return true;
    });
    const outer = 999_999_001;
    for (const [init, expected] of [
      [[4242], -4242],
      [[0], -outer],
      [[1], -outer],
      [[-1], -outer],
      [[Number.NaN], -outer],
      [[], -outer],
      [undefined, -outer],
    ] as const) {
      sent.length = 0;
      children.list = init === undefined ? undefined : [...init];
      new ProcessGroup(bwrap(outer), "bubblewrap").signal("SIGTERM");
      expect(sent, JSON.stringify(init)).toEqual([[expected, "SIGTERM"]]);
      sent.length = 0;
      new ProcessGroup(bwrap(outer), "bubblewrap").endNow();
      expect(sent, JSON.stringify(init)).toEqual([[expected, "SIGKILL"]]);
    }
  });

  it("under Landlock, SIGKILL too goes to the guest's session; with none to signal, the helper is told SIGTERM, never SIGKILLed", () => {
    const sent: [number, string | number | undefined][] = [];
    vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
      sent.push([pid, signal]);
      return true;
    });
    const helper = 999_999_002;
    for (const [init, inside] of [
      [[4242], true],
      [[0], false],
      [[], false],
      [undefined, false],
    ] as const) {
      children.list = init === undefined ? undefined : [...init];
      for (const act of ["signal", "endNow"] as const) {
        sent.length = 0;
        const group = new ProcessGroup(bwrap(helper), "landlock");
        if (act === "signal") group.signal("SIGKILL");
        else group.endNow();
        expect(sent, `${act} ${JSON.stringify(init)}`).toEqual([inside ? [-4242, "SIGKILL"] : [-helper, "SIGTERM"]]);
      }
      sent.length = 0;
      new ProcessGroup(bwrap(helper), "landlock").signal("SIGTERM");
      expect(sent).toEqual([inside ? [-4242, "SIGTERM"] : [-helper, "SIGTERM"]]);
    }
  });
});
