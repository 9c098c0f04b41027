import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Permits } from "../../src/cli/permits.js";

/** A task the test finishes by hand, recording when it started. */
function manualTask(started: number[], id: number) {
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<number>((resolve, reject) => {
    finish = () => resolve(id);
    fail = reject;
  });
  return { task: () => (started.push(id), done), finish: () => finish(), fail: (error: Error) => fail(error) };
}

const settle = () => new Promise((wake) => setImmediate(wake));

describe("Permits", () => {
  it("never runs more than its size at once, keeps that many running while tasks wait, and starts them in order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.array(fc.nat(), { minLength: 1, maxLength: 12 }), async (size, picks) => {
        const permits = new Permits(size);
        const started: number[] = [];
        const tasks = picks.map((_, id) => manualTask(started, id));
        const results = tasks.map((t) => permits.run(t.task));
        const finished = new Set<number>();
        for (const pick of picks) {
          await settle();
          const running = started.filter((id) => !finished.has(id));
          expect(running.length).toBe(Math.min(size, tasks.length - finished.size));
          // Finish one of the running tasks, chosen by the generated pick.
          const id = running[pick % running.length]!;
          tasks[id]!.finish();
          finished.add(id);
        }
        expect(started).toEqual(tasks.map((_, id) => id));
        expect(await Promise.all(results)).toEqual(tasks.map((_, id) => id));
      }),
      { seed: 1302, numRuns: 60 },
    );
  });

  it("releases the permit when a task rejects", async () => {
    const permits = new Permits(1);
    const started: number[] = [];
    const first = manualTask(started, 0);
    const second = manualTask(started, 1);
    const firstResult = permits.run(first.task);
    const secondResult = permits.run(second.task);
    await settle();
    expect(started).toEqual([0]);
    first.fail(new Error("boom"));
    await expect(firstResult).rejects.toThrow("boom");
    await settle();
    expect(started).toEqual([0, 1]);
    second.finish();
    expect(await secondResult).toBe(1);
  });

  it("drops a waiting task whose signal aborts, with the signal's reason, and never runs it", async () => {
    const permits = new Permits(1);
    const started: number[] = [];
    const first = manualTask(started, 0);
    const waiting = manualTask(started, 1);
    const third = manualTask(started, 2);
    const abort = new AbortController();
    const firstResult = permits.run(first.task);
    const waitingResult = permits.run(waiting.task, abort.signal);
    const thirdResult = permits.run(third.task);
    expect(permits.waiting).toBe(2);
    abort.abort(new Error("deadline"));
    await expect(waitingResult).rejects.toThrow("deadline");
    expect(permits.waiting).toBe(1);
    first.finish();
    await firstResult;
    await settle();
    expect(started).toEqual([0, 2]);
    third.finish();
    expect(await thirdResult).toBe(2);
    await settle();
    expect(started).toEqual([0, 2]);
  });

  it("refuses at once when the signal is already aborted", async () => {
    const permits = new Permits(2);
    let ran = false;
    await expect(permits.run(async () => (ran = true), AbortSignal.abort(new Error("too late")))).rejects.toThrow("too late");
    expect(ran).toBe(false);
  });

  it("refuses a size that is not a positive integer", () => {
    for (const size of [0, -1, 1.5, Number.NaN]) expect(() => new Permits(size)).toThrow(RangeError);
  });
});
